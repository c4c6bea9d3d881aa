"""The traffic app's environments, registered with the platform by id.

Importing this module only registers ids (no SUMO is started, nothing is checked).
"""

from rlsuite.platform import envs as _envs

_ONE_SUMO = 1
"""libsumo runs one simulation per process (``max_envs_per_process``); the envs with a
``vector_entry_point`` step N copies in ONE simulation instead (RLlib's
``num_envs_per_env_runner``)."""

ENVS = {
    "rlsuite/Ring-v0": {
        "entry_point": ".ring:RingEnv",
        "max_envs_per_process": _ONE_SUMO,
        "vector_entry_point": ".ring_vector:RingVectorEnv",
        "description": "Sugiyama ring, 22 vehicles, one AV damping the stop-and-go wave (SUMO)",
    },
    "rlsuite/RingMulti-v0": {
        "entry_point": ".ring_multi:RingMultiEnv",
        "multi_agent": True,
        "default_config": {"num_avs": 3},
        "max_envs_per_process": _ONE_SUMO,
        "description": "the ring with k AVs, one agent each (PettingZoo parallel)",
    },
    "rlsuite/Signals-v0": {
        "entry_point": ".signals:make_env",
        "multi_agent": True,
        "description": "signalised intersections (sumo-rl's, RESCO's eight maps or your own "
        "network), one agent per traffic light",
    },
    "rlsuite/SignalsShared-v0": {
        # each light of the network one sub-env of ONE vector env (one simulation), so a
        # shared policy samples through RLlib's single-agent runner, not its multi-agent one
        "entry_point": ".signals_vector:OneLightEnv",
        "max_envs_per_process": _ONE_SUMO,
        "vector_entry_point": ".signals_vector:SignalsVectorEnv",
        "vector_size": ".signals_vector:num_lights",
        "description": "RESCO's signals under one shared policy: the lights of a network as one "
        "vector env (num_envs_per_env_runner = its lights)",
    },
    "rlsuite/FigureEight-v0": {
        "entry_point": ".figure_eight:FigureEightEnv",
        "max_envs_per_process": _ONE_SUMO,
        "description": "Flow's figure-eight (loopy intersection), 13 humans + 1 AV by default",
    },
    "rlsuite/FigureEightMulti-v0": {
        "entry_point": ".figure_eight_multi:FigureEightMultiEnv",
        "multi_agent": True,
        "default_config": {"num_avs": 7},
        "max_envs_per_process": _ONE_SUMO,
        "description": "Flow's figure-eight with k AVs (default 7 of 14), one agent each "
        "(PettingZoo parallel)",
    },
    "rlsuite/Ring2Lane-v0": {
        "entry_point": ".ring_2lane:Ring2LaneEnv",
        "max_envs_per_process": _ONE_SUMO,
        "vector_entry_point": ".ring_2lane_vector:Ring2LaneVectorEnv",
        "description": "two-lane ring (230 m, 41 humans + 1 AV that accelerates and changes lanes)",
    },
    "rlsuite/MergeMulti-v0": {
        "entry_point": ".merge:MergeMultiEnv",
        "multi_agent": True,
        "max_envs_per_process": _ONE_SUMO,
        "description": "Flow's merge (highway + on-ramp, 10% AVs), one agent per AV on the road "
        "(PettingZoo parallel)",
    },
    "rlsuite/Merge-v0": {
        "entry_point": ".merge:MergeEnv",
        "max_envs_per_process": _ONE_SUMO,
        "vector_entry_point": ".merge_vector:MergeVectorEnv",
        "description": "Flow's merge under one centralised policy for up to num_rl AVs "
        "(Flow's MergePOEnv)",
    },
    "rlsuite/Bottleneck-v0": {
        "entry_point": ".bottleneck:BottleneckEnv",
        "max_envs_per_process": _ONE_SUMO,
        "description": "Flow's bottleneck0 (4 -> 2 -> 1 lanes, 1900 veh/h, 10% AVs): one "
        "controller sets the AVs' speed limits per lane-segment",
    },
}
"""The traffic envs, by id (the keywords of :func:`rlsuite.platform.envs.register`)."""

_envs.register_table(__name__, ENVS)
