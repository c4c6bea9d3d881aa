"""The learning table's rows: each RLlib tuned example (:mod:`.rllib_examples`) and the
platform plan with that example's hyperparameters, what the plan cannot say the same way
(``differences``), and the variants measured beside it.

Impls of a row: ``rllib`` (the example, trained through RLlib alone), ``ours`` (the plan)
and the row's ``variants``: ``ours_overlap`` (``overlap=true``), ``ours_32envs`` (the
platform's 32 envs per runner), ``ours_frag5`` (DQN: fragments of 5, the example's updates
per env step), ``ours_e8_overlap`` (HalfCheetah: 8 envs x 256 steps, ``overlap=true``) and
``ours_local`` (Pendulum: the 40 envs sampled in the driver).

The offline row (BC) learns from data recorded here (:func:`record_cartpole_expert`):
RLlib's ``tests/data/cartpole/cartpole-v1_large`` is not in the pip wheel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from rlsuite.platform.benchmarking import rllib_examples as ex

BC_DATA = str(
    Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "tmp" / "cartpole_pd_expert"
)
"""The BC row's demonstrations (git-ignored; recorded again when missing)."""  # fmt: skip
BC_FILES, BC_EPISODES_PER_FILE = 200, 2


class CartPolePD:
    """A hand-written CartPole controller: 500 (the maximum) on every seed recorded.
    The same rule as the imitation test's expert (``tests/platform/_fakes.py``)."""

    name = "pd-expert"

    def act(self, obs: Any) -> int:
        return int(obs[2] + 0.5 * obs[3] + 0.01 * obs[1] > 0)


def record_cartpole_expert(path: str = BC_DATA) -> dict[str, Any]:
    """The BC row's data: the PD expert's episodes (env seeds 0..399), 2 per parquet file,
    200 files of 1,000 rows, the layout RLlib's ``cartpole_recording.py`` writes
    (``output_max_rows_per_file=1000``). Recorded once; kept while the files are there."""
    import pyarrow.parquet as pq

    from rlsuite.platform.demonstrations import record_episodes

    files = [Path(path) / f"part-{i:03d}.parquet" for i in range(BC_FILES)]
    for i, f in enumerate(files):
        if not f.exists():
            seed = BC_EPISODES_PER_FILE * i
            record_episodes(CartPolePD(), "CartPole-v1", BC_EPISODES_PER_FILE, str(f), seed=seed)
    tables = [pq.read_table(f, columns=["eps_id", "rewards"]) for f in files]
    episodes = sum(len(set(t.column("eps_id").to_pylist())) for t in tables)
    return {
        "path": "results/tmp/cartpole_pd_expert",
        "expert": "CartPolePD (a hand-written rule, learning_tasks.py), not RLlib's data",
        "files": len(files),
        "transitions": sum(t.num_rows for t in tables),
        "episodes": episodes,
        "return_mean": sum(sum(t.column("rewards").to_pylist()) for t in tables) / episodes,
        "env_seeds": f"0..{BC_FILES * BC_EPISODES_PER_FILE - 1}",
    }


@dataclass(frozen=True)
class Task:
    """One row of the table: RLlib's example and our plan with its hyperparameters."""

    plan: str
    env: str
    threshold: float
    budget_steps: int
    rllib_config: Callable[[], Any]
    """RLlib's example (:mod:`.rllib_examples`); its docstring is the row's ``source``."""
    ours: dict[str, Any]
    """The plan's values: the example's hyperparameters in the plan's fields."""
    differences: tuple[str, ...] = ()
    """What the example sets that the plan cannot express (and what ours uses instead)."""
    variants: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Further ``ours`` impls: name -> plan overrides."""
    max_iterations: int = 200
    metric: tuple[str, ...] = ("env_runners", "episode_return_mean")
    """Where the stop metric is in ``algo.train()``'s result."""
    updates_per_iteration: int | None = None
    """Offline rows: steps are learner updates, this many per iteration (both sides);
    None: steps are ``env_runners/num_env_steps_sampled_lifetime``."""
    num_cpus: int = 2
    """Logical CPUs given to Ray (``ray.init``), both sides; the machine has 2 cores."""
    prepare: Callable[[], dict[str, Any]] | None = None
    """Run by the driver before the row's cells (records the offline row's data); what it
    returns is saved in the JSON."""
    anchor: str = ""
    """A published result the row is also held to; ``""``: held to RLlib's example alone."""
    run_to_budget: bool = False
    """Train to the budget even after the threshold: the row's number is the return *at*
    the budget (as the anchor reports it), not the steps to the threshold."""
    final_episodes: int = 0
    """Score the mean return of the last this many training episodes at the end; 0: none."""
    eval_episodes: int = 0
    """Score the final policy deterministically on this many held-out env seeds, through the
    platform's checkpoint and controller (``ours`` cells); 0: none."""

    @property
    def source(self) -> str:
        """RLlib's example file, the commit of the copy read, and its stop."""
        return " ".join(getattr(self.rllib_config, "func", self.rllib_config).__doc__.split())

    @property
    def step_unit(self) -> str:
        return "env steps" if self.updates_per_iteration is None else "updates"

    @property
    def impls(self) -> list[str]:
        return ["rllib", "ours", *self.variants]


_SEP = "vf_share_layers=True: the plan's policy and value nets are separate"

# fmt: off
TASKS: dict[str, Task] = {
    "sync-cartpole": Task(
        plan="sync", env="CartPole-v1", threshold=450.0, budget_steps=300_000,
        rllib_config=ex.ppo_cartpole,
        ours=dict(env="CartPole-v1", num_env_runners=2, num_envs_per_env_runner=1, lr=3e-4,
                  num_epochs=6, vf_loss_coeff=0.01, hidden=(32,), activation="tanh",
                  train_batch_size=4000, minibatch_size=128, lambda_=1.0, clip_param=0.3,
                  kl_coeff=0.2, vf_clip_param=10.0, grad_clip=None, entropy_coeff=0.0, gamma=0.99),
        differences=("fcnet_activation='linear': the plan allows tanh or relu; ours uses tanh",
                     _SEP),
        # ours_32envs: the platform's default 32 envs per runner, where its sampling speed
        # comes from (the example samples one)
        variants={"ours_overlap": {"overlap": True},
                  "ours_32envs": {"num_envs_per_env_runner": 32}},
    ),
    "replay-cartpole": Task(
        plan="replay", env="CartPole-v1", threshold=450.0, budget_steps=200_000,
        rllib_config=ex.dqn_cartpole,
        ours=dict(env="CartPole-v1", num_env_runners=0, num_envs_per_env_runner=1,
                  rollout_fragment_length="auto", lr=5e-4, train_batch_size=32, buffer_size=50_000,
                  prioritized=True, priority_alpha=0.6, priority_beta=0.4, double_q=True,
                  dueling=True, n_step=3, target_update_freq=500, learning_starts=1000,
                  epsilon_timesteps=10_000, final_epsilon=0.02, hidden=(256,), activation="tanh",
                  env_steps_per_iteration=1000, gamma=0.99),
        differences=(
            "n_step=(2, 5) (drawn per sample): the plan takes one n; ours uses 3",
            "head_fcnet_hiddens=[256] and zero bias init: the plan has no head layers; ours uses "
            "RLlib's default head",
        ),
        # ours_32envs: the platform's default layout (2 remote runners x 32 envs, fragments
        # of 4) with the example's updates per env step: RLlib's DQN learns one batch of 32
        # per sample call of n_step (3) steps under "auto", so training_intensity 32/3. (One
        # update per 32 steps, a tenth of that, learned on 0/3 seeds.)
        # ours_frag5: the example's n_step=(2, 5) samples 5 steps per call, the plan's 3, so
        # "ours" runs 334 training steps per 1000 env steps to the example's 200, each
        # costing the same on both sides (platform_learning_replay_device.json); fragments
        # of 5 give the example's count with n-step 3.
        variants={
            "ours_frag5": {"rollout_fragment_length": 5},
            "ours_32envs": {"num_env_runners": 2, "num_envs_per_env_runner": 32,
                            "rollout_fragment_length": 4, "training_intensity": 32 / 3},
        },
    ),
    "sync-pendulum": Task(
        plan="sync", env="Pendulum-v1", threshold=-300.0, budget_steps=400_000,
        rllib_config=ex.ppo_pendulum,
        ours=dict(env="Pendulum-v1", num_env_runners=2, num_envs_per_env_runner=20, lr=2e-4,
                  gamma=0.95, lambda_=0.5, num_epochs=30, train_batch_size=1024, minibatch_size=128,
                  clip_param=0.3, vf_loss_coeff=1.0, vf_clip_param=10.0, kl_coeff=0.2,
                  grad_clip=None, entropy_coeff=0.0, hidden=(256, 256), activation="relu",
                  vf_share_layers=True),
        differences=(
            "MeanStdFilter (running mean/std of observations): ours runs without it "
            "(observation_filter='none', measured before the plan had the filter) and sees raw "
            "observations (cos, sin in [-1, 1], angular velocity in [-8, 8])",
        ),
        # ours_32envs: 32 envs per runner (measured with separate value layers, before the
        # plan had vf_share_layers); ours_local: the example's 40 envs sampled in the driver
        variants={
            "ours_32envs": {"num_envs_per_env_runner": 32, "vf_share_layers": False},
            "ours_overlap": {"overlap": True},
            "ours_local": {"num_env_runners": 0, "num_envs_per_env_runner": 40},
        },
    ),
    "async-cartpole": Task(
        plan="async", env="CartPole-v1", threshold=450.0, budget_steps=2_000_000,
        rllib_config=ex.appo_cartpole,
        ours=dict(env="CartPole-v1", num_env_runners=2, num_envs_per_env_runner=1,
                  rollout_fragment_length=50, train_batch_size=500, lr=5e-4, clip_param=0.4,
                  entropy_coeff=0.0, vf_loss_coeff=0.05, grad_clip=40.0,
                  target_network_update_freq=2, circular_buffer_num_batches=8,
                  circular_buffer_iterations_per_batch=2, min_time_s_per_iteration=10.0,
                  hidden=(256, 256), activation="tanh", gamma=0.99),
        differences=(_SEP,),
        variants={"ours_32envs": {"num_envs_per_env_runner": 32}},
        # RLlib 2.60's APPO builds its learner as a 1-CPU actor even with num_learners=0:
        # with both logical CPUs held by the 2 runners build_algo() waits forever. 3 logical
        # CPUs on the same 2 cores, both sides.
        num_cpus=3,
    ),
    "imitation-cartpole": Task(
        plan="imitation", env="CartPole-v1", threshold=350.0,
        budget_steps=1750, max_iterations=350, updates_per_iteration=5,  # 350 iterations x 5
        metric=("evaluation", "env_runners", "episode_return_mean"),
        # the example's 1 evaluation runner + 2 data actors + Ray Data's read tasks wait
        # forever on 2 logical CPUs: 4 on the same 2 cores, both sides
        num_cpus=4,
        prepare=record_cartpole_expert,
        rllib_config=partial(ex.bc_cartpole, BC_DATA),
        ours=dict(env="CartPole-v1", data=BC_DATA, lr=8e-4, train_batch_size=1024,
                  updates_per_iteration=5, hidden=(256, 256), activation="tanh", num_env_runners=1,
                  eval_episodes=5),
        differences=(
            "evaluation_interval=3, evaluation_parallel_to_training=True: the plan evaluates after "
            "every iteration, on its runner, after the update; ours scores 3x as often (it can "
            "stop up to 2 iterations earlier, and pays for the extra evaluations)",
            "map_batches_kwargs concurrency 2, iter_batches prefetch 1: the plan maps the rows once "
            "in the driver, a run of steps at a time (rlsuite.platform.offline), not in a Ray Data "
            "actor pool; the same batches (tested), no actors to start",
        ),
    ),
    "ppo-halfcheetah": Task(
        plan="sync", env="HalfCheetah-v5", threshold=1442.0, budget_steps=1_000_000,
        max_iterations=1000,  # 489 iterations of 2048 steps reach the budget
        run_to_budget=True, final_episodes=100, eval_episodes=10,
        anchor="cleanrl ppo_continuous_action.py on HalfCheetah-v4, 1M steps: 1442.64 +- 46.03 "
        "(3 seeds; docs/benchmark/ppo_continuous_action.md @ 09f7a7f2f803, openrlbenchmark tag "
        "pr-424), the training episodes' return",
        rllib_config=ex.ppo_mujoco,
        # cleanrl's Args (cleanrl/ppo_continuous_action.py @ 016ca33aa70f) in the plan's fields:
        # num_steps=2048 x 1 env, 32 minibatches, anneal_lr over total_timesteps, max_grad_norm,
        # actor_logstd (free_log_std), NormalizeObservation + clip to +-10 (meanstd)
        ours=dict(env="HalfCheetah-v5", num_env_runners=1, num_envs_per_env_runner=1,
                  train_batch_size=2048, minibatch_size=64, num_epochs=10, lr=3e-4,
                  lr_anneal_steps=1_000_000, gamma=0.99, lambda_=0.95, clip_param=0.2,
                  entropy_coeff=0.0, vf_loss_coeff=0.5, vf_clip_param=1e6, kl_coeff=0.0,
                  grad_clip=0.5, hidden=(64, 64), activation="tanh", free_log_std=True,
                  observation_filter="meanstd"),
        # ours_e8_overlap: 8 envs x 256 steps at a time, the next batch sampled during the
        # update (one update of policy lag, decoupled clip); 0.56 s per iteration on 2 cores
        # against 1.87 s for the one-env layout
        variants={"ours_e8_overlap": {"num_envs_per_env_runner": 8, "overlap": True}},
        differences=(
            "env: gymnasium's HalfCheetah-v5 (MuJoCo 3+ bindings); cleanrl ran HalfCheetah-v4. Same "
            "body, reward terms and 1000-step episodes; v5 changes defaults elsewhere (e.g. the "
            "reset noise scale is a parameter), so returns are close, not identical",
            "NormalizeReward(gamma) + clip to +-10: RLlib 2.60 has no reward-normalising connector; "
            "ours learns from raw rewards (so the value loss is on raw returns: vf_clip_param=1e6 "
            "turns RLlib's squared-error clamp off)",
            "clip_vloss (the value prediction clipped to +-0.2 around the old one): RLlib clamps the "
            "squared value error instead; ours turns that clamp off (above)",
            "orthogonal init (policy head std 0.01, value head 1.0) and Adam eps 1e-5: ours keeps "
            "RLlib's default init and Adam eps 1e-8",
            "advantages: cleanrl normalises them per minibatch, RLlib's GAE per train batch",
            "the return cleanrl reports is RecordEpisodeStatistics' raw return of the training "
            "episodes, as here (RLlib's episode return before any normalisation)",
        ),
    ),
}
# fmt: on


def describe(task: Task) -> dict[str, Any]:
    """A row as the JSON records it."""
    return {
        "plan": task.plan,
        "env": task.env,
        "threshold": task.threshold,
        "budget_steps": task.budget_steps,
        "step_unit": task.step_unit,
        "max_iterations": task.max_iterations,
        "metric": "/".join(task.metric),
        "ray_num_cpus": task.num_cpus,
        "rllib_example": task.source,
        "ours": {k: list(v) if isinstance(v, tuple) else v for k, v in task.ours.items()},
        "differences": list(task.differences),
        "variants": task.variants,
        **({"anchor": task.anchor, "run_to_budget": task.run_to_budget} if task.anchor else {}),
    }
