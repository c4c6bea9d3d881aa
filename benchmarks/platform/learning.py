"""Learning table: the platform's plans against RLlib's own tuned examples."""

from rlsuite.bench import Benchmark, Row, Value, here, pub

RUN = "rlsuite bench run platform_learning"
OUT = "benchmarks/results/platform/platform_learning_halfcheetah"
STEPS = ("env steps to {}, median of {} seeds", "median_steps_to_threshold", "{:,.0f}")
WALL = ("wall seconds to {}, median of {} seeds", "median_wall_s_to_threshold", "{:.0f} s")


def _vs_rllib(task, reach, seeds, kind, key, impl, example, args, metric_note=""):
    """A row of ours against RLlib's tuned example on the same seeds: env steps or wall
    seconds (``kind``: STEPS or WALL) to the example's threshold ``reach``."""
    metric, stat, fmt = kind
    return Row("platform", task, metric.format(reach, seeds) + metric_note, "platform_learning.json",
               Value(("summary", key, impl, stat)),
               here(example, "summary", key, "rllib", stat),
               f"{RUN} {args}", fmt=fmt, lower_is_better=True)  # fmt: skip


CARTPOLE = "`sync` PPO to 450, CartPole-v1"
DQN = "`replay` DQN to 450, CartPole-v1 (RLlib example's settings)"
PENDULUM = "`sync` PPO to -300, Pendulum-v1 (RLlib example's settings)"
BC = "`imitation` BC to 350, CartPole-v1 (RLlib example's settings, recorded expert data)"
PPO_EX, DQN_EX = "RLlib's `cartpole_ppo.py`, same seeds", "RLlib's `cartpole_dqn.py`, same seeds"
PEN_EX, BC_EX = (
    "RLlib's `pendulum_ppo.py`, same seeds",
    "RLlib's `cartpole_bc.py` on the same data, same seeds",
)
RESULT_100 = "mean return of the last 100 training episodes at 1M steps, median of 3 seeds"

# fmt: off
BENCHMARK = Benchmark(script="platform_learning.py", quick=dict(tasks="sync-cartpole", impls="ours", seeds="0", max_wall_s=60), seeds=True, resume=True, rows=(
    _vs_rllib(f"{CARTPOLE} (RLlib example's settings)", 450, 3, STEPS, "sync-cartpole", "ours", PPO_EX,
              "--tasks sync-cartpole --seeds 0,1,2 --resume"),
    _vs_rllib(f"{CARTPOLE}, 32 envs per runner", 450, 3, WALL, "sync-cartpole", "ours_32envs", PPO_EX,
              "--tasks sync-cartpole --impls ours_32envs --seeds 0,1,2 --resume"),
    _vs_rllib("`async` APPO to 450, CartPole-v1, 32 envs per runner", 450, 3, WALL, "async-cartpole",
              "ours_32envs", "RLlib's `cartpole_appo.py`, same seeds",
              "--tasks async-cartpole --impls ours_32envs --seeds 0,1,2 --max-wall-s 600 --resume"),
    _vs_rllib(DQN, 450, 5, STEPS, "replay-cartpole", "ours", DQN_EX,
              "--tasks replay-cartpole --impls rllib,ours --seeds 0,1,2,3,4 --resume"),
    _vs_rllib(DQN, 450, 5, WALL, "replay-cartpole", "ours", DQN_EX,
              "--tasks replay-cartpole --impls rllib,ours --seeds 0,1,2,3,4 --resume"),
    _vs_rllib(PENDULUM, -300, 3, STEPS, "sync-pendulum", "ours", PEN_EX,
              "--tasks sync-pendulum --impls rllib,ours --seeds 0,1,2"),
    _vs_rllib(PENDULUM, -300, 3, WALL, "sync-pendulum", "ours", PEN_EX,
              "--tasks sync-pendulum --impls rllib,ours --seeds 0,1,2",
              " (two repeats of both sides: 0.61x and 0.47x; the three runs pooled, 9 per side: "
              "34 s against 59 s, 0.57x)"),
    _vs_rllib(BC, 350, 3, ("learner updates to evaluation {}, median of {} seeds", *STEPS[1:]),
              "imitation-cartpole", "ours", BC_EX, "--tasks imitation-cartpole --seeds 0,1,2"),
    _vs_rllib(BC, 350, 3, ("wall seconds to evaluation {}, median of {} seeds", *WALL[1:]),
              "imitation-cartpole", "ours", BC_EX, "--tasks imitation-cartpole --seeds 0,1,2"),
    Row("platform", "`sync` PPO, HalfCheetah-v5, 1M env steps (cleanrl's settings, `observation_filter=meanstd`)",
        RESULT_100, "platform_learning_halfcheetah.json",
        Value(("summary", "ppo-halfcheetah", "ours", "median_final_return_last_100")),
        pub("cleanrl `ppo_continuous_action.py`, HalfCheetah-v4, 3 seeds", 1442.64),
        f"{RUN} --tasks ppo-halfcheetah --impls ours --seeds 0,1,2 --max-wall-s 2400 --out {OUT}.json",
        fmt="{:,.0f}"),
    Row("platform", "`sync` PPO, HalfCheetah-v5, 1M env steps, against RLlib's own example",
        RESULT_100, "platform_learning_halfcheetah.json",
        Value(("summary", "ppo-halfcheetah", "ours", "median_final_return_last_100")),
        here("RLlib's `mujoco_ppo.py`, same seeds, 5 logical CPUs on the 2 cores", "summary",
             "ppo-halfcheetah", "rllib", "median_final_return_last_100"),
        f"{RUN} --tasks ppo-halfcheetah --impls rllib --seeds 0,1,2 --num-cpus 5 --max-wall-s 900 "
        f"--out {OUT}_rllib_2cpu.json && {RUN} --out {OUT}.json --merge {OUT}_rllib_2cpu.json",
        fmt="{:,.0f}"),
    Row("platform", "`sync` PPO to 1442, HalfCheetah-v5 (cleanrl's settings, 8 envs, `overlap=true`)",
        "wall seconds to 1442, median of 3 seeds", "platform_learning_halfcheetah.json",
        Value(("summary", "ppo-halfcheetah", "ours_e8_overlap", "median_wall_s_to_threshold")),
        here("RLlib's `mujoco_ppo.py`, 2 of 3 seeds reached, 5 logical CPUs on the 2 cores",
             "summary", "ppo-halfcheetah", "rllib", "median_wall_s_to_threshold"),
        f"{RUN} --tasks ppo-halfcheetah --impls ours_e8_overlap --seeds 0,1,2 --max-wall-s 900 "
        f"--out {OUT}_e8.json && {RUN} --out {OUT}.json --merge {OUT}_e8.json",
        fmt="{:.0f} s", lower_is_better=True),
))
# fmt: on
