"""The hierarchy app: hierarchical imitation, where procedures call sub-procedures, act and
terminate, learned from demonstrations with the call stack (strong supervision) or without
(weak).

- :mod:`.procedures`: the procedure model shared by both halves (specs, executor, traces,
  model, training, weak supervision);
- :mod:`.envs`: the app's envs, registered by id;
- :mod:`.synthesis`: program synthesis, long-hand addition (PHP / NPI);
- :mod:`.robot`: pick-and-place in pybullet;
- :mod:`.cli`: ``hier-train``; :mod:`.demo`: the app's section of ``make demo``.
"""
