"""Register the queryopt envs (nothing else happens at import: no server starts)."""

from rlsuite.platform import envs

ENVS = {
    "rlsuite/QueryRewrite-v0": {
        "entry_point": ".rewrite:QueryRewriteEnv",
        "default_config": {"workload": "joins"},
        "description": "rewrite SQL queries on PostgreSQL with semantics-preserving rules; "
        "reward -runtime",
    },
    "rlsuite/QueryRewriteReplay-v0": {
        "entry_point": ".replay:ReplayRewriteEnv",
        "default_config": {"workload": "joins"},
        "description": "rewrite decisions replayed from pg_qopt's experience store; "
        "reward -relative runtime",
    },
    "rlsuite/SparkQueryRewrite-v0": {
        "entry_point": ".rewrite:QueryRewriteEnv",
        "default_config": {"workload": "joins", "engine": "spark"},
        "description": "rewrite SQL queries on Spark SQL (rules, join hints, AQE switches); "
        "reward -relative runtime",
    },
}
"""The queryopt envs, by id (the keywords of :func:`rlsuite.platform.envs.register`)."""

envs.register_table(__name__, ENVS)
