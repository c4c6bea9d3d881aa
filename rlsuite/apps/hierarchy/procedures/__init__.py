"""Parametrized hierarchical procedures (PHP, Fox et al., ICLR 2018): the model shared by
the program-synthesis and the robot halves of the hierarchy app.

A *hierarchy* is a set of procedures with one root. A procedure, given the observation,
its program counter ``pc`` (the number of operations it has completed, clipped at
``max_pc``) and the arguments it was called with,

- decides whether to terminate (its *termination predicate*; never at ``pc == 0``), and if not
- chooses an *operation* (its *operation network*): an elementary action with the action's
  arguments, or a call of a sub-procedure with the callee's arguments.

The modules, from the ground up:

- :mod:`.spec`: :class:`~.spec.HierarchySpec` and its action, procedure and argument specs;
- :mod:`.traces`: :class:`~.traces.Decision`, strong and weak :class:`~.traces.Trace` s,
  trace files (:func:`~.traces.save_traces` / :func:`~.traces.load_traces`);
- :mod:`.executor`: the call stack and the :class:`~.executor.Executor`, which runs the
  scripted teachers (recording strong traces: every decision with the stack, or weak ones:
  observations and actions only) and the learned model alike;
- :mod:`.calls`: call trees (:func:`~.calls.call_tree`, :func:`~.calls.trace_from_calls`);
- :mod:`.model`: :class:`~.model.ProcedureModel`, one operation network and termination
  predicate per procedure, its strong loss and its files; :class:`~.model.InputView` lets
  each procedure see the observation its own way;
- :mod:`.weak`: exact weak supervision, :class:`~.weak.WeakLattice`: the marginal
  log-likelihood of weak traces by a forward pass over every hidden call stack (pcs
  clipped, so the stack space is finite); its gradient is the expectation-gradient. This
  covers argument-free hierarchies (the synthesis side);
- :mod:`.segmentation`: hard-EM weak supervision for procedures with continuous arguments,
  whose stacks cannot be enumerated: semi-Markov (DDCO-style) segmentation of a
  demonstration into leaf calls (the robot side,
  :func:`rlsuite.apps.hierarchy.robot.model.infer_stacks`);
- :mod:`.fit`: :func:`~.fit.fit`, the one training entry point, on strong and/or weak
  traces (exact marginal, or hard EM through ``weak_infer``).

A small hierarchy with continuous actions and procedure arguments::

    >>> import numpy as np
    >>> from rlsuite.apps.hierarchy.procedures.executor import Executor
    >>> from rlsuite.apps.hierarchy.procedures.model import ProcedureModel
    >>> from rlsuite.apps.hierarchy.procedures.spec import (
    ...     ActionSpec, ArgSpec, HierarchySpec, ProcedureSpec)
    >>> spec = HierarchySpec(
    ...     obs_dim=6,
    ...     actions=(ActionSpec("MOVE_TO", (ArgSpec("delta", "continuous", 3),)),
    ...              ActionSpec("GRIP", (ArgSpec("close", "discrete", 2),))),
    ...     procedures=(ProcedureSpec("PICK_AND_PLACE", ("PICK", "PLACE")),
    ...                 ProcedureSpec("PICK", ("MOVE_TO", "GRIP"), (ArgSpec("object", "discrete", 2),)),
    ...                 ProcedureSpec("PLACE", ("MOVE_TO", "GRIP"), (ArgSpec("target", "continuous", 3),))),
    ...     root="PICK_AND_PLACE", max_pc=8)
    >>> model = ProcedureModel(spec, hidden=(32,))
    >>> ex = Executor(spec, model)
    >>> ex.reset()
    >>> d = ex.act(np.zeros(6, dtype=np.float32))
    >>> d.kind, d.op in ("MOVE_TO", "GRIP")
    ('act', True)

Write a scripted expert as a policy (``decide(frame, obs) -> Decision``), run it through an
``Executor`` with ``record=True`` to get traces, train with ``fit(model, strong=...,
weak=...)``, and act with ``Executor(spec, model)``. The robot
(``rlsuite.apps.hierarchy.robot.program``) is such a hierarchy: root PICK_AND_PLACE, skills
PICK(object) / PLACE(object), leaves MOVE_TO(goal) / OPEN / CLOSE emitting a continuous
STEP(command), with its own ``InputView``.
"""
