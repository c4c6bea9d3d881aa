"""What the ring's start state does to the task: Flow's even start against a bunched one.

Flow's ring trains from evenly spaced vehicles (its ``Env`` places them with the
``InitialConfig()`` frozen at construction, bunching 0), so after the 750 warm-up steps
no wave has formed yet. A ring bunched by 20 m has a standing wave by then. For each
start (bunching 0, 20, 50) and length, this runs, on the same seeds:

* all-human (the AV driven by the IDM), PI with saturation, and a constant action of 0
  (the AV keeps its speed unless SUMO's safe speed brakes it), 750 warm-up steps then
  3000 controlled steps, all measured (Flow's env protocol);
* the episode return under Flow's reward (0.2 * mean speed - 4 * |a|);
* the speed spread across vehicles at the end of the warm-up (a formed wave: > 1 m/s);
* PI at 230 m, bunched by 20 m, by warm-up length (the wave's phase when control starts).

In-process on one core (libsumo).

Usage:
    .venv/bin/python benchmarks/traffic_start_state.py [--episodes 2]

Writes benchmarks/results/traffic/traffic_start_state.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from rlsuite.bench import results_dir

RESULTS = results_dir("traffic")
LENGTHS = (220, 230, 260, 270)
STARTS = (0.0, 20.0, 50.0)
WARMUPS = (500, 750, 1000, 1500, 3000)


class Constant:
    """The same acceleration at every step."""

    def __init__(self, a: float = 0.0):
        self.a = a

    def act(self, obs):
        return np.array([self.a], dtype=np.float32)


def episode(ctrl, seed: int, **cfg) -> dict[str, float]:
    from rlsuite.apps.traffic.envs.ring import RingEnv

    env = RingEnv(backend="libsumo", **cfg)
    try:
        obs, _ = env.reset(seed=seed)
        spread = float(np.std(env.core.v))
        if hasattr(ctrl, "reset"):
            ctrl.reset(seed)
        ret, done = 0.0, False
        while not done:
            obs, r, term, trunc, _ = env.step(ctrl.act(obs))
            ret += r
            done = term or trunc
        return {**env.episode_metrics(), "return": ret, "spread_after_warmup": spread}
    finally:
        env.close()


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console
    from rich.table import Table

    from rlsuite.apps.traffic.controllers import IDMController, PISaturation
    from rlsuite.apps.traffic.envs.ring import equilibrium_speed

    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--episodes", type=int, default=2, help="seeds 0..N-1 per cell")
    args = p.parse_args(argv)
    console = Console(width=140)
    seeds = range(args.episodes)
    controllers = {"all-human": IDMController, "PI": PISaturation, "constant 0": Constant}
    t0 = time.time()
    rows = []
    for bunching in STARTS:
        for length in LENGTHS:
            for name, make in controllers.items():
                eps = [episode(make(), s, ring_length=length, bunching=bunching) for s in seeds]
                rows.append(
                    dict(
                        bunching=bunching,
                        ring_length=length,
                        controller=name,
                        mean_speed=float(np.mean([e["mean_speed"] for e in eps])),
                        frac_below_0_5=float(np.mean([e["frac_below_0_5"] for e in eps])),
                        flow_return=float(np.mean([e["return"] for e in eps])),
                        spread_after_warmup=float(np.mean([e["spread_after_warmup"] for e in eps])),
                        uniform_flow=equilibrium_speed(length),
                    )  # fmt: skip
                )
            console.print(f"bunching {bunching:g} m, {length} m done ({time.time() - t0:.0f} s)")
    phase = {
        w: float(
            np.mean(
                [
                    episode(PISaturation(), s, ring_length=230, bunching=20.0, warmup_steps=w)[
                        "mean_speed"
                    ]
                    for s in seeds
                ]
            )
        )
        for w in WARMUPS
    }
    t = Table(title="Flow's env protocol (750 warm-up steps, 300 s measured): mean speed, m/s")
    for c in ("start", "controller", *[f"{L} m" for L in LENGTHS], "return at 230 m"):
        t.add_column(c, justify="right")
    for bunching in STARTS:
        for name in controllers:
            cells = {r["ring_length"]: r for r in rows
                     if r["bunching"] == bunching and r["controller"] == name}  # fmt: skip
            t.add_row(
                f"bunching {bunching:g} m",
                name,
                *[
                    f"{cells[L]['mean_speed']:.2f} ({cells[L]['mean_speed'] / cells[L]['uniform_flow']:.0%})"
                    for L in LENGTHS
                ],  # fmt: skip
                f"{cells[230]['flow_return']:.0f}",
            )
    console.print(t)
    spread = {
        b: [
            r["spread_after_warmup"] for r in rows if r["bunching"] == b and r["controller"] == "PI"
        ]
        for b in STARTS
    }
    console.print(
        "speed spread after the warm-up (m/s, by length): "
        + "; ".join(
            f"bunching {b:g}: " + ", ".join(f"{x:.2f}" for x in v) for b, v in spread.items()
        )
    )
    console.print(
        "PI at 230 m, bunching 20 m, by warm-up steps: "
        + ", ".join(f"{w}: {v:.2f}" for w, v in phase.items())
    )
    os.makedirs(RESULTS, exist_ok=True)
    out = dict(benchmark="traffic_start_state", machine="2-core CPU, no GPU", episodes=args.episodes,
               rows=rows, pi_230_bunched_by_warmup=phase, wall_s=time.time() - t0,
               command="benchmarks/traffic_start_state.py " + " ".join(argv or sys.argv[1:]))  # fmt: skip
    with open(os.path.join(RESULTS, "traffic_start_state.json"), "w") as f:
        json.dump(out, f, indent=2)
    console.print(f"results: {os.path.join(RESULTS, 'traffic_start_state.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
