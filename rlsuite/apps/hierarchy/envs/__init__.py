"""Envs of the hierarchy app, registered by id (nothing else happens at import)."""

from rlsuite.platform.envs import register

register(
    "rlsuite/Addition-v0",
    "rlsuite.apps.hierarchy.envs.addition:AdditionEnv",
    default_config={"length": 10},
    description="long-hand addition on 4 tapes with 4 pointers (NPI/PHP)",
)
register(
    "rlsuite/Sort-v0",
    "rlsuite.apps.hierarchy.envs.sort:SortEnv",
    default_config={"length": 10},
    description="bubble sort of a digit array with three pointers and a swap (NPI)",
)
register(
    "rlsuite/PickPlace-v0",
    "rlsuite.apps.hierarchy.robot.env:PickPlaceEnv",
    description="Franka Panda tasks over PICK / PLACE: pick_place, stack, sort, tower, clear_then_place (pybullet)",
)
