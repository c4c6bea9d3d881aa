"""Envs of the hierarchy app, registered by id (nothing else happens at import)."""

from rlsuite.platform.envs import register_table

ENVS = {
    "rlsuite/Addition-v0": {
        "entry_point": ".addition:AdditionEnv",
        "default_config": {"length": 10},
        "description": "long-hand addition on 4 tapes with 4 pointers (NPI/PHP)",
    },
    "rlsuite/Sort-v0": {
        "entry_point": ".sort:SortEnv",
        "default_config": {"length": 10},
        "description": "bubble sort of a digit array with three pointers and a swap (NPI)",
    },
    "rlsuite/PickPlace-v0": {
        "entry_point": "rlsuite.apps.hierarchy.robot.env:PickPlaceEnv",
        "description": "Franka Panda tasks over PICK / PLACE: pick_place, stack, sort, tower, "
        "clear_then_place (pybullet)",
    },
    "rlsuite/PandaGrasp-v0": {
        "entry_point": "rlsuite.apps.hierarchy.robot.grasp:PandaGraspEnv",
        "description": "one top-down grasp of a random pybullet object by a Panda; held-out "
        "objects with objects='test' (object-pose observations; pybullet)",
    },
}
"""The hierarchy envs, by id (the keywords of :func:`rlsuite.platform.envs.register`)."""

register_table(__name__, ENVS)
