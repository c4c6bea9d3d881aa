"""The SUMO adapter: the only package of rlsuite that imports libsumo, traci or sumo.

Envs own one :class:`Simulation` each and talk to SUMO only through it (as Flow's
``core/kernel`` hides TraCI). Two backends share one surface:

* ``libsumo``: SUMO in this process, ~15x faster than TraCI, but only ONE
  simulation per process. One SUMO env per RLlib env-runner process uses it.
* ``traci``: a ``sumo`` child process and a labelled TraCI connection; any number
  per process. Used when libsumo is already taken in this process (``auto``), when
  asked for, and for ``sumo-gui``.

Nothing happens at import time: ``SUMO_HOME`` is set lazily from the
``eclipse-sumo`` wheel the first time a binary is needed.

Every SUMO failure (a crashed or killed ``sumo`` process, a closed libsumo
simulation, a bad network file) surfaces as :class:`SimulationError` with what
happened and what to do; the owning env recovers on its next ``reset()``.

Modules, one concern each:

* :mod:`.errors`: :class:`SimulationError`, the exceptions a failing SUMO raises, and the
  teleport-storm verdict;
* :mod:`.programs`: SUMO's install and programs (``SUMO_HOME``, binaries, command-line
  tools, the display check) and the child processes the TraCI backend starts;
* :mod:`.simulation`: :class:`Simulation`, one simulation owned by one env;
* :mod:`.sumo_rl_adapter`: sumo-rl's networks and PettingZoo env, and max-pressure on it.
"""

from rlsuite.apps.traffic.kernel.errors import SimulationError, sumo_errors, teleport_storm
from rlsuite.apps.traffic.kernel.programs import (
    binary,
    gui_available,
    run_tool,
    sumo_home,
    wait_for_exit,
)
from rlsuite.apps.traffic.kernel.simulation import (
    BACKENDS,
    VAR_DISTANCE,
    VAR_LANE_INDEX,
    VAR_LANEPOSITION,
    VAR_ROAD_ID,
    VAR_SPEED,
    VEHICLE_GETTERS,
    Simulation,
)
from rlsuite.apps.traffic.kernel.sumo_rl_adapter import (
    max_pressure_phase,
    sumo_rl_nets_dir,
    sumo_rl_parallel_env,
)

__all__ = [
    "BACKENDS",
    "VAR_DISTANCE",
    "VAR_LANE_INDEX",
    "VAR_LANEPOSITION",
    "VAR_ROAD_ID",
    "VAR_SPEED",
    "VEHICLE_GETTERS",
    "Simulation",
    "SimulationError",
    "binary",
    "gui_available",
    "max_pressure_phase",
    "run_tool",
    "sumo_errors",
    "sumo_home",
    "sumo_rl_nets_dir",
    "sumo_rl_parallel_env",
    "teleport_storm",
    "wait_for_exit",
]
