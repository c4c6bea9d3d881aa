"""Learning table, ES rows: the ``es`` plan on MuJoCo against Salimans et al. 2017, Table 3."""

from rlsuite.bench import Benchmark, Row, Value, pub


def _to(task, impl, share, target, env, published, what="ARS-style"):
    """Env steps to ``share`` of TRPO's return (``target``) against Salimans et al.'s."""
    return Row("platform", f"`es` plan ({what}) to {target} ({share} of TRPO), {env}-v5",
               "env steps, median of 3 seeds", "platform_learning_es.json",
               Value(("summary", task, impl, f"{share} of TRPO", "median_env_steps")),
               pub(f"Salimans et al. 2017, Table 3, {env}-v1", published),
               f"rlsuite bench run platform_learning_es --tasks {task} --impls {impl} --seeds 0,1,2 "
               "--resume", fmt="{:,.0f}", lower_is_better=True)  # fmt: skip


BENCHMARK = Benchmark(
    script="platform_learning_es.py",
    quick=dict(tasks="es-swimmer", impls="ars_n8", seeds="0", max_env_steps=20_000),
    seeds=True,
    resume=True,
    rows=(
        _to("es-halfcheetah", "ars_zoo", "50%", 793.6, "HalfCheetah", 830_000),
        _to("es-halfcheetah", "ars_zoo", "75%", 1589.8, "HalfCheetah", 1_420_000),
        _to("es-swimmer", "ars_n8", "75%", 99.7, "Swimmer", 1_230_000, "ARS, 8 directions"),
    ),
)
