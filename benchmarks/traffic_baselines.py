"""Old name of ``rlsuite bench run traffic_baselines`` (declared in traffic/baselines.py)."""

from rlsuite.bench.runner import alias

if __name__ == "__main__":
    alias("traffic_baselines")
