"""Old name of ``rlsuite bench run queryopt_tpch`` (declared in queryopt/tpch.py)."""

from rlsuite.bench.runner import alias

if __name__ == "__main__":
    alias("queryopt_tpch")
