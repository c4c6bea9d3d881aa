"""Evolution strategies (the ``es`` plan): OpenAI-style ES on Ray actors.

The source talk's own Ray example (Salimans et al. 2017, "Evolution Strategies
as a Scalable Alternative to Reinforcement Learning")::

    workers = [Worker.remote() for i in range(20)]
    for i in range(200):
        seeds = generate_seeds(i)
        rewards = [workers[j].do_simulation.remote(policy, seeds[j]) for j in range(20)]
        policy = compute_update(policy, ray.get(rewards), seeds)

Here, one generation of :class:`ESTrainer` is that loop body (in detail:
:mod:`rlsuite.platform.es.trainer`):

* the driver draws, from its own seeded RNG, an offset into a **shared noise
  table** for every antithetic pair ``theta +- sigma * eps`` and the env seeds
  of their episodes;
* the noise table lives once in Ray's object store (``ray.put`` once); every
  worker actor maps it and slices ``eps`` by offset, so only offsets, env seeds
  and returns travel;
* workers are Ray actors that each hold one env (any id of
  :mod:`rlsuite.platform.envs`, gymnasium ids included; PettingZoo parallel
  envs act with one shared policy and score the sum of the agents' rewards);
* the driver turns the returns into **centred ranks**, forms the ES gradient
  ``sum_k (f+_k - f-_k) eps_k / (2 n sigma)`` minus an L2 term, and takes an
  **Adam** (or momentum SGD) step on the central parameters.

Every perturbation's return is a pure function of (parameters, observation
filter, noise offset, env seeds), so a run is the same whichever worker ran
which perturbation and however many workers there were. A worker that dies
mid-generation (killed, its node lost) is replaced and its perturbations are
run again; the run goes on.

Why not EvoTorch: EvoTorch 0.6.1 installs against our torch 2.13 / Ray 2.60 /
gymnasium 1.2.2 and its ``GymNE`` runs, but (checked) a Ray actor killed
mid-run ends the search with ``ActorDiedError``; it ships whole solution
vectors to its actors instead of seeds into a shared noise table; its episodes
are not seeded per perturbation, so results depend on which actor ran what;
and it has no PettingZoo envs. Those are requirements here, so the loop is
written on plain Ray actors (about 300 lines).

The policy is an MLP (``hidden``, ``tanh``), with ``recurrent="gru"`` behind a GRU
cell, evaluated in numpy during rollouts; :meth:`ESPolicy.to_torch` gives the
identical ``torch.nn.Module`` for export.

Modules:
    plan        ESPlan, the ``es`` plan (its backend: ``es``)
    policy      ESPolicy (numpy MLP, optional GRU), the observation filter's sums, centred ranks
    workers     the Ray actor that runs perturbed policies on its own env
    trainer     ESTrainer, the ``es`` backend: generations, checkpoints, worker restarts
    controller  ESController and load_controller: a checkpoint -> deterministic ``act``

Example::

    >>> from rlsuite.platform.es import ESPlan, ESTrainer   # doctest: +SKIP
    >>> trainer = ESTrainer(ESPlan(env="CartPole-v1", population_size=32))  # doctest: +SKIP
    >>> trainer.train()["episode_return_mean"]  # doctest: +SKIP
    21.4
"""

from rlsuite.platform.es.controller import ESController, load_controller
from rlsuite.platform.es.plan import ESPlan
from rlsuite.platform.es.policy import ESPolicy, centered_ranks
from rlsuite.platform.es.trainer import ESTrainer

__all__ = ["ESPlan", "ESTrainer", "ESPolicy", "ESController", "load_controller", "centered_ranks"]
