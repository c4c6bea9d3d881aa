"""Robot half of the hierarchy app: hierarchical imitation for pick-and-place in pybullet.

- :mod:`.sim`: the pybullet adapter (the only module importing pybullet);
- :mod:`.env`: ``PickPlaceEnv`` (``rlsuite/PickPlace-v0``), tasks ``pick_place`` and ``stack``;
- :mod:`.program`: the robot's procedure library as a ``procedures.spec.HierarchySpec``,
  its input view and the controller running ``procedures.executor.Executor`` (no executor of
  its own);
- :mod:`.expert`: the scripted expert; :mod:`.recording`: its demonstrations, recorded on
  Ray, saved and loaded;
- :mod:`.model`: the learned ``procedures.model.ProcedureModel`` (strong; weak by hard EM,
  on ``procedures.segmentation``), flat cloning, and their files;
- :mod:`.experiment`: train-and-evaluate runs, demonstration sweeps, skill reuse;
- :mod:`.cli`: the ``robot-demos`` and ``robot`` subcommands of ``hier-train``;
- :mod:`.demo`: the ``make demo`` section.
"""
