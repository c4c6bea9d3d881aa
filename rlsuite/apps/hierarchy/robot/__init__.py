"""Robot half of the hierarchy app: hierarchical imitation for pick-and-place in pybullet.

- :mod:`.sim`: the pybullet adapter (the only module importing pybullet);
- :mod:`.env`: ``PickPlaceEnv`` (``rlsuite/PickPlace-v0``), tasks ``pick_place`` and ``stack``;
- :mod:`.program`: the robot's procedure library as a ``procedures.HierarchySpec``, its input
  view and the controller running ``procedures.Executor`` (no executor of its own);
- :mod:`.expert`: the scripted expert; :mod:`.demos`: demonstrations, recorded on Ray;
- :mod:`.model`: the learned ``procedures.ProcedureModel`` (strong; weak by hard EM) and flat
  cloning;
- :mod:`.experiment`: train-and-evaluate runs, demonstration sweeps, skill reuse;
- :mod:`.cli`: the ``robot-demos`` and ``robot`` subcommands of ``hier-train``;
- :mod:`.demo`: the ``make demo`` section.
"""
