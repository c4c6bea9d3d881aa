"""`make demo` for the traffic app: the suite's from-scratch policies beside the baselines.

The policies shipped in ``benchmarks/policies/`` (each learned from scratch by the
platform's ``es`` plan; the command is in its ``rlsuite.json``) drive SHORT seeded
evaluations of their scenarios, next to the uncontrolled traffic they improve on:

- the Sugiyama ring at 230 m, bunched by 20 m so a wave forms at once (the start the
  GRU policy was trained from): all-human, PI with saturation, the GRU policy;
- the two-lane ring (41 humans + 1 AV that also changes lanes): all-human, the policy;
- Flow's merge 0 (10% AVs): all-human (no AV), the shared AV policy;
- Flow's figure-eight 2 (14 AVs, one shared policy): all-human (14 humans), the policy;
- RESCO's ingolstadt7 (seven signals): greedy and max-pressure, the hand-written signal
  controllers a traffic engineer already has, beside the shipped DQN (learned from scratch
  on SUMO 1.9.2, driven here on the project's SUMO 1.28), by RESCO's average delay.

Each episode is one Ray task on the embedded Ray that ``rlsuite.demo`` started; the
episodes with a space-time diagram record their trajectories and write the PNG where
they ran. Every option a policy's observations depend on (e.g. the ring's memory) comes
from its checkpoint, as ``traffic-train evaluate`` does. The full evaluations, more seeds
each, are in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from rlsuite.apps.traffic.envs.ring import FLOW_V_EQ, equilibrium_speed

POLICIES = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "benchmarks", "policies"
)
"""The shipped policies (a source checkout's ``benchmarks/policies``)."""
PNG_DIR = os.path.join("runs", "demo", "traffic")
LENGTH = 230
RING_CFG = dict(ring_length=LENGTH, warmup_steps=0, horizon=3750, measure_after=750, bunching=20.0)
"""The ring from a bunched start, acted on from t = 0 (the protocol the GRU policy was trained
with, and Flow's non-RL ring example's start); measured over the last 300 s."""
NO_AV = "all-human"
"""The controller name of an episode with no AV at all (merge, figure-eight)."""
RESCO_MAP = "ingolstadt7_resco"
RESCO_POLICY = "resco_ingolstadt7_resco_replay"
RESCO_CFG = dict(network=RESCO_MAP, sumo_version="")
"""RESCO's ingolstadt7 on the project's SUMO (1.28): the shipped policy trained on 1.9.2
met its target there too (held-out 29.78 s/veh against greedy 34.11, max-pressure 34.16)."""


@dataclass(frozen=True)
class Case:
    """One seeded episode of the demo."""

    task: str
    """The table's task column."""
    scenario: str
    """The traffic CLI's scenario name."""
    controller: str
    """A baseline name, :data:`NO_AV`, or a policy folder under :data:`POLICIES`."""
    label: str
    """The table's controller column."""
    env_config: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    png: str = ""
    """Where to write the episode's space-time diagram ("" for none)."""
    reference: str = ""
    metric: str = "mean_speed"
    """What the table shows: ``mean_speed`` (m/s, higher is better) or RESCO's ``delay``
    (s/veh, lower is better)."""


def cases(png_dir: str = PNG_DIR) -> list[Case]:
    """The demo's episodes, in the table's order (baselines before the policy), on the
    seeds ``benchmarks/RESULTS.md`` evaluates each policy on; the first seed of a
    controller with a diagram draws it."""
    ring = f"ring {LENGTH} m, bunched"
    uniform = f"uniform flow {equilibrium_speed(LENGTH):.2f} m/s, Flow v_eq {FLOW_V_EQ[LENGTH]}"
    two, merge, fig8 = "two-lane ring, 42 vehicles", "merge 0, 10% AVs", "figure-eight 2, 14 AVs"
    resco = "RESCO ingolstadt7, 7 signals, SUMO 1.28"

    def each(
        seeds,
        task,
        scenario,
        controller,
        label,
        cfg=None,
        png="",
        reference="",
        metric="mean_speed",
    ):
        return [
            Case(task, scenario, controller, label, dict(cfg or {}), s,
                 os.path.join(png_dir, f"{png}.png") if png and i == 0 else "", reference,
                 metric)
            for i, s in enumerate(seeds)
        ]  # fmt: skip

    ring_seeds, two_seeds, seeds3 = range(4), range(1000, 1004), range(1000, 1003)
    return [
        *each(ring_seeds, ring, "ring", "idm", "all-human (IDM)", RING_CFG, "ring_human", uniform),
        *each(ring_seeds, ring, "ring", "pi", "PI with saturation (hand-written)", RING_CFG,
              reference=uniform),
        *each(ring_seeds, ring, "ring", "ring_es_gru_scratch_p025",
              "learned from scratch (ES + GRU, ring_es_gru_scratch_p025)", RING_CFG,
              "ring_learned", f"{uniform}; RESULTS 3.31 (seed 0)"),
        *each(two_seeds, two, "ring_2lane", "human", "all-human", png="ring_2lane_human"),
        *each(two_seeds, two, "ring_2lane", "ring_2lane_es",
              "learned from scratch (ES + GRU, ring_2lane_es)", png="ring_2lane_learned",
              reference="RESULTS +12.9% (Kheterpal et al. 2018: +10%)"),
        *each(seeds3, merge, "merge", NO_AV, "all-human (no AV)"),
        *each(seeds3, merge, "merge", "merge_es", "learned from scratch (ES, merge_es)",
              reference="RESULTS 3.64x (Flow: 2.02x)"),
        *each(seeds3, fig8, "figure_eight_multi", NO_AV, "all-human (14 humans, no AV)",
              {"num_avs": 0}),
        # no human, no noise: every seed gives the same episode (RESULTS), so one suffices
        *each(seeds3[:1], fig8, "figure_eight_multi", "figure_eight_2_es",
              "learned from scratch (ES, figure_eight_2_es)", {"num_avs": 14},
              "figure_eight_2_learned", "RESULTS 2.26x; Flow's best 5.96 m/s (1.43x)"),
        *each([1000], resco, "signals", "greedy", "greedy (hand-written)", RESCO_CFG,
              metric="delay"),
        *each([1000], resco, "signals", "maxpressure", "max-pressure (hand-written)",
              RESCO_CFG, metric="delay"),
        *each([1000], resco, "signals", RESCO_POLICY, f"learned from scratch (DQN, {RESCO_POLICY})",
              RESCO_CFG, reference="RESULTS held-out 29.78 on SUMO 1.28 (greedy 34.11, "
              "max-pressure 34.16)", metric="delay"),
    ]  # fmt: skip


SLOWEST_FIRST = ("signals", "merge", "ring_2lane", "ring", "figure_eight_multi")
"""The scenarios by the time an episode takes, longest first: the order Ray gets them in."""


def run_case(case: Case) -> dict[str, Any]:
    """Run one episode in this process: its metrics, the seconds it took, and its PNG."""
    import time

    t0 = time.perf_counter()
    if case.controller == NO_AV:
        metrics = _no_av(case)
    else:
        metrics = _episode(case)
    return {"case": case, "metrics": metrics, "wall_s": time.perf_counter() - t0}


def _episode(case: Case) -> dict[str, Any]:
    from rlsuite.apps.traffic import scenarios
    from rlsuite.platform import envs, evaluation

    scen = scenarios.get(case.scenario)
    name = case.controller
    if name not in scen.baselines:
        name = os.path.join(POLICIES, name)
    controller, overrides = scenarios.controller_for(scen, name, dict(case.env_config))
    cfg = scenarios.with_policy_fields(scen.env_id, {**case.env_config, **overrides}, controller)
    if isinstance(controller, str):  # a policy: refused here if it cannot act on this env
        from rlsuite.platform.checkpoints.fit import check_fits

        check_fits(controller, scen.env_id, envs.spaces(scen.env_id, cfg), cfg)
    env = envs.make(scen.env_id, {**cfg, "record": True} if case.png else cfg)
    try:
        row = evaluation.run_episode(
            env,
            evaluation.build_controller(controller),
            evaluation.Scenario(scen.env_id, cfg, case.seed),
        )
        if case.png:
            from rlsuite.apps.traffic.plots import space_time_diagram

            traj = getattr(env, "unwrapped", env).trajectories()
            title = f"{case.task}: {case.label}, seed {case.seed}"
            row["png"] = space_time_diagram(traj, case.png, title=title)
    finally:
        env.close()
    return row


def _no_av(case: Case) -> dict[str, Any]:
    """The scenario with humans only (no AV to control): Flow's uncontrolled baseline."""
    import numpy as np

    if case.scenario == "merge":
        from rlsuite.apps.traffic.envs.merge import all_human

        row = all_human(case.env_config, [case.seed])[0]
        return {k: v for k, v in row.items() if k != "series"}
    from rlsuite.apps.traffic.envs.figure_eight import FigureEightConfig, FigureEightSimulation

    cfg = FigureEightConfig.from_kwargs(**case.env_config)
    sim = FigureEightSimulation(cfg)
    try:
        sim.start(np.random.default_rng(case.seed))
        for _ in range(cfg.horizon):
            sim.control({})
        return dict(sim.metrics())
    finally:
        sim.close()


def rows_of(results: list[dict[str, Any]]) -> list[dict]:
    """The table rows: the case's metric (mean over its seeds) per task and controller, the
    learned policy's ratio to all-human in its reference (speeds)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault((r["case"].task, r["case"].label), []).append(r)
    human = {
        task: _mean(rs) for (task, label), rs in groups.items() if label.startswith("all-human")
    }
    rows = []
    for (task, label), rs in groups.items():
        speed = _mean(rs)
        ref = rs[0]["case"].reference
        if label.startswith("learned") and task in human:
            ref = f"{speed / human[task]:.2f}x all-human here; {ref}"
        pngs = [r["metrics"]["png"] for r in rs if "png" in r["metrics"]]
        rows.append(dict(app="traffic", task=task, controller=label, metric=rs[0]["case"].metric,
                         value=speed, reference=ref, pngs=pngs))  # fmt: skip
    return rows


def _mean(rs: list[dict[str, Any]]) -> float:
    return float(sum(r["metrics"][r["case"].metric] for r in rs) / len(rs))


def run(case_list: list[Case] | None = None) -> list[dict]:
    import ray
    from rich.console import Console
    from rich.progress import Progress

    console = Console()
    case_list = cases() if case_list is None else case_list
    for c in case_list:
        if c.png:
            os.makedirs(os.path.dirname(os.path.abspath(c.png)), exist_ok=True)
    remote = ray.remote(num_cpus=1, max_retries=0)(run_case)
    order = sorted(case_list, key=lambda c: SLOWEST_FIRST.index(c.scenario))
    refs = [remote.remote(c) for c in order]
    results = []
    with Progress(console=console) as bar:
        task = bar.add_task(f"{len(case_list)} seeded episodes on Ray", total=len(refs))
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            results.append(ray.get(done[0]))
            bar.advance(task)
    results.sort(key=lambda r: case_list.index(r["case"]))
    for r in results:
        c, m = r["case"], r["metrics"]
        png = f", space-time diagram: {os.path.abspath(m['png'])}" if "png" in m else ""
        unit = "s/veh delay" if c.metric == "delay" else "m/s"
        console.print(
            f"{c.task}, seed {c.seed}: {c.label}: {m[c.metric]:.2f} {unit} "
            f"({r['wall_s']:.0f} s){png}",
            highlight=False,
        )
    return rows_of(results)


if __name__ == "__main__":
    from rlsuite.platform import cluster

    with cluster.local_cluster():
        for r in run():
            print(r)
