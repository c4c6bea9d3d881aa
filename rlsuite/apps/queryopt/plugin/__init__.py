"""pg_qopt: the query-optimizer app's rewriter inside PostgreSQL.

- ``pg_qopt.c`` + ``Makefile``: the PostgreSQL 15 extension (planner, executor,
  utility and EXPLAIN hooks), built with PGXS by :mod:`.build`.
- :mod:`.modelserver`: the model server it asks (cached decisions per query shape);
  :mod:`.protocol` its wire protocol and sockets, :mod:`.decider` the rewriters it
  serves, :mod:`.ledger` its counters and the rewards it records.
- :mod:`.cli`: ``qopt-bench serve`` and ``qopt-bench plugin {install,status}``.
"""
