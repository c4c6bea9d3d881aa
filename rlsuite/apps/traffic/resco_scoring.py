"""Scoring signal control under RESCO's protocol: for a policy trained by
:mod:`~rlsuite.apps.traffic.resco_training`, snapshots kept for checkpoint choice, the choice
itself on validation seeds, and the held-out evaluation beside the baselines (the deterministic
policy, for PPO also its sampled policy); the signal programs' cells (:func:`program_cell`)
and the protocol check of fixed-time against RESCO's own episodes (:func:`protocol_check`).

Each controller's seeds run in ``workers`` parallel processes (0: one seed at a time in this
process), each episode in its own SUMO process (TraCI, not libsumo: see ``run_seeds``); a
seed on which SUMO crashes is recorded, not fatal. Validation and evaluation
keep each finished unit (a snapshot, a controller) in the run's state as they go, and stop
between units when the call's time is up, so a call cut short loses at most one unit.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

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

JAM_RULE = {
    "never_inserted_at_least": 60,
    "delay_over_fixed_median": 3.0,
    "text": "an episode is jammed when SUMO crashed in it, when 60 or more of its vehicles "
    "were never inserted by the window's end (a queue blocked their entry lane), or when its "
    "delay is at least 3x fixed-time's median delay on the same map and seeds",
}
"""When an episode counts as jammed (recorded with every jam report). Set on the held-out
episodes of ``benchmarks/results/traffic/traffic_resco_learned_*.json``: an episode at its
map's usual delay leaves 0-12 vehicles uninserted (52 once, fixed-time on ingolstadt21 at
its median delay), a gridlocked one 70-1,500 (a learned ingolstadt7 policy that blocked one
entry: 70 at 75 s/veh against greedy's 33; greedy's cologne3 gridlocks: 100-857). The
delay test catches a gridlock that keeps the entries free. A jammed episode is reported as
jammed, never only as part of a mean."""


def is_jammed(delay: float, never_inserted: float, fixed_median: float | None = None) -> bool:
    """:data:`JAM_RULE` for one finished episode (``fixed_median``: fixed-time's median
    delay on the same seeds, when it was scored)."""
    if never_inserted >= JAM_RULE["never_inserted_at_least"]:
        return True
    limit = JAM_RULE["delay_over_fixed_median"]
    return fixed_median is not None and delay >= limit * fixed_median


def jam_report(evaluation: dict) -> dict:
    """Per controller of a held-out evaluation (:func:`evaluate`'s result): the seeds that
    jammed (SUMO crashes included), the jam rate over every seed run, and the rule."""
    import numpy as np

    fixed = evaluation.get("fixed")
    fixed_median = float(np.median(fixed["delay"])) if fixed and fixed.get("delay") else None
    out: dict = {"rule": JAM_RULE}
    for label, row in evaluation.items():
        if not isinstance(row, dict) or "never_inserted" not in row:
            continue
        crashed = list(row.get("sumo_crashed", []))
        jammed = [
            sd
            for sd, d, n in zip(row["seeds_done"], row["delay"], row["never_inserted"])
            if is_jammed(d, n, fixed_median)
        ] + crashed
        runs = len(row["seeds_done"]) + len(crashed)
        out[label] = {
            "jammed_seeds": sorted(jammed),
            "jam_rate": len(jammed) / runs if runs else float("nan"),
            "seeds": runs,
        }
    return out


JAM_FACTOR = 1.5
"""In the protocol check, an episode counts as jammed when its delay passes 1.5x its side's
median (RESCO's cologne3 episodes: two at ~141 s beside a median of 39)."""


def fisher_two_sided(a: int, n: int, b: int, m: int) -> float:
    """Fisher's exact test, two-sided: the probability, with the margins fixed, of a table
    at most as likely as ``a`` of ``n`` against ``b`` of ``m``."""
    import math

    k, total = a + b, n + m

    def p(x: int) -> float:
        return math.comb(n, x) * math.comb(m, k - x) / math.comb(total, k)

    observed = p(a)
    lo, hi = max(0, k - m), min(k, n)
    return min(1.0, sum(p(x) for x in range(lo, hi + 1) if p(x) <= observed * (1 + 1e-9)))


def protocol_check(rows: list[dict]) -> dict:
    """Fixed-time on SUMO 1.9.2 against RESCO's Fixed on each map of ``resco.UNEDITED``.
    Pass: our median delay within 10% of the median of RESCO's 30 episodes, and the share
    of jammed episodes not different from RESCO's (Fisher's exact test, p >= 0.05). The
    means and their gap stay beside it: a mean of a few seeds swings with one gridlock."""
    import statistics

    from rlsuite.apps.traffic import resco

    out = {}
    for r in rows:
        if r["controller"] == "fixed" and r["sumo"] == "1.9.2" and r["map"] in resco.UNEDITED:
            theirs = resco.PUBLISHED_FIXED_EPISODES[r["map"]]
            ours, pub_med = r["delay"], statistics.median(theirs)
            med = statistics.median(ours)
            jams = sum(x > JAM_FACTOR * med for x in ours)
            their_jams = sum(x > JAM_FACTOR * pub_med for x in theirs)
            err_med = abs(med - pub_med) / pub_med
            p_jam = fisher_two_sided(jams, len(ours), their_jams, len(theirs))
            pub = resco.PUBLISHED[r["map"]]["Fixed"]
            out[r["map"]] = {
                "seeds": len(ours), "ours": r["delay_mean"], "resco": pub,
                "rel_err": abs(r["delay_mean"] - pub) / pub,
                "ours_median": med, "resco_median": pub_med, "rel_err_median": err_med,
                "jammed": jams, "resco_jammed": their_jams, "resco_episodes": len(theirs),
                "p_jammed": p_jam, "pass": err_med <= 0.10 and p_jam >= 0.05,
            }  # fmt: skip
    return out


def run_seeds(ctrl, label: str, seeds: list[int], cfg: dict, what: str, workers: int = 0) -> dict:
    """``ctrl`` on each seed. With ``workers`` > 1 the seeds run in that many Ray processes;
    should that fail (SUMO 1.9.2 can segfault deep in a gridlock), they run again one at a
    time here, where a seed on which SUMO itself crashes is listed under ``sumo_crashed``
    and left out of the mean, instead of losing the rest."""
    import numpy as np

    from rlsuite.apps.traffic.kernel import SimulationError
    from rlsuite.platform import evaluation

    t0 = time.time()
    from rlsuite.apps.traffic.envs.signals import scoring_config

    cfg = scoring_config(cfg)  # one SUMO process per episode: scores follow from their seeds
    row: dict = {k: [] for k in EVAL_KEYS}
    row.update(seeds_done=[], sumo_crashed=[])
    episodes = None
    if workers > 1 and len(seeds) > 1:
        try:
            episodes = evaluation.evaluate(
                ctrl, evaluation.scenarios(ENV_ID, seeds, cfg),
                num_workers=min(workers, len(seeds)), name=label,
            ).episodes  # fmt: skip
        except Exception as e:  # noqa: BLE001 - which seed failed is found one at a time
            first = (str(e).strip().splitlines() or [""])[0][:160]
            print(f"{what} {label}: the parallel run failed ({type(e).__name__}: {first}); "
                  "running one seed at a time", flush=True)  # fmt: skip
    for i, sd in enumerate(seeds):
        if episodes is not None:
            ep = episodes[i]
        else:
            try:
                ev = evaluation.evaluate(ctrl, evaluation.scenarios(ENV_ID, [sd], cfg),
                                         num_workers=0, name=label)  # fmt: skip
            except SimulationError as e:
                print(f"{what} {label} seed {sd}: SUMO crashed ({e})", flush=True)
                row["sumo_crashed"].append(sd)
                continue
            ep = ev.episodes[0]
        row["seeds_done"].append(sd)
        for k in EVAL_KEYS:
            row[k].append(float(ep[k]))
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


def validate(
    args: argparse.Namespace,
    name: str,
    rd: str,
    state: dict,
    fits: Callable[[int], bool],
    save: Callable[[], None],
) -> dict | None:
    """Checkpoint selection inside RESCO's protocol: each of the newest snapshots acts
    deterministically on ``--val-seeds`` validation seeds (never trained on, apart from the
    held-out ones); the lowest mean delay is chosen (a SUMO crash counts as a jam).

    Each scored snapshot is kept in ``state["validation_partial"]`` (``save`` writes the
    state); before the next one, ``fits(episodes)`` says whether it still fits this call.
    Returns the validation, or None when the call's time ran out first."""
    from rlsuite.platform.checkpoints.loading import load_controller

    seeds = list(range(args.val_seed, args.val_seed + args.val_seeds))
    cfg = {k: v for k, v in state["env_config"].items() if k != "episode_log"}
    out = state.get("validation_partial") or {}
    if out.get("seeds") != seeds:
        out = {"seeds": seeds, "snapshots": {}}
    for path in snapshots_to_validate(args, rd):
        snap = os.path.basename(path)
        if snap in out["snapshots"]:
            continue
        if not fits(len(seeds)):
            return None
        row = run_seeds(load_controller(path), snap, seeds, cfg, f"{name} validation",
                        args.workers)  # fmt: skip
        note_rate(state, row, len(seeds))
        score = float("inf") if row["sumo_crashed"] or not row["delay"] else row["delay_mean"]
        out["snapshots"][snap] = {"delay": row["delay"], "delay_mean": score,
                                  "sumo_crashed": row["sumo_crashed"]}  # fmt: skip
        state["validation_partial"] = out
        save()
    best, best_d = None, float("inf")
    for path in snapshots_to_validate(args, rd):
        score = out["snapshots"][os.path.basename(path)]["delay_mean"]
        if score < best_d:
            best, best_d = path, score
    out["chosen"] = best
    state.pop("validation_partial", None)
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


def note_rate(state: dict, row: dict, episodes: int) -> None:
    """Keep the last scoring unit's wall seconds per episode (its workers in parallel),
    which the next unit's ``fits`` estimate uses: they differ by map (~5 s for a cologne1
    episode in one process, about a minute for ingolstadt21)."""
    state["scoring_s_per_episode"] = row["wall_s"] / max(1, episodes)


def evaluate(
    args: argparse.Namespace,
    name: str,
    state: dict,
    fits: Callable[[int], bool],
    save: Callable[[], None],
) -> dict:
    """The deterministic policy (the final checkpoint; with ``--val-seeds`` also the one
    chosen on the validation seeds, ``learned_valsel``), for PPO also its sampled policy
    (``learned_sampled``), and the baselines on the held-out seeds. A controller already
    scored on the same seeds (an earlier call's) is kept, not rerun. Each one scored is kept
    at once in ``state["evaluation_partial"]`` (``save`` writes the state), and before the
    next one ``fits(episodes)`` says whether it still fits this call; only when every
    controller is scored does the result become ``state["evaluation"]`` (which the report,
    the checks and ``--ship`` read). Returns what is scored so far."""
    from rlsuite.apps.traffic.controllers import SignalProgram
    from rlsuite.platform.checkpoints.loading import load_controller

    seeds = list(range(args.eval_seed, args.eval_seed + args.eval_seeds))
    cfg = {k: v for k, v in state["env_config"].items() if k != "episode_log"}
    prev = state.get("evaluation_partial") or state.get("evaluation") or {}
    out = dict(prev) if prev.get("seeds") == seeds else {"seeds": seeds}
    for label in eval_labels(args, state):
        if label in out:
            continue
        if not fits(len(seeds)):
            break
        extra: dict = {}
        if label == "learned":
            ctrl = load_controller(state["checkpoint"])
        elif label == "learned_sampled":
            ctrl = SampledPolicy(load_controller(state["checkpoint"]))
        elif label == "learned_valsel":
            ctrl = load_controller(state["validation"]["chosen"])
        else:
            ctrl, extra = SignalProgram(label), {"program": label}
        out[label] = run_seeds(ctrl, label, seeds, {**cfg, **extra}, f"{name} held-out",
                               args.workers)  # fmt: skip
        note_rate(state, out[label], len(seeds))
        state["evaluation_partial"] = out
        save()
    if all(k in out for k in eval_labels(args, state)):
        out["jams"] = jam_report(out)
        state["evaluation"] = out
        state.pop("evaluation_partial", None)
        save()
    return out


def program_cell(name: str, ctrl: str, sumo: str, seeds: list[int]) -> dict:
    """A signal program (fixed, greedy, maxpressure, actuated) on a RESCO map and SUMO release,
    each episode in its own SUMO process: RESCO's metrics per seed, their mean and std."""
    from rlsuite.apps.traffic.controllers import SignalProgram
    from rlsuite.apps.traffic.envs.signals import scoring_config
    from rlsuite.platform import evaluation

    cfg = scoring_config({"network": name, "program": ctrl, "sumo_version": sumo})
    ev = evaluation.evaluate(SignalProgram(ctrl), evaluation.scenarios("rlsuite/Signals-v0", seeds, cfg),
                             num_workers=0)  # fmt: skip
    row = {"map": name, "controller": ctrl, "sumo": sumo, "seeds": seeds}
    for m in ("delay", "trip_time", "waiting_time", "queue", "never_inserted", "trips"):
        row |= {m: [float(e[m]) for e in ev.episodes], f"{m}_mean": ev.summary[m]["mean"],
                f"{m}_std": ev.summary[m]["std"]}  # fmt: skip
    return row
