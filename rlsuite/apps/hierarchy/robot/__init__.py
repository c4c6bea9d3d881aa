"""Robot half of the hierarchy app: hierarchical imitation for Panda tasks in pybullet.

- :mod:`.sim`: the pybullet adapter (the only module importing pybullet);
- :mod:`.tasks`: the tasks (``pick_place``, ``stack`` and the long-horizon ``sort``,
  ``tower``, ``clear_then_place``: objects as observation slots, layouts, goal relations,
  the expert's root plan) and the observation layout they share;
- :mod:`.env`: ``PickPlaceEnv`` (``rlsuite/PickPlace-v0``), any of the tasks;
- :mod:`.grasp`: ``PandaGraspEnv`` (``rlsuite/PandaGrasp-v0``), one grasp of a random
  pybullet object (held-out objects apart), for QT-Opt;
- :mod:`.program`: the robot's procedure library as a ``procedures.spec.HierarchySpec``
  (one root per task over the shared PICK / PLACE), its input view and the controller
  running ``procedures.executor.Executor`` (no executor of its own);
- :mod:`.expert`: the scripted expert; :mod:`.recording`: its demonstrations, recorded on
  Ray, saved and loaded;
- :mod:`.model`: the learned ``procedures.model.ProcedureModel`` (strong; weak through
  :mod:`.weak`, hard EM on ``procedures.segmentation``), flat cloning, and their files;
  :mod:`.train_config`: ``TrainConfig``;
- :mod:`.experiment`: train-and-evaluate runs, demonstration sweeps, skill reuse;
- :mod:`.cli`: the ``robot-demos`` and ``robot`` subcommands of ``hier-train``;
- :mod:`.demo`: the ``make demo`` section.
"""
