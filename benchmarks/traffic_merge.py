"""Flow's merge 0/1/2: a learned AV policy against all-human and the hand-written AV rules.

Flow's open merge (Vinitsky et al., CoRL 2018): a one-lane highway (100 m inflow edge, 500 m
to the merge, 100 m after it) and a 100 m on-ramp (after its own 100 m inflow edge); 2000
veh/h enter the highway, 10% / 25% / 33.3% of them AVs (merge 0 / 1 / 2), 100 veh/h the
ramp; 750 env steps of 1 s (two SUMO steps of 0.5 s each, Flow's ``sims_per_step=2``, no
warm-up: the road fills from five cars); AV accelerations in [-1.5, 1.5] m/s^2. The metric
is Flow's: the mean speed of the vehicles on the road, over the episode.

Each variant's learned policy (``--controller``, ``--controller-1``, ``--controller-2``;
by default the shipped ``benchmarks/policies/merge_es``, ``merge1_es`` and ``merge2_es``,
each trained from scratch at its own AV share, as Flow trains one per variant) is one
policy shared by every AV (``rlsuite/MergeMulti-v0``, an agent per AV on the road); merge
0's policy also drives merge 1 and 2 as a row of its own. All-human is the same inflow with no AV at all;
``idm`` drives the AVs as the humans drive, ``followerstopper`` and ``pi`` are Stern et
al.'s rules on every AV. A probe, ``entrance meter``, has each AV hold 4 m/s over the
first 15% of the highway: it shows how the metric can be raised by keeping cars off the
road (Flow's metric counts only the cars on it).

Pass criterion: on merge 0, learned / all-human mean speed >= 1.8 (Flow: 14.95 / 7.39 =
2.02), both measured here on the same seeds. Flow's absolute speeds are printed beside ours.

The demand (2100 veh/h) is above what the merge lets through, so cars queue to enter the
road in every run. Flow's metric counts only the cars on the road: a policy that holds
cars at the entrance raises it. The table therefore also gives the outflow, the cars on
the road and those waiting to enter, and the mean speed with the waiting cars counted at 0.

``--speed`` also measures sampling: env steps/s of the platform's RLlib env runner (PPO's
module, no learning) and of the env in this process against a raw libsumo loop of the same
network (two SUMO steps per env step and every vehicle's state read, no control), for the
multi-agent env (``rlsuite/MergeMulti-v0``, one merge per runner: RLlib's multi-agent
runners step one env each) and for Flow's centralised ``rlsuite/Merge-v0`` with
``--copies`` merges in one SUMO simulation (``MergeVectorEnv``, its vector entry point; an
env step is one merge advancing 1 s) beside one scalar ``MergeEnv`` per runner (the path
before). ``--speed-only`` measures only that and writes traffic_merge_speed.json.

Usage:
    flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_merge.py [--controller DIR] [--controller-1 DIR] [--controller-2 DIR] [--episodes 3] [--speed]
    flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_merge.py --speed-only [--copies 8]

Writes benchmarks/results/traffic/traffic_merge.json and traffic_merge.png (mean speed over time
on merge 0, and the mean speeds of every controller on merge 0/1/2).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from rlsuite.apps.traffic.benchmarking import MACHINE, RESULTS  # noqa: E402
from rlsuite.apps.traffic.benchmarking import sampler_rate as rllib_sampler_rate  # noqa: E402

ENV_ID = "rlsuite/MergeMulti-v0"
POLICY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "policies", "merge_es")
POLICIES = {v: os.path.join(os.path.dirname(POLICY), name)
            for v, name in ((0, "merge_es"), (1, "merge1_es"), (2, "merge2_es"))}  # fmt: skip
"""The shipped policy of each variant, trained at its own AV share (as Flow trains one per
variant)."""
VARIANTS = {0: 0.1, 1: 0.25, 2: 0.333}
"""merge variant -> AV share of the highway inflow."""
FLOW = {0: (14.95, "TRPO"), 1: (17.29, "ES"), 2: (17.36, "ES")}
"""Flow's best learned mean speed (m/s) per variant and its algorithm (CoRL 2018, Table 1)."""
FLOW_HUMAN = 7.39
"""Flow's all-human mean speed (m/s)."""
RATIO = 1.8
MERGE0_ROW = "merge 0's policy"
"""The row of merge 1 and 2 driven by the policy trained on merge 0."""
BASELINES = ("idm", "followerstopper", "pi")


class EntranceMeter:
    """A probe, not a baseline: each AV holds ``v_hold`` m/s over the first ``x_max`` of the
    highway (unless its gap is under 10 m, where it follows with the IDM), then drives as
    the humans. The AVs meter the inflow at the entrance: the cars held behind them wait
    off the road (they are not counted until they enter), and the road beyond flows."""

    name = "entrance meter (probe)"

    def __init__(self, v_hold: float = 4.0, x_max: float = 0.15):
        from rlsuite.apps.traffic import controllers
        from rlsuite.apps.traffic.envs.merge import baseline_options

        self.v_hold, self.x_max = v_hold, x_max
        self.idm = controllers.IDMController(**baseline_options("idm"))

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, obs: dict) -> dict:
        out = {}
        for a, o in obs.items():
            v, gap = float(o[0]) * 15.0, float(o[2]) * 270.0
            if o[5] < self.x_max and gap > 10.0:
                out[a] = np.array([np.clip(self.v_hold - v, -1.5, 1.5)], np.float32)
            else:
                out[a] = self.idm.act(o)
        return out


def evaluate(controller: str, cfg: dict, seeds: list[int]) -> dict:
    """Mean metrics of one controller (a baseline name or a checkpoint) on ``seeds``."""
    from rlsuite.apps.traffic import scenarios
    from rlsuite.platform import evaluation

    ctrl = controller
    if controller in BASELINES:
        ctrl, _ = scenarios.controller_for(scenarios.get("merge"), controller, cfg)
    elif controller == "meter":
        ctrl = EntranceMeter
    ev = evaluation.evaluate(ctrl, evaluation.scenarios(ENV_ID, seeds, cfg), num_workers=0)
    keys = ("mean_speed", "throughput_veh_h", "return", "collisions", "teleports", "vehicles",
            "waiting_to_enter")  # fmt: skip
    return with_waiting({k: ev.summary[k]["mean"] for k in keys})


def with_waiting(row: dict) -> dict:
    """``row`` plus ``speed_with_waiting``: the mean speed over the cars on the road and the
    cars due but held off it (at 0 m/s), from the episode means."""
    on, off = row["vehicles"], row["waiting_to_enter"]
    row["speed_with_waiting"] = row["mean_speed"] * on / max(on + off, 1e-9)
    return row


def speed_series(controller: str, cfg: dict, seed: int) -> dict[str, list[float]]:
    """One seeded episode's mean speed and outflow per env step."""
    from rlsuite.apps.traffic import scenarios
    from rlsuite.platform import envs, evaluation

    ctrl = controller
    if controller in BASELINES:
        ctrl, _ = scenarios.controller_for(scenarios.get("merge"), controller, cfg)
    env = envs.make(ENV_ID, cfg)
    try:
        evaluation.run_episode(env, evaluation.build_controller(ctrl),
                               evaluation.Scenario(ENV_ID, cfg, seed))  # fmt: skip
        s = env.series()
    finally:
        env.close()
    return {k: s[k].tolist() for k in ("t", "mean_speed", "outflow")}


def raw_rate(env_steps: int) -> float:
    """Env steps/s of a raw libsumo loop of merge 0 (two SUMO steps and a full state read
    each), with the road as full as the all-human episode leaves it."""
    from rlsuite.apps.traffic.envs.merge_road import MergeConfig, MergeSimulation

    core = MergeSimulation(MergeConfig(horizon=10_000))
    try:
        core.start(np.random.default_rng(0))
        for _ in range(300):  # fill the road
            core.advance({})
        sim = core.sim
        assert sim.backend == "libsumo", sim.backend
        t = time.perf_counter()
        for _ in range(env_steps):
            for _ in range(2):
                sim.step()
                sim.vehicle_states(sim.vehicle_ids())
        return env_steps / (time.perf_counter() - t)
    finally:
        core.close()


def env_rate(env_steps: int) -> float:
    """Env steps/s of the multi-agent env stepped in this process (zero actions)."""
    from rlsuite.apps.traffic.envs.merge import MergeMultiEnv

    env = MergeMultiEnv(horizon=300 + env_steps)
    try:
        env.reset(seed=0)
        for _ in range(300):
            env.step({a: np.zeros(1, np.float32) for a in env.agents})
        t = time.perf_counter()
        for _ in range(env_steps):
            env.step({a: np.zeros(1, np.float32) for a in env.agents})
        return env_steps / (time.perf_counter() - t)
    finally:
        env.close()


def sampler_rate(env_steps: int) -> float:
    """Env steps/s of one RLlib env runner of the platform (the sync plan's module, no
    learning) on the multi-agent merge, whole 750-step episodes."""
    return rllib_sampler_rate(ENV_ID, {}, env_steps, hidden=(32, 32))


def central_env_rate(env_steps: int, copies: int = 0) -> float:
    """Env steps/s of Flow's centralised merge stepped in this process (zero actions) over
    whole 750-step episodes: ``copies`` merges in one simulation (MergeVectorEnv), or one
    scalar MergeEnv with 0. An env step is one merge advancing 1 s."""
    from rlsuite.apps.traffic.envs.merge import MergeEnv
    from rlsuite.apps.traffic.envs.merge_vector import MergeVectorEnv

    env = MergeVectorEnv(num_envs=copies) if copies else MergeEnv()
    n, steps = max(copies, 1), max(env_steps // max(copies, 1), 1)
    try:
        env.reset(seed=0)
        a = np.zeros(env.action_space.shape, np.float32)
        t = time.perf_counter()
        for _ in range(steps):
            _, _, term, trunc, _ = env.step(a)
            if not copies and (term or trunc):
                env.reset()
        return steps * n / (time.perf_counter() - t)
    finally:
        env.close()


def central_sampler_rate(env_steps: int, copies: int = 0) -> float:
    """Env steps/s of one RLlib env runner on ``rlsuite/Merge-v0``: ``copies`` merges in one
    simulation (its vector entry point), or one scalar MergeEnv with 0; whole episodes."""
    if copies:
        return rllib_sampler_rate("rlsuite/Merge-v0", {}, max(env_steps, copies * 1500),
                                  hidden=(32, 32), num_envs_per_env_runner=copies)  # fmt: skip
    return rllib_sampler_rate("rlsuite/Merge-v0", {}, env_steps, hidden=(32, 32), scalar=True)


def speed(copies: int, console) -> dict:
    """Every sampling rate (env steps/s, one core each) and each path's share of the raw loop."""
    raw = raw_rate(1500)
    rates = {
        "raw libsumo loop, 1 merge (env steps/s: 2 SUMO steps + every state read)": raw,
        "MergeMultiEnv in this process (zero actions)": env_rate(1500),
        "platform sampler, 1 RLlib multi-agent env runner x 1 MergeMultiEnv": sampler_rate(1500),
        "MergeEnv (centralised) in this process (zero actions)": central_env_rate(1500),
        f"MergeVectorEnv in this process, {copies} merges in one simulation": central_env_rate(
            copies * 750, copies
        ),
        "platform sampler, 1 RLlib env runner x 1 MergeEnv (the path before)": central_sampler_rate(
            1500
        ),
        f"platform sampler, 1 RLlib env runner x {copies} merges in one simulation (Merge-v0)": (
            central_sampler_rate(1500, copies)
        ),
    }
    for k, v in rates.items():
        console.print(f"{v:8.0f}  {v / raw:4.0%}  {k}")
    return rates


def _plot(out: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, o, b) = plt.subplots(1, 3, figsize=(18, 4.2), dpi=110)
    colors = {"learned": "tab:green", MERGE0_ROW: "yellowgreen", "all-human": "black",
              "idm": "grey", "followerstopper": "tab:orange", "pi": "tab:blue"}  # fmt: skip
    for name, s in out["series_merge0"].items():
        v = np.array(s["mean_speed"], float)
        k = 10  # 10 s moving average
        smooth = np.convolve(v, np.ones(k) / k, mode="valid")
        a.plot(np.array(s["t"])[k - 1 :], smooth, label=name, color=colors.get(name))
        w = 60  # outflow over the last minute, veh/h
        flow = np.convolve(np.array(s["outflow"], float), np.ones(w), mode="valid") * 3600 / w
        o.plot(np.array(s["t"])[w - 1 :], flow, label=name, color=colors.get(name))
    a.set_xlabel("time (s)")
    a.set_ylabel("mean speed on the road (m/s, 10 s mean)")
    a.set_title(f"merge 0, seed {out['seeds'][0]}")
    a.legend(fontsize=8)
    o.set_xlabel("time (s)")
    o.set_ylabel("outflow (veh/h, last 60 s)")
    o.set_title("merge 0: vehicles leaving the road")
    names = ["learned", MERGE0_ROW, "all-human", *BASELINES, EntranceMeter.name]
    width = 0.11
    for j, name in enumerate(names):
        vals = [out["variants"][str(v)]["rows"].get(name, {}).get("mean_speed", np.nan)
                for v in sorted(VARIANTS)]  # fmt: skip
        b.bar(np.arange(3) + (j - 3) * width, vals, width, label=name,
              color=colors.get(name, "tab:purple"))  # fmt: skip
    b.scatter(np.arange(3), [FLOW[v][0] for v in sorted(VARIANTS)], marker="*", s=120,
              color="tab:red", label="Flow learned", zorder=3)  # fmt: skip
    b.axhline(FLOW_HUMAN, color="tab:red", ls="--", lw=1, label="Flow all-human")
    b.set_xticks(np.arange(3), [f"merge {v} ({VARIANTS[v]:.0%} AVs)" for v in sorted(VARIANTS)])
    b.set_ylabel("mean speed (m/s)")
    b.set_title("mean speed, ours beside Flow's")
    b.set_ylim(0, 21)
    b.legend(fontsize=7, ncol=3, loc="upper left")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console
    from rich.table import Table

    from rlsuite.apps.traffic.envs.merge import all_human

    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--controller", default=POLICY, help="merge 0's learned policy (a checkpoint)")
    for v in (1, 2):
        p.add_argument(f"--controller-{v}", default=POLICIES[v],
                       help=f"merge {v}'s learned policy (default the shipped one); merge 0's "
                       "policy is also run on it as its own row")  # fmt: skip
    p.add_argument("--episodes", type=int, default=3, help="seeded episodes per controller")
    p.add_argument("--speed", action="store_true", help="also measure sampling speed")
    p.add_argument(
        "--speed-only",
        action="store_true",
        help="measure sampling speed only (traffic_merge_speed.json)",
    )
    p.add_argument("--copies", type=int, default=8,
                   help="merges per env runner in one SUMO simulation (Merge-v0's vector path)")  # fmt: skip
    p.add_argument("--out", default="traffic_merge")
    args = p.parse_args(argv)
    console = Console(width=150)
    if args.speed_only:
        rates = speed(args.copies, console)
        raw = next(iter(rates.values()))
        multi = rates["platform sampler, 1 RLlib multi-agent env runner x 1 MergeMultiEnv"]
        vec = list(rates.values())[-1]
        checks = {
            "MergeMulti-v0: platform sampler >= 50% of the raw libsumo loop per core": multi / raw >= 0.5,
            "Merge-v0: platform sampler >= 50% of the raw libsumo loop per core": vec / raw >= 0.5,
        }  # fmt: skip
        for k, ok in checks.items():
            console.print(f"{'PASS' if ok else 'FAIL'}  {k}")
        os.makedirs(RESULTS, exist_ok=True)
        path = os.path.join(RESULTS, f"{args.out}_speed.json")
        with open(path, "w") as f:
            json.dump({"benchmark": "traffic_merge --speed-only", "machine": MACHINE,
                       "copies": args.copies, "rates": rates,
                       "vs_raw": {k: v / raw for k, v in rates.items()}, "checks": checks,
                       "command": "flock /tmp/rlsuite-heavy.lock .venv/bin/python "
                       "benchmarks/traffic_merge.py " + " ".join(argv if argv is not None else sys.argv[1:])},
                      f, indent=2)  # fmt: skip
        console.print(f"results: {path}")
        return 0 if all(checks.values()) else 1
    seeds = list(range(1000, 1000 + args.episodes))
    out: dict = {"benchmark": "traffic_merge", "machine": MACHINE, "controller": args.controller,
                 "seeds": seeds, "flow_all_human": FLOW_HUMAN, "variants": {},
                 "command": "flock /tmp/rlsuite-heavy.lock .venv/bin/python "
                 "benchmarks/traffic_merge.py " + " ".join(argv if argv is not None else sys.argv[1:])}  # fmt: skip
    if os.path.isfile(os.path.join(args.controller, "rlsuite.json")):
        with open(os.path.join(args.controller, "rlsuite.json")) as f:
            out["controller_note"] = json.load(f).get("note", "")
    t = Table(title=f"Flow's merge, {args.episodes} episodes each (750 s), mean speed (m/s)")
    for c in ("variant", "controller", "mean speed", "/ all-human", "outflow (veh/h)",
              "on road", "waiting to enter", "speed incl. waiting", "Flow (m/s)",
              "Flow / all-human"):  # fmt: skip
        t.add_column(c, justify="right")
    own = {0: args.controller, 1: args.controller_1, 2: args.controller_2}
    out["controllers"] = own
    for v, share in VARIANTS.items():
        cfg = {"av_share": share}
        rows = {"learned": evaluate(own[v], cfg, seeds)}
        if v:
            rows[MERGE0_ROW] = evaluate(args.controller, cfg, seeds)
        for b in BASELINES:
            rows[b] = evaluate(b, cfg, seeds)
        rows[EntranceMeter.name] = evaluate("meter", cfg, seeds)
        human = all_human(cfg, seeds)
        rows["all-human"] = with_waiting({
            k: float(np.mean([h[k] for h in human]))
            for k in ("mean_speed", "throughput_veh_h", "vehicles", "waiting_to_enter")
        })  # fmt: skip
        hv = rows["all-human"]["mean_speed"]
        for name, r in rows.items():
            r["ratio"] = r["mean_speed"] / hv
            flow = {"learned": FLOW[v][0], "all-human": FLOW_HUMAN}.get(name)
            t.add_row(f"merge {v} ({share:.0%})", name, f"{r['mean_speed']:.2f}",
                      f"{r['ratio']:.2f}", f"{r['throughput_veh_h']:.0f}",
                      f"{r['vehicles']:.1f}", f"{r['waiting_to_enter']:.1f}",
                      f"{r['speed_with_waiting']:.2f}",
                      "" if flow is None else f"{flow:.2f}" + (f" ({FLOW[v][1]})" if name == "learned" else ""),
                      "" if flow is None else f"{flow / FLOW_HUMAN:.2f}")  # fmt: skip
        out["variants"][str(v)] = {"av_share": share, "rows": rows,
                                   "flow_learned": FLOW[v][0], "flow_algorithm": FLOW[v][1]}  # fmt: skip
        console.print(
            f"merge {v}: learned {rows['learned']['mean_speed']:.2f} m/s, all-human {hv:.2f}"
        )
    console.print(t)
    cfg0 = {"av_share": VARIANTS[0]}
    series = {"learned": speed_series(args.controller, cfg0, seeds[0])}
    for b in BASELINES:
        series[b] = speed_series(b, cfg0, seeds[0])
    h = all_human(cfg0, seeds[:1])[0]["series"]
    series["all-human"] = {k: h[k].tolist() for k in ("t", "mean_speed", "outflow")}
    out["series_merge0"] = series
    ratio = out["variants"]["0"]["rows"]["learned"]["ratio"]
    checks = {f"merge 0: learned / all-human >= {RATIO} (Flow 2.02), measured here": ratio >= RATIO}
    if args.speed:
        rates = speed(args.copies, console)
        raw = next(iter(rates.values()))
        sampler = rates["platform sampler, 1 RLlib multi-agent env runner x 1 MergeMultiEnv"]
        out["sampling"] = {"rates": rates, "copies": args.copies,
                           "runner_vs_raw_per_core": sampler / raw,
                           "merge_v0_vector_runner_vs_raw_per_core": list(rates.values())[-1] / raw}  # fmt: skip
        checks["platform sampler >= 50% of the raw libsumo loop per core"] = sampler / raw >= 0.5
    out["checks"] = checks
    for k, ok in checks.items():
        console.print(f"{'PASS' if ok else 'FAIL'}  {k}")
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, f"{args.out}.json"), "w") as f:
        json.dump(out, f, indent=2, default=float)
    _plot(out, os.path.join(RESULTS, f"{args.out}.png"))
    console.print(f"results: {os.path.join(RESULTS, args.out)}.json and .png")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
