"""sumo-rl behind the kernel: its bundled networks, its PettingZoo parallel env (with the
pettingzoo >= 1.25 fix and a TraCI start that does not sleep) and max-pressure read from
its own TraCI connection."""

from __future__ import annotations

import os
from typing import Any

from rlsuite.apps.traffic.kernel import programs
from rlsuite.apps.traffic.kernel.programs import sumo_home


def sumo_rl_nets_dir() -> str:
    """The directory of sumo-rl's bundled networks."""
    sumo_home()
    import sumo_rl

    return os.path.join(os.path.dirname(sumo_rl.__file__), "nets")


def max_pressure_phase(sumo_env: Any, ts_id: str) -> int:
    """The green phase of light ``ts_id`` with the largest pressure (Varaiya's max-pressure).

    A phase's pressure is the sum over the movements it serves of (vehicles on the
    incoming lane - vehicles on the outgoing lane). ``sumo_env`` is sumo-rl's
    ``SumoEnvironment`` (its own TraCI connection).
    """
    ts = sumo_env.traffic_signals[ts_id]
    conn = sumo_env.sumo
    links = conn.trafficlight.getControlledLinks(ts_id)
    count: dict[str, int] = {}

    def n(lane: str) -> int:
        if lane not in count:
            count[lane] = conn.lane.getLastStepVehicleNumber(lane)
        return count[lane]

    best, best_p = 0, -float("inf")
    for i, phase in enumerate(ts.green_phases):
        p = 0.0
        for idx, ch in enumerate(phase.state):
            if ch in "Gg" and idx < len(links):
                for inc, out, _via in links[idx]:
                    p += n(inc) - n(out)
        if p > best_p:
            best, best_p = i, p
    return best


def sumo_rl_parallel_env(**kwargs: Any) -> Any:
    """sumo-rl's PettingZoo parallel env, working with pettingzoo >= 1.25.

    sumo-rl 1.4.5 imports ``pettingzoo.utils.agent_selector`` as a class; pettingzoo
    1.25 renamed the class ``AgentSelector`` and ``agent_selector`` is now its module
    (sumo-rl's GitHub issue 228), so sumo-rl's env fails with "'module' object is not
    callable". The class is bound to that name inside sumo-rl's module only, at call
    time (site-packages are not edited, pettingzoo is left as it is).
    """
    sumo_home()
    import pettingzoo.utils as pzu
    import sumo_rl.environment.env as sumo_rl_env

    selector = getattr(pzu, "AgentSelector", None)
    if selector is not None and not isinstance(sumo_rl_env.agent_selector, type):
        sumo_rl_env.agent_selector = selector  # the name sumo-rl calls, in sumo-rl's module only
    if not sumo_rl_env.LIBSUMO and not isinstance(sumo_rl_env.traci, _FastStartTraci):
        sumo_rl_env.traci = _FastStartTraci(sumo_rl_env.traci)  # in sumo-rl's module only
    return sumo_rl_env.parallel_env(**kwargs)


class _FastStartTraci:
    """traci as sumo-rl's module sees it, with ``start`` polling for the child's port
    (:func:`programs.start`) instead of waiting 1 s per try. sumo-rl starts ``sumo`` twice
    per env (once to read the network, then once per reset), so each env and each episode
    waited ~1 s for nothing. Everything else is traci's own."""

    def __init__(self, traci: Any):
        self._traci = traci

    def __getattr__(self, name: str) -> Any:
        return getattr(self._traci, name)

    @staticmethod
    def start(cmd, port=None, numRetries=None, label="default", **kw: Any) -> Any:  # noqa: N803
        return programs.start(cmd, port=port, label=label, **kw)
