"""The ``apex`` plan (Ape-X's asynchronous prioritised replay): its learning test and its
throughput against ``replay`` (RLlib's synchronous DQN) at the same number of runners.

``--part learning``: RLlib's old tuned example ``cartpole-apex.yaml``: CartPole-v1, 3
runners (one env each), 2 replay shards, a 20k buffer, the target network every 500 env
steps, a replay ratio of 4 (rllib_contrib's ``apex_dqn_cartpole_v1.py``). Pass criterion:
a smoothed return >= 150 within 250k env steps, on every seed. Writes
``platform_apex_learning.json`` (per seed: env steps and wall seconds to 150, the curve).

``--part throughput``: CartPole-v1 with each plan's defaults (32 envs per runner), 1 and 2
runners: env steps sampled per second and learner updates per second over
``--measure-s`` seconds after one warm-up iteration, one run per cell, the same machine
and the same run. ``apex`` runs without a replay-ratio limit (Ape-X: the learner updates
as fast as it can). Target: ``apex`` >= 1.5x ``replay``'s samples/s with its learner
busy >= 80% of the wall time. Writes ``platform_apex_throughput.json``.

The scaling to 15 runners on the 16-core device machine (the runners of
``rlsuite bench run platform_device``) is not measured: no such machine has been lent.
"""

from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, command, here, pub


@dataclass(frozen=True)
class Settings:
    part: str = "learning"
    """learning or throughput"""
    max_env_steps: int = 250_000
    """learning: the budget of env steps per seed"""
    target: float = 150.0
    """learning: the smoothed return to reach"""
    max_wall_s: float = 1800.0
    """learning: give a seed up after this long"""
    runners: str = "1,2"
    """throughput: runner counts"""
    measure_s: float = 30.0
    """throughput: seconds measured per cell"""


def run(ctx):
    import ray

    from rlsuite.platform import cluster
    from rlsuite.platform.benchmarking.apex_cells import learn, learning_summary, measure

    s = ctx.settings
    cluster.init()
    try:
        if s.part == "learning":
            seeds = ctx.seeds or (0, 1, 2)
            out = ctx.load("platform_apex_learning").get("seeds", {})
            for seed in seeds:
                if str(seed) not in out:
                    out[str(seed)] = learn(seed, s, ctx.say)
                    ctx.save("platform_apex_learning", learning_summary(out, s))
            summary = learning_summary(out, s)["summary"]
            ctx.table([summary], "apex, CartPole-v1 to 150")
            return ctx.verdict(
                {
                    f"every seed >= {s.target} within {s.max_env_steps:,} env steps": summary[
                        "all_reached"
                    ]
                }
            )
        if s.part == "throughput":
            cells = {}
            for n in [int(x) for x in s.runners.split(",")]:
                for name in ("replay", "apex"):
                    cells.setdefault(name, {})[str(n)] = measure(name, n, s.measure_s)
                    ctx.say(f"{name} {n} runners: {cells[name][str(n)]}")
            ratio = {
                n: cells["apex"][n]["samples_per_s"] / cells["replay"][n]["samples_per_s"]
                for n in cells["apex"]
            }
            ctx.save("platform_apex_throughput", dict(cells=cells, samples_ratio=ratio))
            ctx.table(
                [
                    dict(
                        plan=p,
                        runners=n,
                        **{
                            k: v
                            for k, v in c.items()
                            if k in ("samples_per_s", "updates_per_s", "learner_utilisation")
                        },
                    )
                    for p, cs in cells.items()
                    for n, c in cs.items()
                ],
                "env steps/s and updates/s, CartPole-v1",
            )
            return ctx.verdict(
                {
                    f"apex >= 1.5x replay's samples/s at {n} runners": r >= 1.5
                    for n, r in ratio.items()
                }
                | {
                    f"apex learner busy >= 80% at {n} runners": (
                        cells["apex"][n]["learner_utilisation"] or 0
                    )
                    >= 0.8
                    for n in cells["apex"]
                }
            )
        raise ValueError(f"--part must be learning or throughput, got {s.part!r}")
    finally:
        if ray.is_initialized():
            cluster.shutdown()


THROUGHPUT = command("platform_apex", "--part throughput --runners 1,2 --measure-s 30")
SAME_RUN = "`replay` (RLlib's synchronous DQN), same run"


def _rate(n: int, what: str, key: str) -> Row:
    return Row("platform", f"`apex` (Ape-X), {n} runner{'s' if n > 1 else ''}, CartPole-v1", what,
               "platform_apex_throughput.json", Value(("cells", "apex", str(n), key)),
               here(SAME_RUN, "cells", "replay", str(n), key), THROUGHPUT, fmt="{:,.0f}")  # fmt: skip


THROUGHPUT_ROWS = (
    Row(
        "platform",
        "`apex` (Ape-X) to 150, CartPole-v1 (RLlib's `cartpole-apex.yaml`: 3 runners, 2 replay shards)",
        "env steps to 150, median of 3 seeds",
        "platform_apex_learning.json",
        Value(("summary", "median_env_steps_to_target")),
        pub("the example's budget", 250_000),
        command("platform_apex", "--part learning --seeds 0,1,2"),
        fmt="{:,.0f}",
        lower_is_better=True,
    ),  # fmt: skip
    _rate(1, "env steps/s", "samples_per_s"),
    _rate(2, "env steps/s", "samples_per_s"),
    _rate(2, "learner updates/s", "updates_per_s"),
    *(
        Row(
            "platform",
            f"`apex` (Ape-X), {n} runner{'s' if n > 1 else ''}, CartPole-v1",
            "learner busy (share of wall time)",
            "platform_apex_throughput.json",
            Value(("cells", "apex", str(n), "learner_utilisation")),
            pub("target", 0.8),
            THROUGHPUT,
            fmt="{:.0%}",
        )
        for n in (1, 2)
    ),
)


BENCHMARK = Benchmark(
    run=run,
    settings=Settings,
    seeds=True,
    resume=True,
    quick=dict(part="throughput", runners="1", measure_s=3.0),
    rows=THROUGHPUT_ROWS,
)
