"""Ape-X's asynchronous prioritised replay as the ``apex`` plan, on RLlib's pieces.

    plan       ApexPlan: the plan's fields and checks
    replay     ReplayShard: a prioritised replay Ray actor (RLlib's segment trees),
               its priorities updated by sample ticket
    actors     what runs in each env runner: per-runner epsilon, n-step transitions
               and their initial priorities from the runner's own Q-values, the push
    algorithm  Apex: RLlib's DQN (its RLModule, Learner and loss, EnvRunners) with
               Ape-X's training step: background sampling, priorities sent back,
               weights at most K updates old at each sample call,
               shard restarts

RLlib 2.60 has no Ape-X (it left RLlib in Ray 2.8-2.11): its DQN samples synchronously
into one local buffer (the ``replay`` plan). Here runners, replay shards and the learner
work at once. A shard stores items behind a small interface (``add``, ``sample``,
``update``), so a sequence storage (R2D2) or a demonstrations shard can plug in.
"""

from rlsuite.platform.apex.plan import ApexPlan

__all__ = ["ApexPlan"]
