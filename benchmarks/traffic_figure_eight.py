"""Old name of ``rlsuite bench run traffic_figure_eight`` (declared in traffic/figure_eight.py)."""

from rlsuite.bench.runner import alias

if __name__ == "__main__":
    alias("traffic_figure_eight")
