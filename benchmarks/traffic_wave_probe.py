"""Can a hand-written AV dissolve a stop-and-go wave that has already formed?

The learned ring AV is evaluated under Flow's env protocol: 750 human-driven warm-up
steps (the wave has formed), then 3000 controlled steps. This probe asks whether any of
the hand-written controllers, some given the answer (the ring's v_eq), gets there:

* ``pi``: PI with saturation, 300 s, and also 800 s with the last 300 s measured (does
  the wave die out given more time?);
* ``followerstopper U=0.9 v_eq``: FollowerStopper told the ring's optimum (an oracle);
* ``hold back, then 0.97 v_eq``: FollowerStopper at 2 m/s for 60 s (the AV opens a gap
  for the jam to drain into), then at 0.97 v_eq (an oracle);
* ``idm T=4 s``: a conservative car-follower (4 s time headway, gentle a = 0.3).

In-process on one core (libsumo), seeds 0..E-1, at 220, 230 and 270 m.

Usage:
    flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_wave_probe.py [--episodes 2]

Writes benchmarks/results/traffic/traffic_wave_probe.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

from rlsuite.bench import results_dir

RESULTS = results_dir("traffic")
LENGTHS = (220, 230, 270)


@dataclass
class HoldBackThenCruise:
    """FollowerStopper at ``slow`` m/s for ``hold_s`` seconds, then at ``cruise`` m/s."""

    slow: float
    hold_s: float
    cruise: float
    sim_step: float = 0.1
    name: str = "hold back, then 0.97 v_eq"

    def reset(self, seed: int | None = None) -> None:
        from rlsuite.apps.traffic.controllers import FollowerStopper

        self.fs = FollowerStopper(v_des=self.slow)
        self.t = 0

    def act(self, obs):
        self.t += 1
        if self.t * self.sim_step >= self.hold_s:
            self.fs.v_des = self.cruise
        return self.fs.act(obs)


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console
    from rich.table import Table

    from rlsuite.apps.traffic.controllers import FollowerStopper, IDMController, PISaturation
    from rlsuite.apps.traffic.envs.ring import FLOW_V_EQ, RingEnv
    from rlsuite.platform.evaluation import Scenario, run_episode

    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--episodes", type=int, default=2)
    args = p.parse_args(argv)
    console = Console(width=140)

    def cases(length: int):
        v_eq = FLOW_V_EQ[length]
        yield "pi", PISaturation(), {}
        yield "pi, 800 s (last 300 s)", PISaturation(), dict(horizon=8000, measure_after=5000)
        yield "followerstopper U=0.9 v_eq", FollowerStopper(v_des=0.9 * v_eq), {}
        yield "hold back, then 0.97 v_eq", HoldBackThenCruise(2.0, 60.0, 0.97 * v_eq), {}
        yield "idm T=4 s", IDMController(T=4.0, a=0.3, noise=0.0), {}

    rows = []
    t0 = time.time()
    for length in LENGTHS:
        for name, ctl, extra in cases(length):
            cfg = {
                **dict(ring_length=length, warmup_steps=750, horizon=3000, bunching=20.0),
                **extra,
            }  # fmt: skip  (bunched: the wave has formed when control starts)
            speeds = []
            for seed in range(args.episodes):
                env = RingEnv(backend="libsumo", **cfg)
                try:
                    row = run_episode(env, ctl, Scenario("rlsuite/Ring-v0", cfg, seed))
                finally:
                    env.close()
                speeds.append(row["mean_speed"])
            v = float(np.mean(speeds))
            rows.append(dict(ring_length=length, controller=name, mean_speed=v,
                             frac_of_v_eq=v / FLOW_V_EQ[length], config=cfg))  # fmt: skip
            console.print(
                f"{length} m {name:28s} {v:.2f} m/s ({v / FLOW_V_EQ[length]:.0%} of v_eq)"
            )
    wall = time.time() - t0
    table = Table(
        title=f"a formed wave against hand-written AVs ({args.episodes} seeds, {wall:.0f} s)"
    )
    for col in ("controller", *(f"{L} m" for L in LENGTHS)):
        table.add_column(col, justify="right")
    for name in dict.fromkeys(r["controller"] for r in rows):
        cells = {r["ring_length"]: r for r in rows if r["controller"] == name}
        table.add_row(name, *(f"{cells[L]['mean_speed']:.2f} ({cells[L]['frac_of_v_eq']:.0%})"
                              for L in LENGTHS))  # fmt: skip
    console.print(table)
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "traffic_wave_probe.json"), "w") as f:
        json.dump(dict(benchmark="traffic_wave_probe", machine="2-core CPU, no GPU", rows=rows,
                       wall_s=wall, v_eq=FLOW_V_EQ,
                       command="flock /tmp/rlsuite-heavy.lock .venv/bin/python "
                       "benchmarks/traffic_wave_probe.py " + " ".join(argv or sys.argv[1:])),
                  f, indent=2)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
