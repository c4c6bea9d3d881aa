"""Register the queryopt envs (nothing else happens at import: no server starts)."""

from rlsuite.platform import envs

envs.register(
    "rlsuite/QueryRewrite-v0",
    "rlsuite.apps.queryopt.envs.rewrite:QueryRewriteEnv",
    default_config={"workload": "joins"},
    description="rewrite SQL queries on PostgreSQL with semantics-preserving rules; reward -runtime",
)
envs.register(
    "rlsuite/QueryRewriteReplay-v0",
    "rlsuite.apps.queryopt.envs.replay:ReplayRewriteEnv",
    default_config={"workload": "joins"},
    description="rewrite decisions replayed from pg_qopt's experience store; reward -relative runtime",
)
envs.register(
    "rlsuite/SparkQueryRewrite-v0",
    "rlsuite.apps.queryopt.envs.rewrite:QueryRewriteEnv",
    default_config={"workload": "joins", "engine": "spark"},
    description="rewrite SQL queries on Spark SQL (rules, join hints, AQE switches); reward -relative runtime",
)
