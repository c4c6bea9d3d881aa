"""Asynchronous gradients on a sharded parameter server (the ``async_grad`` plan).

The RLlib paper's AsyncGradients policy optimizer, which RLlib 2.60 no longer ships
(A3C left it in Ray 2.9-2.11): runners sample and compute the gradient of the loss on
their own batch, with no barrier between them, and a parameter server of
``num_shards`` Ray actors, each owning a slice of the flat parameter vector, applies
them with its optimiser. Two losses run on it:

* ``a3c``: A3C's n-step advantage actor-critic with an entropy bonus (Mnih et al. 2016);
* ``dqn``: GORILA's Q-learning on batches from each runner's own replay, against a
  target network (Nair et al. 2015).

The networks are RLlib's default RLModules (PPO's for ``a3c``, DQN's for ``dqn``), so a
checkpoint loads with the ``rllib`` backend's controller. Every gradient's staleness
(updates between the weights it was computed on and those it is applied to) is
recorded; ``max_staleness`` drops older ones, and ``gradients_per_update`` is DPPO's
rule (apply once D gradients have arrived).

Modules:
    plan          AsyncGradPlan, the ``async_grad`` plan (its backend: ``async_grad``)
    model         the RLlib module, its flat parameter vector, the shards' slices
    losses        A3C's and GORILA's losses, A3C's advantages, a runner's replay memory
    param_server  ParamShard: a slice, its optimiser, staleness and drops
    workers       GradientRunner: sample, gradient, push slices, pull weights
    trainer       AsyncGradBackend: the actors, iterations, metrics, checkpoints, faults

Example::

    >>> from rlsuite.platform.optimizers import make_plan
    >>> plan = make_plan("async_grad", env="CartPole-v1", gamma=0.95, num_runners=1)
    >>> plan.loss, plan.num_shards
    ('a3c', 1)
"""

from rlsuite.platform.async_grad.plan import AsyncGradPlan

__all__ = ["AsyncGradPlan"]
