"""Can a hand-written AV dissolve a stop-and-go wave that has already formed?

The learned ring AV is evaluated under Flow's env protocol: 750 human-driven warm-up steps
(bunched by 20 m: the wave has formed), then 3000 controlled steps. This probe asks whether
a hand-written controller, some told the answer (the ring's v_eq), gets there: PI with
saturation (300 s, and 800 s with the last 300 s measured), FollowerStopper at 0.9 v_eq, a
FollowerStopper that holds back at 2 m/s for 60 s then cruises at 0.97 v_eq, and a
conservative IDM (T = 4 s). In-process on one core (libsumo), seeds 0..E-1, at 220, 230
and 270 m. Writes ``traffic_wave_probe.json``.
"""

from dataclasses import dataclass

from rlsuite.bench import Benchmark

LENGTHS = (220, 230, 270)


@dataclass(frozen=True)
class Settings:
    episodes: int = 2
    """seeds 0..E-1 per cell"""


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


def cases(length: int):
    from rlsuite.apps.traffic.controllers import FollowerStopper, IDMController, PISaturation
    from rlsuite.apps.traffic.envs.ring import FLOW_V_EQ

    v_eq = FLOW_V_EQ[length]
    yield "pi", PISaturation(), {}
    yield "pi, 800 s (last 300 s)", PISaturation(), dict(horizon=8000, measure_after=5000)
    yield "followerstopper U=0.9 v_eq", FollowerStopper(v_des=0.9 * v_eq), {}
    yield "hold back, then 0.97 v_eq", HoldBackThenCruise(2.0, 60.0, 0.97 * v_eq), {}
    yield "idm T=4 s", IDMController(T=4.0, a=0.3, noise=0.0), {}


def run(ctx) -> int:
    import numpy as np

    from rlsuite.apps.traffic.envs.ring import FLOW_V_EQ, RingEnv
    from rlsuite.platform.evaluation import Scenario, run_episode

    rows = []
    for length in LENGTHS:
        for name, ctl, extra in cases(length):
            cfg = {**dict(ring_length=length, warmup_steps=750, horizon=3000, bunching=20.0),
                   **extra}  # fmt: skip
            speeds = []
            for seed in range(ctx.settings.episodes):
                env = RingEnv(backend="libsumo", **cfg)
                try:
                    speeds.append(
                        run_episode(env, ctl, Scenario("rlsuite/Ring-v0", cfg, seed))["mean_speed"]
                    )
                finally:
                    env.close()
            v = float(np.mean(speeds))
            rows.append(dict(ring_length=length, controller=name, mean_speed=v,
                             frac_of_v_eq=v / FLOW_V_EQ[length], config=cfg))  # fmt: skip
            ctx.say(f"{length} m {name:28s} {v:.2f} m/s ({v / FLOW_V_EQ[length]:.0%} of v_eq)")
    ctx.table([{k: v for k, v in r.items() if k != "config"} for r in rows],
              f"a formed wave against hand-written AVs ({ctx.settings.episodes} seeds)")  # fmt: skip
    ctx.save("traffic_wave_probe", dict(rows=rows, v_eq=FLOW_V_EQ))
    return 0


BENCHMARK = Benchmark(run=run, settings=Settings, quick=dict(episodes=1))
