"""The traffic app's environments, registered with the platform by id.

Importing this module only registers ids (no SUMO is started, nothing is checked).
"""

from rlsuite.platform import envs as _envs

_envs.register(
    "rlsuite/Ring-v0",
    "rlsuite.apps.traffic.envs.ring:RingEnv",
    default_config={},
    max_envs_per_process=1,  # libsumo: one simulation per process
    # ...so RLlib's runners step N rings in ONE simulation instead (num_envs_per_env_runner).
    vector_entry_point="rlsuite.apps.traffic.envs.ring_vector:RingVectorEnv",
    description="Sugiyama ring, 22 vehicles, one AV damping the stop-and-go wave (SUMO)",
)

_envs.register(
    "rlsuite/RingMulti-v0",
    "rlsuite.apps.traffic.envs.ring_multi:RingMultiEnv",
    multi_agent=True,
    default_config={"num_avs": 3},
    max_envs_per_process=1,
    description="the ring with k AVs, one agent each (PettingZoo parallel)",
)

_envs.register(
    "rlsuite/Signals-v0",
    "rlsuite.apps.traffic.envs.signals:make_env",
    multi_agent=True,
    default_config={},
    description="signalised intersections (sumo-rl's, RESCO's eight maps or your own network), "
    "one agent per traffic light",
)

_envs.register(
    "rlsuite/SignalsShared-v0",
    "rlsuite.apps.traffic.envs.signals_vector:OneLightEnv",
    default_config={},
    max_envs_per_process=1,  # libsumo: one simulation per process
    # ...each light of the network one sub-env of ONE vector env (one simulation), so a
    # shared policy samples through RLlib's single-agent runner, not its multi-agent one.
    vector_entry_point="rlsuite.apps.traffic.envs.signals_vector:SignalsVectorEnv",
    vector_size="rlsuite.apps.traffic.envs.signals_vector:num_lights",
    description="RESCO's signals under one shared policy: the lights of a network as one "
    "vector env (num_envs_per_env_runner = its lights)",
)

_envs.register(
    "rlsuite/FigureEight-v0",
    "rlsuite.apps.traffic.envs.figure_eight:FigureEightEnv",
    default_config={},
    max_envs_per_process=1,
    description="Flow's figure-eight (loopy intersection), 13 humans + 1 AV by default",
)

_envs.register(
    "rlsuite/FigureEightMulti-v0",
    "rlsuite.apps.traffic.envs.figure_eight_multi:FigureEightMultiEnv",
    multi_agent=True,
    default_config={"num_avs": 7},
    max_envs_per_process=1,
    description="Flow's figure-eight with k AVs (default 7 of 14), one agent each (PettingZoo parallel)",
)

_envs.register(
    "rlsuite/Ring2Lane-v0",
    "rlsuite.apps.traffic.envs.ring_2lane:Ring2LaneEnv",
    default_config={},
    max_envs_per_process=1,  # libsumo: one simulation per process
    # ...so RLlib's runners step N two-lane rings in ONE simulation instead.
    vector_entry_point="rlsuite.apps.traffic.envs.ring_2lane_vector:Ring2LaneVectorEnv",
    description="two-lane ring (230 m, 41 humans + 1 AV that accelerates and changes lanes)",
)

_envs.register(
    "rlsuite/MergeMulti-v0",
    "rlsuite.apps.traffic.envs.merge:MergeMultiEnv",
    multi_agent=True,
    default_config={},
    max_envs_per_process=1,
    description="Flow's merge (highway + on-ramp, 10% AVs), one agent per AV on the road (PettingZoo parallel)",
)

_envs.register(
    "rlsuite/Merge-v0",
    "rlsuite.apps.traffic.envs.merge:MergeEnv",
    default_config={},
    max_envs_per_process=1,
    # ...so RLlib's runners step N merges in ONE simulation instead.
    vector_entry_point="rlsuite.apps.traffic.envs.merge_vector:MergeVectorEnv",
    description="Flow's merge under one centralised policy for up to num_rl AVs (Flow's MergePOEnv)",
)

_envs.register(
    "rlsuite/Bottleneck-v0",
    "rlsuite.apps.traffic.envs.bottleneck:BottleneckEnv",
    default_config={},
    max_envs_per_process=1,  # libsumo: one simulation per process
    description="Flow's bottleneck0 (4 -> 2 -> 1 lanes, 1900 veh/h, 10% AVs): one controller sets the AVs' speed limits per lane-segment",
)
