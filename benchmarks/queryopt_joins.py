"""Old name of ``rlsuite bench run queryopt_joins`` (declared in queryopt/joins.py)."""

from rlsuite.bench.runner import alias

if __name__ == "__main__":
    alias("queryopt_joins")
