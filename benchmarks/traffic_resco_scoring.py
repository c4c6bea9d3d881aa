"""Scoring a policy trained by ``traffic_resco_learned.py``: snapshots kept for checkpoint
choice, the choice itself on validation seeds, and the held-out evaluation beside the
baselines (the deterministic policy, for PPO also its sampled policy).

Every controller runs one seed at a time in this process; a seed on which SUMO crashes is
recorded, not fatal.
"""

from __future__ import annotations

import argparse
import os
import time

ENV_ID = "rlsuite/Signals-v0"
BASELINES = ("fixed", "greedy", "maxpressure")


def snapshot(rd: str) -> None:
    """Copy the run's newest checkpoint to ``rd/snapshots/`` (the trainer keeps only two),
    so a checkpoint can be chosen afterwards on validation seeds."""
    import shutil

    from rlsuite.platform.checkpoints.layout import latest_checkpoint

    ckpt = latest_checkpoint(rd)
    if ckpt is None:
        return
    dst = os.path.join(rd, "snapshots", os.path.basename(ckpt))
    if not os.path.exists(dst):
        shutil.copytree(ckpt, dst + ".tmp", dirs_exist_ok=True)
        os.replace(dst + ".tmp", dst)


class SampledPolicy:
    """A PPO checkpoint's policy acting as it trained: each light's action drawn from the
    softmax of its logits (the benchmark's main score takes their argmax), with a generator
    seeded by the episode's seed, so the episode is reproducible."""

    def __init__(self, ctrl):
        self.ctrl, self.name, self.rng = ctrl, f"{ctrl.name} sampled", None

    def reset(self, seed: int | None = None) -> None:
        import numpy as np

        self.ctrl.reset(seed)
        self.rng = np.random.default_rng(seed)

    def act(self, observation: dict) -> dict:
        import numpy as np

        out = {}
        for a, o in observation.items():
            z = self.ctrl.action_values(o, a)
            p = np.exp(z - z.max())
            out[a] = int(self.rng.choice(len(p), p=p / p.sum()))
        return out


EVAL_KEYS = ("delay", "trip_time", "waiting_time", "queue", "never_inserted")


def run_seeds(ctrl, label: str, seeds: list[int], cfg: dict, what: str) -> dict:
    """``ctrl`` on each seed, one at a time: a seed on which SUMO itself crashes (SUMO
    1.9.2 can segfault deep in a gridlock) is listed under ``sumo_crashed`` and left out
    of the mean, instead of losing the rest."""
    import numpy as np

    from rlsuite.apps.traffic.kernel import SimulationError
    from rlsuite.platform import evaluation

    t0 = time.time()
    row: dict = {k: [] for k in EVAL_KEYS}
    row.update(seeds_done=[], sumo_crashed=[])
    for sd in seeds:
        try:
            ev = evaluation.evaluate(ctrl, evaluation.scenarios(ENV_ID, [sd], cfg),
                                     num_workers=0, name=label)  # fmt: skip
        except SimulationError as e:
            print(f"{what} {label} seed {sd}: SUMO crashed ({e})", flush=True)
            row["sumo_crashed"].append(sd)
            continue
        row["seeds_done"].append(sd)
        for k in EVAL_KEYS:
            row[k].append(float(ev.episodes[0][k]))
    d = np.array(row["delay"])
    row.update(delay_mean=float(d.mean()) if d.size else float("nan"),
               delay_std=float(d.std()) if d.size else float("nan"),
               wall_s=time.time() - t0)  # fmt: skip
    crashed = f" ({len(row['sumo_crashed'])} seeds: SUMO crashed)" if row["sumo_crashed"] else ""
    print(f"{what} {label:14s} delay {row['delay_mean']:7.2f} ± {row['delay_std']:.2f}{crashed}",
          flush=True)  # fmt: skip
    return row


def snapshots_to_validate(args: argparse.Namespace, rd: str) -> list[str]:
    """The run's newest ``--val-snapshots`` snapshots (paths, oldest first)."""
    root = os.path.join(rd, "snapshots")
    names = (
        sorted(d for d in os.listdir(root) if d.startswith("iter_") and "." not in d)
        if os.path.isdir(root)
        else []
    )
    return [os.path.join(root, d) for d in names[-args.val_snapshots :]]


def validate(args: argparse.Namespace, name: str, rd: str, state: dict) -> dict:
    """Checkpoint selection inside RESCO's protocol: each of the newest snapshots acts
    deterministically on ``--val-seeds`` validation seeds (never trained on, apart from the
    held-out ones); the lowest mean delay is chosen (a SUMO crash counts as a jam)."""
    from rlsuite.platform.checkpoints.loading import load_controller

    seeds = list(range(args.val_seed, args.val_seed + args.val_seeds))
    cfg = {k: v for k, v in state["env_config"].items() if k != "episode_log"}
    out: dict = {"seeds": seeds, "snapshots": {}}
    best, best_d = None, float("inf")
    for path in snapshots_to_validate(args, rd):
        row = run_seeds(load_controller(path), os.path.basename(path), seeds, cfg,
                        f"{name} validation")  # fmt: skip
        score = float("inf") if row["sumo_crashed"] or not row["delay"] else row["delay_mean"]
        out["snapshots"][os.path.basename(path)] = {"delay": row["delay"], "delay_mean": score,
                                                    "sumo_crashed": row["sumo_crashed"]}  # fmt: skip
        if score < best_d:
            best, best_d = path, score
    out["chosen"] = best
    print(f"{name} validation: chose {best and os.path.basename(best)} ({best_d:.2f})", flush=True)
    return out


def eval_labels(args: argparse.Namespace, state: dict) -> list[str]:
    """The controllers the held-out evaluation scores, in order."""
    labels = ["learned"]
    if state["plan_name"] == "sync":  # does the score hang on acting deterministically?
        labels.append("learned_sampled")
    if (state.get("validation") or {}).get("chosen"):
        labels.append("learned_valsel")
    return labels + ([] if args.no_baselines else list(BASELINES))


def evaluate(args: argparse.Namespace, name: str, state: dict) -> dict:
    """The deterministic policy (the final checkpoint; with ``--val-seeds`` also the one
    chosen on the validation seeds, ``learned_valsel``), for PPO also its sampled policy
    (``learned_sampled``), and the baselines on the held-out seeds. A controller already
    scored on the same seeds (an earlier call's) is kept, not rerun."""
    from rlsuite.apps.traffic.controllers import SignalProgram
    from rlsuite.platform.checkpoints.loading import load_controller

    seeds = list(range(args.eval_seed, args.eval_seed + args.eval_seeds))
    cfg = {k: v for k, v in state["env_config"].items() if k != "episode_log"}
    prev = state.get("evaluation") or {}
    out = dict(prev) if prev.get("seeds") == seeds else {"seeds": seeds}
    for label in eval_labels(args, state):
        if label in out:
            continue
        extra: dict = {}
        if label == "learned":
            ctrl = load_controller(state["checkpoint"])
        elif label == "learned_sampled":
            ctrl = SampledPolicy(load_controller(state["checkpoint"]))
        elif label == "learned_valsel":
            ctrl = load_controller(state["validation"]["chosen"])
        else:
            ctrl, extra = SignalProgram(label), {"program": label}
        out[label] = run_seeds(ctrl, label, seeds, {**cfg, **extra}, f"{name} held-out")
    return out
