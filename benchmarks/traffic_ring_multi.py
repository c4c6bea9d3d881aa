"""Old name of ``rlsuite bench run traffic_ring_multi`` (declared in traffic/ring_multi.py)."""

from rlsuite.bench.runner import alias

if __name__ == "__main__":
    alias("traffic_ring_multi")
