"""Domain apps built on :mod:`rlsuite.platform`. Apps never import each other."""
