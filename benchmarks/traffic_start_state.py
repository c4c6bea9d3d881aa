"""Old name of ``rlsuite bench run traffic_start_state`` (declared in traffic/start_state.py)."""

from rlsuite.bench.runner import alias

if __name__ == "__main__":
    alias("traffic_start_state")
