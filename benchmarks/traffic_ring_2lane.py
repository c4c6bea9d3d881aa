"""The two-lane ring (Kheterpal et al. 2018, "Flow: Deep RL for Control in SUMO"): baselines and
a learned AV that accelerates and changes lanes, on the same seeded episodes.

230 m, two lanes, 41 humans (SUMO's IDM with Flow's parameters and noise, SUMO's lane-change
model) and one AV (rlsuite/Ring2Lane-v0, scenario ``ring_2lane``). Episodes start from a
bunched start (40 m left empty), run 1000 human-driven warm-up steps (waves have formed in
both lanes) and then 1500 controlled steps of 0.1 s; the metric is the mean speed of all
42 vehicles over the controlled steps. Controllers:

    human            the AV is one more SUMO human (IDM + lane changes): all-human
    idm              the AV as a human car-follower (Python IDM + noise), keeping its lane
    followerstopper  Stern et al.'s FollowerStopper on the acceleration, keeping its lane
    pi               Stern et al.'s PI with saturation on the acceleration, keeping its lane
    pi + held lane requests (probe)
                     PI, and every 30 s it asks for the other lane for 15 s (a hand-written
                     probe of what lane changes can add; not a baseline, not in training)
    learned          the policy under --policy (acceleration and lane changes)

Published (Kheterpal et al. 2018): all-human 2.83 m/s, learned 3.11 m/s (+10%).

Pass criterion: learned mean speed >= 1.10 x all-human (``human``) measured here.

The shipped policy was trained from scratch with (its last checkpoint; one run resumed twice,
70 -> 110 -> 150 generations, 50 min; see its rlsuite.json note):
    nice -n 10 .venv/bin/traffic-train train --scenario ring_2lane --env-set lane_action=target \\
        --plan es --workers 2 --iterations 150 --plan-set lr=0.01 --plan-set sigma=0.03 \\
        --plan-set 'hidden=[32,32]' --plan-set recurrent=gru --plan-set cell_size=16 \\
        --plan-set common_env_seeds=true --run-dir runs/ring_2lane_es_gru_target
Its lane action picks a lane (``lane_action=target``); evaluation reads that from the checkpoint.

Sampling speed (``--speed``, written to traffic_ring_2lane_speed.json instead): env steps/s of
the platform's sampler (one RLlib env runner with the sync plan's PPO policy, one core) against
a raw libsumo loop of the same network (one ring: step + every vehicle's speed, position and
lane, no control, no noise, no policy); pass criterion >= 50% per core. The runner steps
``--rings`` two-lane rings in one SUMO simulation (``Ring2LaneVectorEnv``, the env's vector
entry point; an env step is one ring advancing 0.1 s); one scalar ``Ring2LaneEnv`` per runner,
the path before, is measured too. Measured with no warm-up, so that all count the same
simulation steps (the vector runner over whole 1500-step episodes of every ring); the envs in
this process are shown too.

Usage:
    flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_ring_2lane.py [--policy DIR] [--episodes 4]
    flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_ring_2lane.py --speed [--rings 32]

Writes benchmarks/results/traffic/traffic_ring_2lane.json, and the space-time diagrams (one panel per
lane) of the learned AV and of all-human on the first seed: traffic_ring_2lane_learned.png
and traffic_ring_2lane_human.png.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from rlsuite.apps.traffic.benchmarking import MACHINE, RESULTS, evaluate_controllers
from rlsuite.apps.traffic.benchmarking import sampler_rate as rllib_sampler_rate

ENV_ID = "rlsuite/Ring2Lane-v0"
POLICY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "policies", "ring_2lane_es")
PUBLISHED = {"all-human": 2.83, "learned": 3.11, "gain": 0.10}
"""Kheterpal et al. (2018): mean speeds (m/s) and the learned AV's gain."""
TARGET_GAIN = 0.10
PROBE = "pi + held lane requests (probe)"


class WeaveProbe:
    """A probe, not a baseline and not used in training: PI on the acceleration, and every
    ``period`` steps it asks for the other lane for ``hold`` steps in a row (one request per
    step: SUMO changes lanes only when the gaps are safe). It shows what lane changes can add
    on this ring: a single request per change is nearly always refused in the dense lanes."""

    name = PROBE

    def __init__(self, hold: int = 150, period: int = 300):
        from rlsuite.apps.traffic import scenarios

        factory, _ = scenarios.controller_for(scenarios.get("ring_2lane"), "pi", {})
        self.pi, self.hold, self.period, self.t = factory(), hold, period, 0

    def reset(self, seed: int | None = None) -> None:
        self.pi.reset(seed)
        self.t = 0

    def act(self, obs):
        a = self.pi.act(obs)
        self.t += 1
        if self.t % self.period < self.hold:
            a[1] = -1.0 if obs[3] > 0.5 else 1.0  # obs[3]: the AV's lane / (lanes - 1)
        return a


def raw_rate(steps: int) -> float:
    """Sim steps/s of the two-lane ring stepped directly through the adapter (libsumo)."""
    import numpy as np

    from rlsuite.apps.traffic.envs.ring_2lane import Ring2LaneConfig, Ring2LaneSimulation

    core = Ring2LaneSimulation(Ring2LaneConfig(warmup_steps=0, horizon=steps + 10))
    try:
        core.start(np.random.default_rng(0))
        assert core.sim.backend == "libsumo", core.sim.backend
        sim, ids = core.sim, core.ids
        t = time.perf_counter()
        for _ in range(steps):
            sim.step()
            sim.vehicle_lane_states(ids)
        return steps / (time.perf_counter() - t)
    finally:
        core.close()


def env_rate(steps: int) -> float:
    """Env steps/s of Ring2LaneEnv.step in this process (no warm-up), asking for lane changes."""
    import numpy as np

    from rlsuite.apps.traffic.envs.ring_2lane import Ring2LaneEnv

    env = Ring2LaneEnv(warmup_steps=0, horizon=1500)
    try:
        env.reset(seed=0)
        rng = np.random.default_rng(0)
        t = time.perf_counter()
        for _ in range(steps):
            _, _, term, trunc, _ = env.step([rng.uniform(-1, 1), rng.uniform(-1, 1)])
            if term or trunc:
                env.reset()
        return steps / (time.perf_counter() - t)
    finally:
        env.close()


def vector_rate(steps: int, rings: int) -> float:
    """Ring steps/s of Ring2LaneVectorEnv.step (``rings`` in one simulation) in this process
    (no warm-up), asking for lane changes."""
    import numpy as np

    from rlsuite.apps.traffic.envs.ring_2lane_vector import Ring2LaneVectorEnv

    env = Ring2LaneVectorEnv(num_envs=rings, warmup_steps=0, horizon=1500)
    try:
        env.reset(seed=0)
        rng = np.random.default_rng(0)
        n = max(steps // rings, 1)
        t = time.perf_counter()
        for _ in range(n):
            env.step(rng.uniform(-1, 1, (rings, 2)))
        return n * rings / (time.perf_counter() - t)
    finally:
        env.close()


def sampler_rate(steps: int, warmup_steps: int = 0, rings: int = 0) -> float:
    """Env steps/s of ONE RLlib env runner of the sync plan (PPO policy, no learning):
    ``rings`` two-lane rings in one simulation, or one scalar Ring2LaneEnv with 0."""
    cfg = {"warmup_steps": warmup_steps}
    if rings:
        return rllib_sampler_rate(ENV_ID, cfg, steps, num_envs_per_env_runner=rings)
    return rllib_sampler_rate(ENV_ID, cfg, steps, scalar=True)


def speed(args, console) -> int:
    raw = raw_rate(args.speed_steps)
    env = env_rate(args.speed_steps)
    vec = vector_rate(args.speed_steps, args.rings)
    scalar = sampler_rate(args.speed_steps)
    whole = max(args.speed_steps, args.rings * 1500)  # whole episodes of every ring
    sampler = sampler_rate(whole, rings=args.rings)
    sampler_flow = sampler_rate(whole, warmup_steps=1000, rings=args.rings)
    ratio = sampler / raw
    r = args.rings
    rows = {
        "raw libsumo loop, 1 ring (sim steps/s)": raw,
        "Ring2LaneEnv in this process (env steps/s)": env,
        f"Ring2LaneVectorEnv in this process, {r} rings in one simulation (ring steps/s)": vec,
        "platform sampler, 1 RLlib env runner x 1 Ring2LaneEnv (the path before; env steps/s)": scalar,
        f"platform sampler, 1 RLlib env runner x {r} rings in one simulation (ring steps/s)": sampler,
        f"the same with the 1000-step warm-up per 1500 ({r} rings; controlled steps/s)": sampler_flow,
    }
    for k, v in rows.items():
        console.print(f"{v:8.0f}  {k}")
    checks = {"sampler >= 50% of the raw libsumo loop per core": ratio >= 0.5}
    for k, ok in checks.items():
        console.print(f"{'PASS' if ok else 'FAIL'}  {k} ({ratio:.0%})")
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, f"{args.out}_speed.json")
    with open(path, "w") as f:
        json.dump(dict(machine=MACHINE, steps=args.speed_steps, rings=args.rings, rates=rows,
                       ratio=ratio, checks=checks,
                       command="flock /tmp/rlsuite-heavy.lock .venv/bin/python "
                       "benchmarks/traffic_ring_2lane.py " + " ".join(sys.argv[1:])),
                  f, indent=2)  # fmt: skip
    console.print(f"results: {path}")
    return 0 if all(checks.values()) else 1


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console
    from rich.table import Table

    from rlsuite.apps.traffic import scenarios
    from rlsuite.apps.traffic.plots import space_time_diagram
    from rlsuite.platform import envs, evaluation

    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--policy", default=POLICY, help="the learned policy (a checkpoint directory)")
    p.add_argument("--episodes", type=int, default=4, help="seeded episodes per controller")
    p.add_argument("--seed", type=int, default=1000, help="first seed")
    p.add_argument("--out", default="traffic_ring_2lane", help="results name")
    p.add_argument("--speed", action="store_true", help="measure sampling speed instead")
    p.add_argument("--speed-steps", type=int, default=6000, help="steps per speed measurement")
    p.add_argument("--rings", type=int, default=32,
                   help="two-lane rings per env runner in one SUMO simulation (--speed)")  # fmt: skip
    args = p.parse_args(argv)
    console = Console(width=140)
    if args.speed:
        return speed(args, console)
    scen = scenarios.get("ring_2lane")
    seeds = list(range(args.seed, args.seed + args.episodes))
    names = ["human", "idm", "followerstopper", "pi", PROBE, "learned"]

    def controller(name: str):
        if name == "learned":  # with the options its policy was trained with (lane_threshold)
            path = os.path.abspath(args.policy)
            return path, scenarios.with_policy_fields(ENV_ID, {}, path)
        if name == PROBE:
            return WeaveProbe, {}
        return scenarios.controller_for(scen, name, {})

    columns = dict(
        mean_speed="mean_speed", lane_0="mean_speed_lane_0", lane_1="mean_speed_lane_1",
        frac_below_0_5="frac_below_0_5", return_="return", lane_changes="lane_changes",
        refused="lane_changes_refused", human_lane_changes="human_lane_changes",
        av_left_lane_share="av_left_lane_share", collisions="collisions",
    )  # fmt: skip
    t0 = time.time()
    rows = evaluate_controllers(
        ENV_ID, names, controller, seeds, {}, columns,
        lambda r: f"{r['controller']}: mean speed {r['mean_speed']:.3f} m/s", console,
    )  # fmt: skip
    eval_s = time.time() - t0
    by = {r["controller"]: r for r in rows}
    human = by["human"]["mean_speed"]
    learned = by["learned"]["mean_speed"]
    gain = learned / human - 1
    checks = {f"learned >= (1 + {TARGET_GAIN:g}) x all-human mean speed": gain >= TARGET_GAIN}

    t = Table(title=f"two-lane ring, 230 m, 41 humans + 1 AV, seeds {seeds[0]}-{seeds[-1]}")
    for c in ("AV controller", "mean speed", "vs all-human", "lane 0", "lane 1",
              "AV lane changes (refused)", "human lane changes", "return"):  # fmt: skip
        t.add_column(c, justify="right")
    for r in rows:
        t.add_row(
            r["controller"], f"{r['mean_speed']:.3f}", f"{r['mean_speed'] / human - 1:+.1%}",
            f"{r['lane_0']:.2f}", f"{r['lane_1']:.2f}",
            f"{r['lane_changes']:.1f} ({r['refused']:.0f})", f"{r['human_lane_changes']:.1f}",
            f"{r['return_']:.1f}",
        )  # fmt: skip
    t.add_row("Kheterpal 2018", f"{PUBLISHED['learned']:.2f}", f"+{PUBLISHED['gain']:.0%}",
              "2.93", "3.30", "-", "-", "-")  # fmt: skip
    console.print(t)
    for k, ok in checks.items():
        console.print(f"{'PASS' if ok else 'FAIL'}  {k} ({gain:+.1%})")

    os.makedirs(RESULTS, exist_ok=True)
    pngs = {}
    for name in ("learned", "human"):
        ctrl, extra = controller(name)
        env = envs.make(ENV_ID, {**extra, "record": True})
        try:
            evaluation.run_episode(
                env, evaluation.build_controller(ctrl), evaluation.Scenario(ENV_ID, {**extra, "record": True}, seeds[0])
            )  # fmt: skip
            traj = env.unwrapped.trajectories()
        finally:
            env.close()
        pngs[name] = space_time_diagram(
            traj, os.path.join(RESULTS, f"{args.out}_{name}.png"),
            title=f"two-lane ring, {name}, seed {seeds[0]}",
        )  # fmt: skip
    out = dict(
        benchmark=args.out, machine=MACHINE, env_id=ENV_ID, seeds=seeds, policy=args.policy,
        rows=rows, published=PUBLISHED, gain_over_all_human=gain, checks=checks,
        eval_s=eval_s, space_time_png=pngs,
        command="flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_ring_2lane.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
    )  # fmt: skip
    path = os.path.join(RESULTS, f"{args.out}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=2, default=str)
    console.print(f"results: {path}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
