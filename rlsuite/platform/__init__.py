"""The shared RL core over Ray RLlib and Ray Tune (no domain knowledge here).

A one-way stack: each module imports only those listed above it.

Modules:
    cluster         embedded local Ray or ``--address`` of a cluster; clean shutdown
    envs            register gymnasium / PettingZoo envs by id, for RLlib and evaluation
    resources       what a run gets: the learner's device ("auto": the measured GPU rule),
                    GPUs asked for and not there refused, runners sharing scarce CPUs
    plans           the Plan base: frozen, documented fields; unknown keys refused; its backend
    es              evolution strategies on Ray actors: the ``es`` plan and its backend
    learners        the sync plan's learner: RLlib's PPO learner with fused Adam and one
                    finite-gradient test; the decoupled clip for overlap=true
    runners         what runs inside each remote env runner (gc.freeze after start-up)
    overlap         PPO that samples the next batch during the update (sync, overlap=true)
    optimizers      the RLlib plans (sync, async, replay, imitation), ``to_rllib``, and
                    the catalogue of every plan (``make_plan``)
    checkpoints     the on-disk layout of runs and checkpoints; ``load_controller``
    backends        the backend interface (build, train, save, restore, load a controller),
                    its registry, and the RLlib backend
    async_grad      asynchronous gradients on a sharded parameter server (A3C, GORILA):
                    the ``async_grad`` backend (its plan, ``async_grad.plan``, stands
                    below optimizers, which lists it)
    evaluation      evaluate any controller on seeded scenarios in parallel Ray workers
    demonstrations  record a controller's episodes; warm-start a policy from them
    metrics         a run's metric files (JSON lines, CSV, TensorBoard, PNG), progress bar
    training        the run-directory loop: train, checkpoint, resume
    tuning          any plan under Ray Tune with a search space and ASHA or PBT
"""
