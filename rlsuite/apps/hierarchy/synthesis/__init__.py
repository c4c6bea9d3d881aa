"""Program synthesis by hierarchical imitation: long-hand addition (PHP, Fox et al. 2018)
and NPI's bubble sort (Reed & de Freitas 2016).

- :mod:`.family`: :class:`~.family.ProgramFamily` (a hierarchy, its env, its teacher and
  their glue), the rollout, demonstrations (strong: with the call stack; weak: actions
  only) and the controller that runs procedures in a family's env;
- :mod:`.program`: the addition hierarchy (ADD -> ADD1 -> WRITE, CARRY, LSHIFT) and its
  scripted teacher on ``rlsuite/Addition-v0``;
- :mod:`.sort`: the bubble-sort hierarchy (BUBBLESORT -> BUBBLE -> COMPSWAP, RSHIFT;
  RESET -> LSHIFT) and its scripted teacher on ``rlsuite/Sort-v0``;
- :mod:`.programs`: the families by name (``hier-train synthesis --program``);
- :mod:`.baselines`: flat LSTM imitation and an NPI-style LSTM core, for any family;
- :mod:`.experiment`: train, evaluate in parallel (``rlsuite.platform.evaluation``), table,
  JSON and PNG; what ``hier-train synthesis`` runs.

The model itself (:mod:`rlsuite.apps.hierarchy.procedures`) is shared with the robot half.
Weak supervision (:mod:`rlsuite.apps.hierarchy.procedures.weak`) sums exactly over every
hidden call stack (pcs clipped per procedure, so the addition hierarchy has 64 stack states
and 642 transitions); PHP instead trains level by level because its exact inference grows
with depth. Here the whole stack is small enough to infer at once, which is the
level-by-level procedure's limit, not an approximation of it.
"""
