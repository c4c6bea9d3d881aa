"""What the ring's start state does to the task: Flow's even start against a bunched one.

Flow's ring trains from evenly spaced vehicles (bunching 0), so after the 750 warm-up steps
no wave has formed yet; a ring bunched by 20 m has a standing wave by then. For each start
(bunching 0, 20, 50) and length, on the same seeds: all-human (the AV driven by the IDM),
PI with saturation and a constant action of 0 under Flow's env protocol; the return under
Flow's reward; the speed spread at the end of the warm-up (a formed wave: > 1 m/s); and PI
at 230 m, bunched by 20 m, by warm-up length. In-process on one core (libsumo). Writes
``traffic_start_state.json``.
"""

from dataclasses import dataclass

from rlsuite.bench import Benchmark

LENGTHS = (220, 230, 260, 270)
STARTS = (0.0, 20.0, 50.0)
WARMUPS = (500, 750, 1000, 1500, 3000)


@dataclass(frozen=True)
class Settings:
    episodes: int = 2
    """seeds 0..N-1 per cell"""


class Constant:
    """The same acceleration at every step."""

    def __init__(self, a: float = 0.0):
        self.a = a

    def act(self, obs):
        import numpy as np

        return np.array([self.a], dtype=np.float32)


def episode(ctrl, seed: int, **cfg) -> dict[str, float]:
    import numpy as np

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


def run(ctx) -> int:
    import numpy as np

    from rlsuite.apps.traffic.controllers import IDMController, PISaturation
    from rlsuite.apps.traffic.envs.ring import equilibrium_speed

    seeds = range(ctx.settings.episodes)
    controllers = {"all-human": IDMController, "PI": PISaturation, "constant 0": Constant}
    cells = [(b, L, name) for b in STARTS for L in LENGTHS for name in controllers]
    rows = []
    for bunching, length, name in ctx.progress(cells, "starts x lengths x controllers"):
        eps = [
            episode(controllers[name](), s, ring_length=length, bunching=bunching) for s in seeds
        ]
        mean = {k: float(np.mean([e[k] for e in eps]))
                for k in ("mean_speed", "frac_below_0_5", "return", "spread_after_warmup")}  # fmt: skip
        rows.append(dict(bunching=bunching, ring_length=length, controller=name,
                         mean_speed=mean["mean_speed"], frac_below_0_5=mean["frac_below_0_5"],
                         flow_return=mean["return"], spread_after_warmup=mean["spread_after_warmup"],
                         uniform_flow=equilibrium_speed(length)))  # fmt: skip
    phase = {
        w: float(np.mean([episode(PISaturation(), s, ring_length=230, bunching=20.0,
                                  warmup_steps=w)["mean_speed"] for s in seeds]))
        for w in WARMUPS
    }  # fmt: skip
    ctx.table(rows, "Flow's env protocol (750 warm-up steps, 300 s measured)")
    ctx.say("PI at 230 m, bunching 20 m, by warm-up steps: "
            + ", ".join(f"{w}: {v:.2f}" for w, v in phase.items()))  # fmt: skip
    ctx.save("traffic_start_state", dict(episodes=ctx.settings.episodes, rows=rows,
                                         pi_230_bunched_by_warmup=phase))  # fmt: skip
    return 0


BENCHMARK = Benchmark(run=run, settings=Settings, quick=dict(episodes=1))
