"""QT-Opt (the ``qt_opt`` plan): Q-learning for continuous actions on Ray actors.

Kalashnikov et al. 2018 ("QT-Opt: Scalable Deep Reinforcement Learning for
Vision-Based Robotic Manipulation") learn a Q-function ``Q(s, a)`` with no actor
network: the action that maximises it is found by the cross-entropy method, both to
act and in the Bellman target. Here:

* :mod:`~rlsuite.platform.qtopt.cem`: CEM over ``[-1, 1]^d`` (64 samples, 10 elites,
  3 iterations by default, the paper's);
* :mod:`~rlsuite.platform.qtopt.qnet`: the Q-network and the clipped double-Q target
  ``r + gamma * min(Q_target1, Q_target2)(s', argmax_a Q_target1(s', a))``, the first
  target Polyak-averaged, the second an older copy of the first;
* :mod:`~rlsuite.platform.qtopt.actors`: runner actors that act with CEM plus noise
  on their own envs, and Bellman-updater actors that compute targets apart from the
  learner, as the paper's distributed Bellman updaters do;
* :mod:`~rlsuite.platform.qtopt.trainer`: the ``qt_opt`` backend: first updates on
  a fixed off-policy dataset (a recorded file, or ``random:N`` episodes of random
  actions: the grasping papers' random grasps), then online, the runners sampling
  while the learner updates;
* :mod:`~rlsuite.platform.qtopt.controller`: a checkpoint -> greedy CEM controller.

Not RLlib: RLlib 2.60 has no CEM-maximised Q-learning, and its DQN is for discrete
actions, so this is a backend of its own, on plain Ray actors like ``es``. What the
paper's system has and this does not: image observations with a conv net (the
observation is a flat vector here), the sigmoid cross-entropy loss on 0/1 rewards
(this regresses with a squared error, for any reward), and replay buffers sharded
over machines.

Example::

    >>> from rlsuite.platform.qtopt import QTOptPlan, QTOptTrainer   # doctest: +SKIP
    >>> trainer = QTOptTrainer(QTOptPlan(env="Pendulum-v1"))          # doctest: +SKIP
    >>> trainer.train()["episode_return_mean"]                        # doctest: +SKIP
"""

from rlsuite.platform.qtopt.cem import cem_argmax
from rlsuite.platform.qtopt.controller import QTOptController, load_controller
from rlsuite.platform.qtopt.plan import QTOptPlan
from rlsuite.platform.qtopt.trainer import QTOptTrainer

__all__ = ["QTOptPlan", "QTOptTrainer", "QTOptController", "cem_argmax", "load_controller"]
