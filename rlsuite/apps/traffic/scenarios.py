"""The traffic app's scenarios by CLI name, and turning a controller name into a controller."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any

from rlsuite.apps.traffic import controllers


@dataclass(frozen=True)
class TrafficScenario:
    """One CLI scenario: a registered env and what applies to it."""

    name: str
    """CLI name (``--scenario``)."""
    env_id: str
    """Registered env id."""
    multi_agent: bool
    """PettingZoo parallel env (controllers act per agent)."""
    baselines: tuple[str, ...]
    """Controller names that apply."""
    has_ring_length: bool = False
    """Takes ``--ring-length``."""
    space_time: bool = False
    """Records trajectories for a space-time diagram."""
    description: str = ""
    """One line for --help."""
    has_avs: bool = False
    """Takes ``--avs`` (the number of AVs)."""


SCENARIOS: dict[str, TrafficScenario] = {
    s.name: s
    for s in (
        TrafficScenario(
            "ring",
            "rlsuite/Ring-v0",
            False,
            ("idm", "followerstopper", "pi"),
            True,
            True,
            "Sugiyama ring, 22 vehicles, 1 AV",
        ),
        TrafficScenario(
            "ring_multi",
            "rlsuite/RingMulti-v0",
            True,
            ("idm", "followerstopper", "pi"),
            True,
            True,
            "ring with k AVs (PettingZoo parallel, one agent per AV)",
            has_avs=True,
        ),
        TrafficScenario(
            "figure_eight",
            "rlsuite/FigureEight-v0",
            False,
            ("idm", "followerstopper", "pi", "snake"),
            False,
            True,
            "Flow's figure-eight (loopy intersection), 13 humans + 1 AV, one centralised policy",
            has_avs=True,
        ),
        TrafficScenario(
            "figure_eight_multi",
            "rlsuite/FigureEightMulti-v0",
            True,
            ("idm", "followerstopper", "pi", "snake"),
            False,
            True,
            "figure-eight with k AVs (default 7), one agent per AV (PettingZoo parallel)",
            has_avs=True,
        ),
        TrafficScenario(
            "ring_2lane",
            "rlsuite/Ring2Lane-v0",
            False,
            ("human", "idm", "followerstopper", "pi"),
            False,
            True,
            "two-lane ring, 41 humans + 1 AV that accelerates and changes lanes",
        ),
        TrafficScenario(
            "merge",
            "rlsuite/MergeMulti-v0",
            True,
            ("idm", "followerstopper", "pi"),
            False,
            False,
            "Flow's merge (highway + on-ramp, --env-set av_share=0.1), one agent per AV on the road",
        ),
        TrafficScenario(
            "bottleneck",
            "rlsuite/Bottleneck-v0",
            False,
            ("all-human", "alinea"),
            False,
            False,
            "Flow's bottleneck0 (4 -> 2 -> 1 lanes), AV speed limits per lane-segment; outflow",
        ),
        TrafficScenario(
            "signals",
            "rlsuite/Signals-v0",
            True,
            ("fixed", "actuated", "maxpressure", "greedy"),
            False,
            False,
            "signalised intersections (sumo-rl's, RESCO's maps or --env-set net_file=...), "
            "one agent per traffic light",
        ),
    )  # fmt: skip
}


def get(name: str) -> TrafficScenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise ValueError(f"unknown scenario {name!r}: use one of {', '.join(SCENARIOS)}") from None


def parse_ring_length(text: str | float | None) -> float | tuple[float, float] | None:
    """``"230"`` -> 230.0; ``"220:270"`` or ``"220-270"`` -> (220.0, 270.0)."""
    if text is None or isinstance(text, float | int):
        return None if text is None else float(text)
    s = str(text).strip()
    for sep in (":", "-", ","):
        if sep in s[1:]:
            lo, hi = s.split(sep, 1)
            try:
                return (float(lo), float(hi))
            except ValueError:
                break
    try:
        return float(s)
    except ValueError:
        raise ValueError(
            f"ring length {text!r} is not a number of metres or a range like 220:270"
        ) from None


def controller_for(
    scenario: TrafficScenario, name: str, env_config: dict[str, Any] | None = None
) -> tuple[Any, dict[str, Any]]:
    """A picklable controller (factory or checkpoint path) for ``name``, and env options it needs.

    Signal baselines (``fixed``, ``actuated``, ``maxpressure``) run inside the signals
    env, so they come with ``{"program": name}``. Team baselines (the figure-eight's
    ``snake``) drive all the AVs at once; the others get one copy per AV.
    """
    if scenario.name == "ring_2lane" and name in scenario.baselines:
        return _ring_2lane_baseline(name, env_config)
    if scenario.name == "bottleneck" and name in scenario.baselines:
        from rlsuite.apps.traffic.envs import bottleneck

        return bottleneck.baseline(name, env_config)
    known = (controllers.BASELINES, controllers.SIGNAL_PROGRAMS, controllers.TEAM_BASELINES)
    if any(name in k for k in known):
        if name not in scenario.baselines:
            raise ValueError(
                f"controller {name!r} does not apply to scenario {scenario.name!r}: use one of "
                f"{', '.join(scenario.baselines)} or a checkpoint path"
            )
        if name in controllers.SIGNAL_PROGRAMS:
            return functools.partial(controllers.SignalProgram, name), {"program": name}
        factory = functools.partial(controllers.make_baseline, name)
        if scenario.name in ("figure_eight", "figure_eight_multi"):
            from rlsuite.apps.traffic.envs.figure_eight import FigureEightConfig

            cfg = FigureEightConfig.from_kwargs(**dict(env_config or {}))
            bounds = dict(max_accel=cfg.max_accel, max_decel=cfg.max_decel)
            if name in controllers.TEAM_BASELINES:
                team = controllers.TEAM_BASELINES[name]
                return functools.partial(team, cfg.num_avs, name, **bounds), {}
            factory = functools.partial(controllers.make_baseline, name, **bounds)
            if scenario.multi_agent:
                return functools.partial(controllers.PerAgent, factory, f"{name} (per AV)"), {}
            return functools.partial(controllers.Stacked, factory, cfg.num_avs, name), {}
        if scenario.name == "merge":
            from rlsuite.apps.traffic.envs.merge import baseline_options

            opts = baseline_options(name, env_config)
            factory = functools.partial(controllers.make_baseline, name, **opts)
        if scenario.multi_agent:
            return functools.partial(controllers.PerAgent, factory, f"{name} (per AV)"), {}
        return factory, {}
    if os.path.exists(name):
        return os.path.abspath(name), {}
    raise ValueError(
        f"controller {name!r} is neither a baseline ({', '.join(scenario.baselines)}) nor an "
        "existing checkpoint path"
    )


def pi_labeller() -> Any:
    """PI on every AV of a multi-AV ring, labelling the steps another driver takes (DAgger's
    expert: its previous command is the AV's speed, see ``PISaturation.labelling``)."""
    factory = functools.partial(controllers.make_baseline, "pi", labelling=True)
    return functools.partial(controllers.PerAgent, factory, "pi (labelling, per AV)")


def config_class(env_id: str) -> Any:
    """The env's config dataclass (its module's ``CONFIG``), or None."""
    import importlib

    from rlsuite.platform import envs

    module = importlib.import_module(envs.spec(env_id).entry_point.split(":")[0])
    return getattr(module, "CONFIG", None)


def with_policy_fields(env_id: str, cfg: dict[str, Any], controller: Any) -> dict[str, Any]:
    """``cfg`` and, for a checkpoint, the options that shape what its policy observes and
    how it acts (the config's ``POLICY_FIELDS``, e.g. the ring's ``memory_s``) as it was
    trained, unless ``cfg`` gives them; the episode's own options (length, horizon, ...)
    stay as given. Anything else (a baseline) gets ``cfg`` back."""
    if not isinstance(controller, str):
        return cfg
    from rlsuite.platform import checkpoints

    trained = checkpoints.metadata(controller).get("env_config", {})
    keys = getattr(config_class(env_id), "POLICY_FIELDS", ())
    return {**{k: trained[k] for k in keys if k in trained}, **cfg}


def _ring_2lane_baseline(
    name: str, env_config: dict[str, Any] | None
) -> tuple[Any, dict[str, Any]]:
    """The two-lane ring's baselines: ``human`` hands the AV to SUMO (its IDM and lane-change
    model, as every human: all-human), the others drive its acceleration in its lane."""
    from rlsuite.apps.traffic.envs import ring_2lane

    if name == "human":
        return ring_2lane.SumoDriven, {"av_driver": "sumo"}
    cfg = ring_2lane.Ring2LaneConfig.from_kwargs(**dict(env_config or {}))
    bounds = dict(max_accel=cfg.max_accel, max_decel=cfg.max_decel, sim_step=cfg.sim_step)
    factory = functools.partial(controllers.make_baseline, name, **bounds)
    return functools.partial(ring_2lane.KeepLane, factory, f"{name} (keeps its lane)"), {}
