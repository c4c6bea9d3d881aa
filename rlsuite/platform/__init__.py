"""The shared RL core over Ray RLlib and Ray Tune (no domain knowledge here).

Modules:
    cluster      embedded local Ray or ``--address`` of a cluster; clean shutdown
    envs         register gymnasium / PettingZoo envs by id, for RLlib and evaluation
    optimizers   named execution plans: sync, async, replay, imitation (and es)
    training     the training loop: checkpoints, resume, metrics (JSON/CSV/TensorBoard), PNG
    checkpoints  load a checkpoint as a controller (weights + env + config)
    evaluation   evaluate any controller on seeded scenarios in parallel Ray workers
    tuning       any plan under Ray Tune with a search space and ASHA or PBT
"""
