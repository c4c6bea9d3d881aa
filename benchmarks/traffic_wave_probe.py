"""Old name of ``rlsuite bench run traffic_wave_probe`` (declared in traffic/wave_probe.py)."""

from rlsuite.bench.runner import alias

if __name__ == "__main__":
    alias("traffic_wave_probe")
