"""Old name of ``rlsuite bench run traffic_train`` (shipped policies' notes quote it)."""

from rlsuite.bench.runner import alias

if __name__ == "__main__":
    alias("traffic_train")
