"""The traffic app's environments, registered with the platform by id.

Importing this module only registers ids (no SUMO is started, nothing is checked).
"""

from rlsuite.platform import envs as _envs

_envs.register(
    "rlsuite/Ring-v0",
    "rlsuite.apps.traffic.envs.ring:RingEnv",
    default_config={},
    description="Sugiyama ring, 22 vehicles, one AV damping the stop-and-go wave (SUMO)",
)
