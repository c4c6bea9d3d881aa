"""The queryopt app: a DQN that rewrites SQL for PostgreSQL, and the pg_qopt plugin that serves it.

Rewrite rules (``rules``), the ``Rewriter`` protocol (``rewriter``), the MDP
(``envs``), training (``train``), benchmarks (``bench``), ``qopt-bench`` (``cli``)
and the in-server plugin (``plugin``); see README.md beside this file.
"""
