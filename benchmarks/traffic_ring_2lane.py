"""Old name of ``rlsuite bench run traffic_ring_2lane`` (declared in traffic/ring_2lane.py)."""

from rlsuite.bench.runner import alias

if __name__ == "__main__":
    alias("traffic_ring_2lane")
