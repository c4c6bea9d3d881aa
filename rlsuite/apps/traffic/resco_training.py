"""Training signal control under RESCO's protocol in resumable calls: one policy shared by every
light of a map (IDQN / IPPO style; ``--plan-set policies=per_agent`` gives each light its own,
as RESCO did), trained by the platform's ``replay`` (DQN) or ``sync`` (PPO) plan on
``rlsuite/Signals-v0`` with RESCO's state (``drq_norm``) and reward (``wait_norm``).

A run lives in its own directory: ``benchmark_state.json`` (the plan, env config, chunks and
their seeds, the validation and the evaluation so far), the checkpoints, and
``episodes.jsonl`` (each training episode's SUMO seed and RESCO delay). Each call trains at
most ``minutes`` (one chunk; chunk ``k`` seeds its env runner at ``seed + 100 k`` so chunks
see new SUMO seeds), then validates snapshots and scores held-out seeds
(:mod:`~rlsuite.apps.traffic.resco_scoring`) while the call's time lasts; the same command
called again continues. ``rlsuite bench run traffic_resco_learned`` and
``traffic_resco_together`` drive it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from rlsuite.apps.traffic.resco_scoring import BASELINES, ENV_ID, eval_labels, evaluate, snapshot
from rlsuite.apps.traffic.resco_scoring import validate as validate_snapshots

LEARNERS = ("IDQN", "IPPO", "MPLight", "FMA2C")
SEED_STRIDE = 100
"""Chunk k of a run seeds its env runner at seed + SEED_STRIDE * k (and + 1 per episode)."""

PLAN_DEFAULTS = {
    # RESCO's IDQN (pfrl DQN): Adam at torch's default lr, replay 10k, batch 32, gamma 0.99,
    # epsilon 1 -> 0 over 80% of the steps, target sync every 500 steps, one update per step
    # (32 replayed per sampled transition). Ours adds double Q and a dueling head (the
    # plan's defaults) and an MLP for RESCO's small conv net. The replay ratio is 64, twice
    # RESCO's, so every earlier DQN run reproduces; ``--plan-set training_intensity=32``
    # runs RESCO's ratio (the shipped ingolstadt1 policy).
    "replay": dict(lr=1e-3, gamma=0.99, train_batch_size=32, buffer_size=10_000,
                   prioritized=False, target_update_freq=500, final_epsilon=0.0,
                   training_intensity=64, hidden=(64, 64), activation="relu"),
    # RESCO's IPPO (pfrl PPO): Adam lr 2.5e-4, clip 0.1, 4 epochs, entropy 0.001, grad norm
    # 0.5, no KL term and no value clip (set out of reach: wait_norm's returns reach -400).
    # Ours updates every 2 episodes, 128-step minibatches, lr 1e-3 annealed to 0 over the
    # budget (set in make_plan), as a few hundred episodes are not RESCO's 1400.
    "sync": dict(lr=1e-3, gamma=0.99, lambda_=0.95, clip_param=0.1, num_epochs=4,
                 minibatch_size=128, entropy_coeff=0.01, vf_clip_param=1e6, kl_coeff=0.0,
                 grad_clip=0.5, hidden=(64, 64), activation="tanh"),
}  # fmt: skip


@dataclass(frozen=True)
class RescoSettings:
    """What a RESCO training run takes (each field a flag of its benchmark)."""

    maps: str = "cologne1,ingolstadt1"
    """RESCO maps, comma-separated (each trained on its own)"""
    plan: str = "replay"
    """replay (DQN, RESCO's IDQN) or sync (PPO, its IPPO)"""
    episodes: int = 100
    """training episodes per map (RESCO's IDQN: 100)"""
    minutes: float = 5.5
    """training wall-clock per call (one chunk)"""
    sumo: str = "1.9.2"
    """SUMO release (1.28 = the project's)"""
    seed: int = 0
    """plan seed; training SUMO seeds start at seed + 1"""
    eval_seed: int = 1000
    """first held-out SUMO seed"""
    eval_seeds: int = 10
    """held-out episodes"""
    val_seed: int = 900
    """first validation SUMO seed"""
    val_seeds: int = 0
    """validation episodes per snapshot: choose the checkpoint scored as learned_valsel (0: none)"""
    val_snapshots: int = 10
    """the newest snapshots (one per 5 iterations) to validate"""
    no_baselines: bool = False
    """skip the baselines on the held-out seeds"""
    workers: int = 2
    """parallel processes for validation and held-out scoring (0: one seed at a time here)"""
    plan_set: tuple[str, ...] = ()
    """a plan field KEY=JSON, e.g. training_intensity=32"""
    env_set: tuple[str, ...] = ()
    """an env option KEY=JSON for training and scoring, e.g. light_index=true"""
    action_mask: bool = False
    """the policy never picks an action beyond a light's own green phases"""
    tag: str = ""
    """suffix of the run directory (a variant, reported apart: give it its own --json)"""
    ship: bool = False
    """export a policy that beats a RESCO learner held-out and is at or below the best static
    controller on the same seeds to benchmarks/policies/resco_<map>_<plan>"""
    run_root: str = ""
    """where the runs go (default runs/benchmarks/<benchmark>)"""
    json: str = ""
    """results file (its name is kept; default traffic_resco_learned[_sync].json)"""
    report: bool = False
    """only rewrite the JSON and PNG from the run dirs"""

    def __post_init__(self) -> None:
        if self.plan not in PLAN_DEFAULTS:
            raise ValueError(f"--plan {self.plan!r}: one of {', '.join(PLAN_DEFAULTS)}")


def results_stem(s: RescoSettings, default: str = "traffic_resco_learned") -> str:
    """The results file's name: ``--json``'s, else ``default`` (``_sync`` for PPO)."""
    if s.json:
        return os.path.splitext(os.path.basename(s.json))[0]
    return default + ("" if s.plan == "replay" else f"_{s.plan}")


def run_dir_of(s: RescoSettings, name: str) -> str:
    tag = f"_{s.tag}" if s.tag else ""
    return os.path.join(s.run_root, f"{name}_{s.plan}_{s.sumo}_s{s.seed}{tag}")


def steps_per_episode(env_cfg: dict) -> int:
    """Decisions per episode (several maps in turn: the first map's; they must agree)."""
    from rlsuite.apps.traffic.envs.signals import SignalsOptions

    begin, end, step, _ = SignalsOptions.from_kwargs(**env_cfg).protocol()
    return (end - begin) // step


def action_mask_offset(env_cfg: dict) -> int:
    """Where the env's observations carry each light's mask of valid actions."""
    from rlsuite.apps.traffic.envs.signals import make_env

    env = make_env(**env_cfg)
    try:
        return env.action_mask_offset
    finally:
        env.close()


def make_plan(s: RescoSettings, env_cfg: dict, seed: int, episodes: int):
    """The plan of one chunk: :data:`PLAN_DEFAULTS`, the budget in episodes turned into
    steps, one network shared by every light, ``plan_set`` last."""
    from rlsuite.cli_common import parse_sets
    from rlsuite.platform import envs, optimizers

    envs.rllib_env(ENV_ID)
    n = steps_per_episode(env_cfg)
    fields = dict(PLAN_DEFAULTS[s.plan])
    if s.plan == "replay":  # one episode per iteration; epsilon decays over 80% of the steps
        fields.update(env_steps_per_iteration=n, learning_starts=n,
                      epsilon_timesteps=int(0.8 * episodes * n))  # fmt: skip
    else:  # two episodes per update; lr annealed to 0 at the episode budget
        fields.update(train_batch_size=2 * n, lr_anneal_steps=episodes * n)
    if s.action_mask:
        fields["action_mask_offset"] = action_mask_offset(env_cfg)
    fields["policies"] = "shared"
    fields.update(parse_sets(s.plan_set))
    return optimizers.make_plan(
        s.plan, env=ENV_ID, env_config=env_cfg, num_env_runners=1, seed=seed, **fields
    )


def read_jsonl(path: str) -> list[dict]:
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def drop_lost_episodes(rd: str, kept: int) -> None:
    """Move the episodes logged after the checkpoint a run resumes from (trained by a chunk
    killed between checkpoints, whose weights are lost) to ``episodes_lost.jsonl``."""
    path = os.path.join(rd, "episodes.jsonl")
    if not os.path.exists(path):
        return
    with open(path) as f:
        lines = [line for line in f if line.strip()]
    if len(lines) > kept:
        with open(os.path.join(rd, "episodes_lost.jsonl"), "a") as f:
            f.writelines(lines[kept:])
        with open(path, "w") as f:
            f.writelines(lines[:kept])


def load_state(rd: str) -> dict | None:
    p = os.path.join(rd, "benchmark_state.json")
    return json.load(open(p)) if os.path.exists(p) else None


def save_state(rd: str, state: dict) -> None:
    os.makedirs(rd, exist_ok=True)
    tmp = os.path.join(rd, "benchmark_state.json.tmp")
    with open(tmp, "w") as f:
        json.dump(state, f, indent=1, default=str)
    os.replace(tmp, os.path.join(rd, "benchmark_state.json"))


def new_state(s: RescoSettings, name: str, env_cfg: dict, command: str, **more) -> dict:
    return {"map": name, "plan_name": s.plan, "sumo": s.sumo, "env_config": env_cfg,
            "episodes": s.episodes, "args": dataclasses.asdict(s), "chunks": [],
            "command": command, **more}  # fmt: skip


def train_chunk(s: RescoSettings, name: str, rd: str, state: dict, t_start: float) -> None:
    """One call's training: resume the run's newest checkpoint and train as many iterations
    as fit in what is left of ``minutes`` (at the last chunk's seconds per iteration; a first
    chunk guesses 10 s) without passing the episode budget. One RLlib algorithm per call:
    the replay buffer lives for a chunk."""
    from rlsuite.platform import cluster, training
    from rlsuite.platform.checkpoints.layout import latest_checkpoint, metadata

    env_cfg = state["env_config"]
    k = len(state["chunks"])
    seed = s.seed + SEED_STRIDE * k
    plan = make_plan(s, env_cfg, seed, state["episodes"])
    per_iter = plan.env_steps_per_iteration if s.plan == "replay" else plan.train_batch_size
    n_ep = steps_per_episode(env_cfg)
    budget = state["episodes"] * n_ep
    ckpt = latest_checkpoint(rd)
    meta = metadata(ckpt) if ckpt else {"iteration": 0, "env_steps": 0}
    it, steps = int(meta["iteration"]), int(meta["env_steps"])
    drop_lost_episodes(rd, steps // n_ep)
    if steps >= budget:
        state["done_training"] = True
        save_state(rd, state)
        return
    left = s.minutes * 60 - (time.time() - t_start) - 25  # Ray and the algorithm's start
    n_iter = max(1, min(-(-(budget - steps) // per_iter),
                        int(left / (1.15 * state.get("s_per_iter", 10.0)))))  # fmt: skip
    chunk = {"index": k, "plan_seed": seed, "plan": plan.to_dict(), "iterations_start": it,
             "iterations_planned": n_iter}  # fmt: skip
    state["chunks"].append(chunk)
    save_state(rd, state)
    t0 = time.time()

    def progress(i: int, row: dict) -> None:
        snapshot(rd)
        eps = read_jsonl(os.path.join(rd, "episodes.jsonl"))
        chunk.update(iterations_end=i, env_steps_end=row["env_steps"], wall_s=time.time() - t0)
        save_state(rd, state)
        last = eps[-1]["delay"] if eps else float("nan")
        print(f"{name}: it {i}, {row['env_steps']} env steps, {len(eps)} episodes, last delay "
              f"{last:.2f}, {(time.time() - t0) / 60:.1f} min", flush=True)  # fmt: skip

    with cluster.local_cluster(num_cpus=2):
        # the time cap holds even when s_per_iter is still a guess (a first chunk)
        res = training.train(plan, iterations=it + n_iter, run_dir=rd, resume=it > 0,
                             progress=False, checkpoint_every=5, callback=progress,
                             stop_after_s=max(60.0, left))  # fmt: skip
    snapshot(rd)
    chunk["wall_s"] = time.time() - t0
    rows = [r for r in res.metrics if r["iteration"] > it]
    if len(rows) > 1:
        state["s_per_iter"] = (rows[-1]["wall_s"] - rows[0]["wall_s"]) / (len(rows) - 1)
    state.update(iterations=res.iterations, env_steps=res.env_steps, checkpoint=res.checkpoint,
                 done_training=res.env_steps >= budget)  # fmt: skip
    save_state(rd, state)


def call_clock(s: RescoSettings, t_start: float) -> Callable[[int], bool]:
    """Whether ``episodes`` more of scoring fit the call (at the last unit's seconds per
    episode, first guess 5); a call that has only just begun always scores one unit."""

    def fits(episodes: int, state: dict) -> bool:
        used = time.time() - t_start
        rate = state.get("scoring_s_per_episode", 5.0)
        return used < 30 or used + rate * episodes <= max(450.0, s.minutes * 60)

    return fits


def train_maps(s: RescoSettings, command: str) -> None:
    """One call over every map of ``s.maps``: create, train, validate and score each run as
    far as the call's time allows."""
    from rlsuite.cli_common import parse_sets

    t_start = time.time()
    fits = call_clock(s, t_start)
    for name in s.maps.split(","):
        rd = os.path.abspath(run_dir_of(s, name))
        state = load_state(rd)
        if state is not None:
            state.setdefault("episodes", s.episodes)  # runs begun before it was kept
        used = time.time() - t_start  # under 2 minutes left; a call just begun always trains
        late = used > 30 and used > s.minutes * 60 - 120
        if late and not (state or {}).get("done_training"):
            print(f"{name}: not started in this call (time); run again", flush=True)
            continue
        if state is None:
            cfg = {"network": name, "sumo_version": s.sumo,
                   "episode_log": os.path.join(rd, "episodes.jsonl"), **parse_sets(s.env_set)}  # fmt: skip
            state = new_state(s, name, cfg, command)
            save_state(rd, state)
        if not state.get("done_training"):
            train_chunk(s, name, rd, state, t_start)
        if not state.get("done_training"):
            continue
        save = lambda rd=rd, state=state: save_state(rd, state)  # noqa: E731
        fit = lambda n, state=state: fits(n, state)  # noqa: E731
        if s.val_seeds and "validation" not in state:
            val = validate_snapshots(s, name, rd, state, fit, save)
            if val is None:
                print(f"{name}: trained; validated in the next call (time)", flush=True)
                continue
            state["validation"] = val
            save()
        if [k for k in eval_labels(s, state) if k not in state.get("evaluation", {})]:
            evaluate(s, name, state, fit, save)
            if "evaluation_partial" in state:
                print(f"{name}: trained; evaluated in the next call (time)", flush=True)


def policy_label(ev: dict) -> str:
    """The held-out row of the map's policy: the checkpoint chosen on the validation seeds
    when there is one (chosen before the held-out seeds are seen), else the final one."""
    return "learned_valsel" if "learned_valsel" in ev else "learned"


def policy_checkpoint(state: dict) -> str:
    """The checkpoint behind :func:`policy_label`."""
    ev = state.get("evaluation") or {}
    return state["validation"]["chosen"] if "learned_valsel" in ev else state["checkpoint"]


def best_learner(published: dict) -> float:
    return min(v for k, v in published.items() if k in LEARNERS and v)


def summarise(rd: str, state: dict) -> dict:
    """A map's result row from its run directory."""
    from rlsuite.apps.traffic import resco

    name = state["map"]
    delays = [e["delay"] for e in read_jsonl(os.path.join(rd, "episodes.jsonl"))]
    seeds = sorted({e["seed"] for e in read_jsonl(os.path.join(rd, "episodes.jsonl"))})
    pub = resco.PUBLISHED[name]
    best_pub = best_learner(pub)
    row = {
        "map": name, "plan": state["plan_name"], "sumo": state["sumo"], "run_dir": rd,
        "command": state["command"], "env_config": state["env_config"],
        "episodes_trained": len(delays), "env_steps": state.get("env_steps", 0),
        "train_wall_s": sum(c.get("wall_s", 0.0) for c in state["chunks"]),
        "chunks": [{k: c.get(k) for k in ("index", "plan_seed", "iterations_end", "wall_s")} for c in state["chunks"]],
        "training_seeds": seeds, "training_delay": delays,
        "best_training_episode": ({"delay": min(delays), "episode": delays.index(min(delays)) + 1} if delays else None),
        "last10_training_delay": (sum(delays[-10:]) / len(delays[-10:]) if delays else None),
        "published": pub, "best_published_learner": best_pub,
        "done_training": state.get("done_training", False),
    }  # fmt: skip
    ev = state.get("evaluation")
    if ev:
        row["heldout"] = ev
        row["policy"] = {"label": policy_label(ev), "checkpoint": policy_checkpoint(state)}
        ours = ev[row["policy"]["label"]]["delay_mean"]
        row["checks"] = {
            "held-out seeds never trained on": not set(ev["seeds"]) & set(seeds),
            f"held-out <= RESCO's best learner ({best_pub})": ours <= best_pub,
        }
        for b in ("fixed", "maxpressure"):
            if b in ev:
                row["checks"][f"held-out < {b} (same seeds)"] = ours < ev[b]["delay_mean"]
    val = state.get("validation")
    if val:
        row["validation"] = val
        apart = set(val["seeds"]) & (set(seeds) | set((ev or {}).get("seeds", [])))
        row.setdefault("checks", {})[
            "validation seeds apart from training and held-out"
        ] = not apart
    return row


def collect(s: RescoSettings) -> list[dict]:
    """The row of every run directory of ``s.plan`` and ``s.tag`` under ``s.run_root`` (a
    variant's runs stay out of the untagged results, and the reverse)."""
    rows = []
    for d in sorted(os.listdir(s.run_root)) if os.path.isdir(s.run_root) else []:
        state = load_state(os.path.join(s.run_root, d))
        tag = (state or {}).get("args", {}).get("tag", "")
        if state and state["plan_name"] == s.plan and tag == s.tag:
            rows.append(summarise(os.path.join(s.run_root, d), state))
    return rows


def ship(row: dict, policies: str) -> None:
    """Export the row's policy to ``<policies>/resco_<map>_<plan>`` when its held-out delay
    beats one of RESCO's published learners on the map and is at or below the best static
    controller on the same held-out seeds (not twice)."""
    ev = row.get("heldout")
    if not ev:
        return
    ours = ev[row["policy"]["label"]]["delay_mean"]
    beaten = [k for k in LEARNERS if row["published"].get(k) and ours <= row["published"][k]]
    static = [ev[b]["delay_mean"] for b in BASELINES if b in ev]
    out = os.path.join(policies, f"resco_{row['map']}_{row['plan']}")
    if os.path.exists(out):
        return
    if not beaten or not static or ours > min(static):
        print(f"not shipped: {row['map']} held-out {ours:.2f} (RESCO learners beaten: "
              f"{', '.join(beaten) or 'none'}; best static {min(static, default=float('nan')):.2f})")  # fmt: skip
        return
    pol = row["policy"]
    chosen = " chosen on validation seeds" if pol["label"] == "learned_valsel" else ""
    export(pol["checkpoint"], out, ev["seeds"], f"--network {row['map']} --env-set sumo_version={row['sumo']}",
           f"{row['command']} (checkpoint {os.path.basename(pol['checkpoint'])}{chosen}; held-out seeds "
           f"{ev['seeds'][0]}-{ev['seeds'][-1]} on SUMO {row['sumo']}: delay {ours:.2f} s/veh, at or "
           f"below RESCO's {', '.join(beaten)})")  # fmt: skip


def export(checkpoint: str, out: str, seeds: list[int], env_flags: str, note: str) -> None:
    """Ship ``checkpoint`` to ``out`` with ``note`` and the command that evaluates it on
    ``seeds`` (``env_flags``: the map and release)."""
    from rlsuite.platform.checkpoints.export import export_policy

    hint = (f"traffic-train evaluate --scenario signals {env_flags} --controller {os.path.relpath(out)} "
            f"--episodes {len(seeds)} --seed {seeds[0]} --workers 0")  # fmt: skip
    export_policy(checkpoint, out, note=f"{note}. Evaluate: {hint}")
    print(f"shipped: {out}")


def figure(rows: list[dict]):
    """Per map: the training delay per episode against RESCO's IDQN and IPPO, with the
    held-out delay (mean and each seed) and the greedy and max-pressure baselines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(rows), figsize=(5.2 * len(rows), 3.8), squeeze=False)
    for ax, r in zip(axes.flat, rows, strict=True):
        d = r["training_delay"]
        ax.plot(range(1, len(d) + 1), d, lw=1, label=f"ours ({r['plan']}), training episodes")
        for k, c in (("IDQN", "tab:red"), ("IPPO", "tab:purple")):
            if r["published"].get(k):
                ax.axhline(r["published"][k], color=c, ls="--", label=f"RESCO {k} (best training episode)")  # fmt: skip
        ev = r.get("heldout")
        if ev:
            pol = ev[policy_label(ev)]
            ax.errorbar([len(d) + 2], [pol["delay_mean"]], yerr=[pol["delay_std"]], fmt="o",
                        color="tab:green", label="ours, held-out seeds (mean)")  # fmt: skip
            ax.plot([len(d) + 3] * len(pol["delay"]), pol["delay"], "x", color="tab:green")
            for b, c in (("greedy", "tab:orange"), ("maxpressure", "tab:gray")):
                if b in ev:
                    ax.axhline(ev[b]["delay_mean"], color=c, ls=":", label=f"{b}, held-out seeds")
        top = max(v for k, v in r["published"].items() if v and k != "MaxPressure")
        ax.set_ylim(0, 2 * top)  # the first, mostly random episodes and gridlocks run off the top
        ax.set(xlabel="training episode", ylabel="RESCO delay (s/veh)",
               title=f"{r['map']} (SUMO {r['sumo']})")  # fmt: skip
        ax.legend(fontsize=6)
    return fig
