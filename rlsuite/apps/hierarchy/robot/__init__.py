"""Robot half of the hierarchy app: hierarchical imitation for pick-and-place in pybullet.

- :mod:`.sim`: the pybullet adapter (the only module importing pybullet);
- :mod:`.env`: ``PickPlaceEnv`` (``rlsuite/PickPlace-v0``), tasks ``pick_place`` and ``stack``;
- :mod:`.program`: procedures with a call stack (the executor);
- :mod:`.expert`: the scripted expert; :mod:`.demos`: demonstrations, recorded on Ray;
- :mod:`.model`: hierarchical procedures (strong / weak supervision) and flat cloning;
- :mod:`.experiment`: train-and-evaluate runs, demonstration sweeps, skill reuse;
- :mod:`.cli`: the ``robot-demos`` and ``robot`` subcommands of ``hier-train``;
- :mod:`.demo`: the ``make demo`` section.
"""
