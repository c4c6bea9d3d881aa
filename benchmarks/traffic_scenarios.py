"""Old name of ``rlsuite bench run traffic_scenarios`` (declared in traffic/scenarios.py)."""

from rlsuite.bench.runner import alias

if __name__ == "__main__":
    alias("traffic_scenarios")
