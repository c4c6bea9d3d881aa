"""Old name of ``rlsuite bench run traffic_signals`` (declared in traffic/signals.py)."""

from rlsuite.bench.runner import alias

if __name__ == "__main__":
    alias("traffic_signals")
