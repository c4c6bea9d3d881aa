"""rlsuite: RL-driven applications on one shared, distributed RL core (Ray RLlib + Tune)."""

__version__ = "0.1.0"
