"""The learning table's ES rows: the ``es`` plan on MuJoCo against Salimans et al. 2017.

Salimans et al. ("Evolution Strategies as a Scalable Alternative to Reinforcement
Learning", 2017), Table 3, give the timesteps ES needed to reach a share of TRPO's score
after 5M steps: HalfCheetah 793.6 (50%) within 0.83M and 1589.8 (75%) within 1.42M, Swimmer
99.7 (75%) within 1.23M. They ran MuJoCo ``-v1`` through gym 0.x; these rows run gymnasium's
``-v5`` (same bodies and reward terms, other contact and ``reset_noise`` details).

Impls (:data:`IMPLS`, each an :class:`rlsuite.platform.es.ESPlan`): ``ars_zoo``, ARS V1/V2
(Mania et al. 2018) with RL Zoo's "closest to the paper" settings (``hyperparams/ars.yml``:
a linear policy with a bias, actions clipped, the top ``b`` of ``N`` directions, steps scaled
by the std of their returns, plain SGD, mean/std observations on HalfCheetah, clipped to +-5
with the std floored at 0.1); ``ars_n8`` (Swimmer), 8 directions, the top 4, noise 0.03 and
observation normalisation, tried after RL Zoo's one-direction setting stalled near 45-50 on
seeds 0 and 1; ``es_mlp``, Salimans' own setting as far as 2 cores allow (64-64 tanh MLP,
centred ranks, Adam, L2 0.005, population 40).

Steps are env steps of the perturbed rollouts (both members of each pair). The central
policy is evaluated every ``eval_every`` steps, deterministically, on 5 held-out env seeds
(from 10^9 on); a threshold is reached when that mean reaches it. Evaluation episodes are
not counted (their seconds are kept apart as ``eval_s``). A cell stops at its last threshold
or its budget; its final policy is then scored on 20 more held-out seeds.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from statistics import median
from typing import Any

NUM_CPUS = 2
EVAL_SEEDS = range(1_000_000_000, 1_000_000_005)
FINAL_SEEDS = range(1_000_000_100, 1_000_000_120)
SOURCE = ("Salimans, Ho, Chen, Sidor, Sutskever 2017, 'Evolution Strategies as a Scalable "
          "Alternative to Reinforcement Learning', Table 3 (MuJoCo -v1, gym 0.x)")  # fmt: skip


@dataclass(frozen=True)
class Task:
    env: str
    thresholds: tuple[tuple[str, float, int], ...]
    """(name, return, Salimans' timesteps to it)."""
    eval_every: int
    """Training steps between two evaluations of the central policy."""

    @property
    def budget_steps(self) -> int:
        return max(s for _, _, s in self.thresholds)


TASKS: dict[str, Task] = {
    "es-swimmer": Task("Swimmer-v5", (("75% of TRPO", 99.7, 1_230_000),), eval_every=20_000),
    "es-halfcheetah": Task(
        "HalfCheetah-v5",
        (("50% of TRPO", 793.6, 830_000), ("75% of TRPO", 1589.8, 1_420_000)),
        eval_every=40_000,
    ),
}  # fmt: skip

# fmt: off
_ARS = dict(hidden=(), action_head="clip", fitness_shaping="return_std", optimizer="sgd",
            momentum=0.0, l2_coeff=0.0, eval_episodes=0, num_workers=2, noise_table_size=2_000_000,
            lr=0.02)
_ES = dict(hidden=(64, 64), population_size=40, sigma=0.02, lr=0.01, l2_coeff=0.005,
           observation_filter="meanstd", eval_episodes=0, num_workers=2)
IMPLS: dict[str, dict[str, dict[str, Any]]] = {
    # RL Zoo hyperparams/ars.yml: Swimmer-v3 delta_std 0.01, n_delta 1, n_top 1, no
    # normalisation; HalfCheetah-v3 delta_std 0.03, n_delta 32, n_top 4, norm_obs
    "ars_zoo": {
        "es-swimmer": dict(_ARS, sigma=0.01, population_size=2, top_pairs=1,
                           observation_filter="none"),
        "es-halfcheetah": dict(_ARS, sigma=0.03, population_size=64, top_pairs=4,
                               observation_filter="meanstd"),
    },
    "ars_n8": {"es-swimmer": dict(_ARS, sigma=0.03, population_size=16, top_pairs=4,
                                  observation_filter="meanstd")},
    "es_mlp": {"es-swimmer": dict(_ES), "es-halfcheetah": dict(_ES)},
}
# fmt: on


def _evaluate(controller: Any, env_id: str, seeds: range) -> float:
    from rlsuite.platform.evaluation import evaluate, scenarios

    ev = evaluate(controller, scenarios(env_id, seeds), num_workers=0)
    return sum(e["return"] for e in ev.episodes) / len(ev.episodes)


def run_cell(key: str, impl: str, seed: int, max_steps: int = 0) -> dict[str, Any]:
    """Train one (task, impl, seed) to its last threshold or its budget (``max_steps`` when
    smaller)."""
    from rlsuite.platform import cluster
    from rlsuite.platform.es import ESPlan, ESTrainer

    task = TASKS[key]
    budget = min(task.budget_steps, max_steps or task.budget_steps)
    plan = ESPlan(env=task.env, seed=seed, **IMPLS[impl][key])
    t0 = time.perf_counter()
    cluster.init(num_cpus=NUM_CPUS)
    trainer = ESTrainer(plan)
    curve: list[list[float]] = []
    reached: dict[str, dict[str, Any]] = {}
    best, eval_s, next_eval = -math.inf, 0.0, 0
    try:
        while trainer.env_steps_total < budget and len(reached) < len(task.thresholds):
            m = trainer.train()
            steps = trainer.env_steps_total
            if steps < next_eval and steps < budget:
                continue
            next_eval = steps + task.eval_every
            te = time.perf_counter()
            ret = _evaluate(trainer.controller(), task.env, EVAL_SEEDS)
            eval_s += time.perf_counter() - te
            wall = time.perf_counter() - t0
            curve.append([steps, round(wall, 2), round(ret, 2), round(m["episode_return_mean"], 2)])
            best = max(best, ret)
            for name, thr, _ in task.thresholds:
                if name not in reached and ret >= thr:
                    reached[name] = {"env_steps": steps, "wall_s": round(wall, 2),
                                     "train_wall_s": round(wall - eval_s, 2),
                                     "generation": trainer.generation}  # fmt: skip
        final = _evaluate(trainer.controller(), task.env, FINAL_SEEDS)
        generations = trainer.generation
    finally:
        trainer.stop()
        cluster.shutdown()
    return {
        "task": key, "impl": impl, "seed": seed, "env": task.env, "plan": plan.to_dict(),
        "reached": reached, "best_eval_return": round(best, 2),
        "final_eval_return_20_heldout": round(final, 2),
        "env_steps": curve[-1][0] if curve else 0, "generations": generations,
        "wall_s": round(time.perf_counter() - t0, 2), "eval_s": round(eval_s, 2),
        "loadavg_1min_at_end": round(os.getloadavg()[0], 2),
        "curve_columns": ["env_steps", "wall_s", "eval_return_5_heldout", "perturbed_mean"],
        "curve": curve,
    }  # fmt: skip


def _median(xs: list[float], digits: int | None = None) -> float | None:
    return (round(median(xs), digits) if digits else median(xs)) if xs else None


def summarise(cells: dict[str, dict]) -> dict[str, Any]:
    """Per task, impl and threshold: seeds that reached it, median steps and wall."""
    out: dict[str, Any] = {}
    for key, task in TASKS.items():
        for impl in IMPLS:
            cs = [c for c in cells.values() if c["task"] == key and c["impl"] == impl]
            if not cs:
                continue
            rows = {}
            for name, thr, anchor in task.thresholds:
                hit = [c["reached"][name] for c in cs if name in c["reached"]]
                steps = _median([h["env_steps"] for h in hit])
                rows[name] = {
                    "threshold": thr, "salimans_steps": anchor,
                    "seeds": sorted(c["seed"] for c in cs), "reached": len(hit),
                    "median_env_steps": steps,
                    "median_wall_s": _median([h["wall_s"] for h in hit], 1),
                    "median_train_wall_s": _median([h["train_wall_s"] for h in hit], 1),
                    # Salimans' steps / ours: above 1 means fewer samples than theirs
                    "salimans_over_ours_steps": round(anchor / steps, 3) if steps else None,
                    "within_salimans_steps": bool(len(hit) == len(cs) and steps <= anchor),
                    "best_return_not_reached": {str(c["seed"]): c["best_eval_return"]
                                                for c in cs if name not in c["reached"]},
                }  # fmt: skip
            out.setdefault(key, {})[impl] = rows
    return out


def plot(results: dict[str, Any]) -> Any:
    """The central policy's held-out return against env steps, Salimans' steps as stars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [k for k in TASKS if k in results.get("summary", {})]
    if not keys:
        return None
    fig, axes = plt.subplots(1, len(keys), figsize=(6 * len(keys), 4), squeeze=False)
    colours = {"ars_zoo": "tab:orange", "ars_n8": "tab:red", "es_mlp": "tab:green"}
    for ax, key in zip(axes[0], keys, strict=True):
        task, seen = TASKS[key], set()
        for c in sorted(results["cells"].values(), key=lambda c: (c["impl"], c["seed"])):
            if c["task"] == key:
                label = f"es plan, {c['impl']}" if c["impl"] not in seen else None
                seen.add(c["impl"])
                ax.plot([p[0] for p in c["curve"]], [p[2] for p in c["curve"]],
                        color=colours.get(c["impl"], "grey"), alpha=0.8, label=label)  # fmt: skip
        for i, (_name, thr, anchor) in enumerate(task.thresholds):
            ax.axhline(thr, color="k", ls="--", lw=0.6)
            ax.plot(
                [anchor], [thr], "k*", ms=12, label="Salimans et al. 2017 (ES)" if i == 0 else None
            )
        ax.set_title(f"es on {task.env} (anchor: MuJoCo -v1)")
        ax.set_xlabel("env steps (perturbed rollouts)")
        ax.set_ylabel("central policy, mean of 5 held-out episodes")
        ax.legend()
    return fig
