"""Signalised intersections through sumo-rl: one agent per traffic light (PettingZoo parallel)."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any, ClassVar

from pettingzoo import ParallelEnv

from rlsuite.apps.traffic import kernel
from rlsuite.apps.traffic.envs.config import EnvConfig
from rlsuite.apps.traffic.envs.signal_nets import NETWORKS, actuated_programs, network_names

PROGRAMS = ("rl", "fixed", "actuated", "maxpressure")


@dataclass(frozen=True)
class SignalsConfig(EnvConfig):
    """The signals env's keyword arguments."""

    KIND: ClassVar[str] = "signals"

    network: str = "single"
    """``single`` (sumo-rl's single intersection), ``grid2x2`` or ``grid4x4``."""
    num_seconds: int = 3600
    """Simulated seconds per episode."""
    delta_time: int = 5
    """Seconds between decisions (sumo-rl's ``delta_time``)."""
    yellow_time: int = 2
    """Yellow phase length (s)."""
    min_green: int = 5
    """Shortest green (s) before a switch is allowed."""
    max_green: int = 50
    """Longest green (s)."""
    reward_fn: str = "diff-waiting-time"
    """sumo-rl reward: diff-waiting-time, average-speed, queue or pressure."""
    program: str = "rl"
    """Who runs the lights: ``rl`` (the agents' actions), ``fixed`` (the network's fixed-time
    plan), ``actuated`` (SUMO's gap-actuated control) or ``maxpressure`` (max-pressure
    switching; actions ignored in the last three)."""
    gui: bool = False
    """Show sumo-gui (needs a display)."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        if self.network not in NETWORKS:
            raise ValueError(
                f"unknown network {self.network!r}: use one of "
                f"{', '.join(network_names())}, or net_file=... with route_file=..."
            )
        if self.program not in PROGRAMS:
            raise ValueError(f"program must be one of {PROGRAMS}, got {self.program!r}")
        if self.delta_time <= self.yellow_time:
            raise ValueError(
                f"delta_time ({self.delta_time}) must exceed yellow_time ({self.yellow_time})"
            )
        if self.num_seconds < self.delta_time:
            raise ValueError(f"num_seconds must be >= delta_time, got {self.num_seconds}")
        if self.reward_fn not in ("diff-waiting-time", "average-speed", "queue", "pressure"):
            raise ValueError(f"unknown reward_fn {self.reward_fn!r}")
        if self.gui and not kernel.gui_available():
            raise ValueError("gui needs a display (DISPLAY is not set)")


class SignalsEnv(ParallelEnv):
    """Traffic lights of a sumo-rl network, one agent each.

    States:
        per light, sumo-rl's default observation: the current green phase (one-hot),
        whether the minimum green has passed, and each incoming lane's density and
        queue (both normalised to [0, 1]).
    Actions:
        per light, ``Discrete(green phases)``: the next green phase (sumo-rl inserts
        the yellow and keeps the minimum green).
    Rewards:
        per light, sumo-rl's ``reward_fn`` (default: the drop in accumulated waiting
        time of its incoming vehicles).
    Termination:
        no terminal state; every agent is truncated after ``num_seconds`` simulated seconds.

    ``episode_metrics()`` gives the mean waiting time of the vehicles in the network,
    the mean number of halted vehicles (queue) and their mean speed.
    """

    metadata = {"render_modes": [], "name": "rlsuite_signals_v0", "is_parallelizable": True}

    def __init__(self, **kwargs: Any):
        self.cfg = SignalsConfig.from_kwargs(**kwargs)
        base = kernel.sumo_rl_nets_dir()
        net, rou = (os.path.join(base, p) for p in NETWORKS[self.cfg.network])
        self._dir = tempfile.mkdtemp(prefix="rlsuite-signals-")
        extra = "--no-step-log true"
        if self.cfg.program == "actuated":
            add = actuated_programs(net, os.path.join(self._dir, "actuated.add.xml"))
            extra += f" -a {add}"
        self._pz = kernel.sumo_rl_parallel_env(
            net_file=net, route_file=rou, num_seconds=self.cfg.num_seconds,
            delta_time=self.cfg.delta_time, yellow_time=self.cfg.yellow_time,
            min_green=self.cfg.min_green, max_green=self.cfg.max_green,
            reward_fn=self.cfg.reward_fn, use_gui=self.cfg.gui,
            fixed_ts=self.cfg.program in ("fixed", "actuated"), sumo_warnings=False,
            additional_sumo_cmd=extra, sumo_seed=0,
        )  # fmt: skip
        self.possible_agents = list(self._pz.possible_agents)
        self.agents: list[str] = []
        self.render_mode = None
        self._reset_metrics()

    def _reset_metrics(self) -> None:
        self._n = 0
        self._wait = self._queue = self._speed = 0.0

    @property
    def sumo_env(self) -> Any:
        """sumo-rl's ``SumoEnvironment`` underneath."""
        return self._pz.aec_env.unwrapped.env

    def observation_space(self, agent: str):
        return self._pz.observation_space(agent)

    def action_space(self, agent: str):
        return self._pz.action_space(agent)

    def reset(self, seed: int | None = None, options: dict | None = None):
        try:
            obs, infos = self._pz.reset(seed=seed, options=options)
        except kernel.sumo_errors() as e:
            raise kernel.SimulationError(f"signals: SUMO failed at reset: {e}") from e
        self.agents = list(self._pz.agents)
        self._reset_metrics()
        return obs, infos

    def step(self, actions: dict[str, Any]):
        if self.cfg.program == "maxpressure":
            actions = {a: kernel.max_pressure_phase(self.sumo_env, a) for a in self.agents}
        elif self.cfg.program != "rl":
            actions = {a: 0 for a in self.agents}
        missing = set(self.agents) - set(actions)
        if missing:
            raise ValueError(f"no action for traffic light(s) {sorted(missing)}")
        try:
            obs, rew, term, trunc, infos = self._pz.step({a: int(actions[a]) for a in self.agents})
        except kernel.sumo_errors() as e:
            raise kernel.SimulationError(
                f"signals: SUMO failed mid-episode: {e}; call reset() to start a new simulation"
            ) from e
        info = self.sumo_env.metrics[-1] if self.sumo_env.metrics else {}
        self._n += 1
        self._wait += float(info.get("system_mean_waiting_time", 0.0))
        self._queue += float(info.get("system_total_stopped", 0.0))
        self._speed += float(info.get("system_mean_speed", 0.0))
        self.agents = list(self._pz.agents)
        return obs, rew, term, trunc, infos

    def episode_metrics(self) -> dict[str, float]:
        n = max(self._n, 1)
        return {
            "mean_waiting_time": self._wait / n,
            "mean_queue": self._queue / n,
            "mean_speed": self._speed / n,
        }

    def render(self) -> None:
        return None

    def close(self) -> None:
        try:
            self._pz.close()
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)


def _is_resco(kwargs: dict[str, Any]) -> bool:
    from rlsuite.apps.traffic import resco

    return kwargs.get("network") in resco.MAPS or bool(kwargs.get("net_file"))


def scoring_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """``cfg`` for episodes that are scored: the RESCO-protocol envs (RESCO's maps, several
    maps, your own network) run each scored episode in its own SUMO process (``backend=
    traci``) unless ``cfg`` names a backend.

    libsumo runs every simulation of a process in that process, and on these maps a seeded
    episode after others there can come out different: SUMO 1.28, cologne1, fixed-time,
    seed 1000 scored 41.93 or 43.42 from one restart to the next in one process (the first
    divergence: one car's trip 3 s longer, same route and departure), and 41.93 in ~200
    fresh TraCI processes and from ``sumo`` on the command line. SUMO itself is not always
    that steady: the same seed gave 43.42 in fresh TraCI processes twice in one ``make test``
    beside a training job, so a rescored seed can still differ by SUMO's own run-to-run
    variation. sumo-rl's nets and the Flow scenarios repeat exactly on libsumo and keep it.
    Training keeps libsumo (~5x faster; an episode's noise is not a score)."""
    if cfg.get("backend") is None and (cfg.get("networks") or _is_resco(cfg)):
        return {**cfg, "backend": "traci"}
    return cfg


def make_env(**kwargs: Any) -> Any:
    """The signals env for these options: RESCO's maps (``network=cologne8`` ...) and your
    own network (``net_file``, ``route_file``) run :class:`~rlsuite.apps.traffic.envs.
    signals_resco.RescoSignalsEnv` under RESCO's protocol; sumo-rl's ``single``, ``grid2x2``
    and ``grid4x4`` run :class:`SignalsEnv`; several RESCO maps in turn (``networks=
    cologne1,cologne3``) run :class:`~rlsuite.apps.traffic.envs.signals_multimap.
    RescoMultiMapEnv`."""
    if kwargs.get("networks"):
        from rlsuite.apps.traffic.envs.signals_multimap import RescoMultiMapEnv

        return RescoMultiMapEnv(**kwargs)
    if _is_resco(kwargs):
        from rlsuite.apps.traffic.envs.signals_resco import RescoSignalsEnv

        return RescoSignalsEnv(**kwargs)
    return SignalsEnv(**kwargs)


class SignalsOptions:
    """The config behind :func:`make_env`'s options: RESCO's for its maps and your own
    networks, :class:`SignalsConfig` for sumo-rl's networks."""

    POLICY_FIELDS: ClassVar[tuple[str, ...]] = (
        "reward_fn", "delta_time", "yellow_time", "min_green", "max_green",
        "max_distance", "pad_lanes", "pad_phases", "step_length", "yellow_length",
        "light_index", "wave",
    )  # fmt: skip
    """sumo-rl's and RESCO's (``RescoSignalsConfig.POLICY_FIELDS``) together."""

    @staticmethod
    def from_kwargs(**kwargs: Any) -> Any:
        if kwargs.get("networks"):  # each map's options checked as that map's, the first kept
            from rlsuite.apps.traffic.envs.signals_multimap import parse_networks
            from rlsuite.apps.traffic.envs.signals_resco import RescoSignalsConfig

            rest = {k: v for k, v in kwargs.items() if k != "networks"}
            maps = parse_networks(kwargs["networks"])
            return [RescoSignalsConfig.from_kwargs(**rest, network=m) for m in maps][0]
        if _is_resco(kwargs):
            from rlsuite.apps.traffic.envs.signals_resco import RescoSignalsConfig

            return RescoSignalsConfig.from_kwargs(**kwargs)
        return SignalsConfig.from_kwargs(**kwargs)


CONFIG = SignalsOptions
"""The config class behind the env's keyword arguments (the CLI validates with it)."""
