"""Benchmark of the ``es`` plan: scaling, a simulated cluster, time to solve.

Parts and their pass criteria:

``scaling``
    Pendulum-v1 (every episode is 200 steps, so each generation is the same
    work), population fixed at 64, a (64, 64) policy: wall time per generation
    and env steps/s with 1 and with 2 workers. Pass: 2 workers >= 1.8x the env
    steps/s of 1 worker.
``cluster``
    The same run on a simulated two-node Ray cluster
    (``ray.cluster_utils.Cluster``, one CPU per node) with 2 workers. Pass: both
    nodes evaluate perturbation pairs in every generation.
``solve``
    Time to solve Pendulum-v1: ES until its central policy's return is >= -200
    (the in-training check over the generation's ``eval_episodes`` episodes,
    confirmed on 20 fresh seeded episodes), beside the ``sync`` plan (PPO,
    RLlib's tuned Pendulum settings) on the same env, each with a wall budget.
    Pass: ES reaches -200 within its budget. RLlib's own Pendulum target
    (-300) is reported too.

Results: ``benchmarks/results/platform/platform_es.json`` (each part updates its key),
``platform_es_scaling.png`` and ``platform_es_solve.png``.

Command (the 2-core machine's heavy-job lock included)::

    flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/platform_es.py --part all
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from rlsuite.bench import results_dir
from rlsuite.platform.machine import cpu_topology, usable_cpus  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = results_dir("platform")
JSON_PATH = os.path.join(RESULTS, "platform_es.json")
console = Console()

SCALING_PLAN = dict(
    env="Pendulum-v1",
    population_size=64,
    hidden=(64, 64),
    sigma=0.05,
    lr=0.02,
    eval_episodes=0,
    seed=0,
)
SOLVE_PLANS = [  # tried in order until one solves, each with an equal share of the budget
    dict(
        env="Pendulum-v1",
        population_size=64,
        hidden=(32, 32),
        sigma=0.1,
        lr=0.03,
        eval_episodes=4,
        seed=0,
        num_workers=2,
    ),
    dict(
        env="Pendulum-v1",
        population_size=128,
        hidden=(16, 16),
        sigma=0.05,
        lr=0.02,
        eval_episodes=4,
        seed=0,
        num_workers=2,
    ),
]
PPO_PLAN = dict(
    env="Pendulum-v1",
    num_env_runners=1,
    num_envs_per_env_runner=10,
    lr=3e-4,
    lambda_=0.1,
    vf_clip_param=10.0,
    num_epochs=6,
    minibatch_size=128,
    train_batch_size=4000,
    hidden=(256, 256),
    activation="relu",
    seed=0,
)
SOLVE_AT, RLLIB_TARGET = -200.0, -300.0


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        console=console,
    )


def _es_generations(plan: Any, generations: int, label: str) -> tuple[list[dict], Any]:
    from rlsuite.platform.es import ESTrainer

    trainer = ESTrainer(plan)
    rows = []
    try:
        with _progress() as bar:
            task = bar.add_task(label, total=generations, info="")
            for _ in range(generations):
                m = trainer.train()
                m["nodes"] = dict(trainer.last_node_counts)
                rows.append(m)
                bar.update(
                    task,
                    advance=1,
                    info=f"{m['time_s']:.2f} s/gen  {m['env_steps_per_s']:,.0f} steps/s",
                )
    finally:
        trainer.stop()
    return rows, trainer


def _measure(plan: Any, generations: int, label: str) -> dict[str, Any]:
    """Seconds per generation and env steps/s of ``plan``, after one warm-up generation."""
    rows, _ = _es_generations(plan, generations + 1, label)
    rows = rows[1:]  # the first generation warms up the workers
    wall = sum(r["time_s"] for r in rows)
    steps = sum(r["env_steps_this_iter"] for r in rows)
    return {
        "num_workers": plan.num_workers,
        "population_size": plan.population_size,
        "s_per_generation": wall / len(rows),
        "env_steps_per_s": steps / wall,
        "env_steps_per_generation": steps / len(rows),
    }


def granularity_ceiling(pairs: int, workers: int) -> float:
    """The best efficiency a generation of ``pairs`` antithetic pairs can reach on
    ``workers`` workers when a pair is the unit of work: the busiest worker evaluates
    ceil(pairs / workers) of them while the mean is pairs / workers."""
    return pairs / (workers * math.ceil(pairs / workers))


def predicted_efficiency(fixed_s: float, per_pair_s: float, pairs: int, workers: int) -> float:
    """Strong-scaling efficiency from a generation's fixed cost and per-pair time (both
    measured on one worker): one worker takes fixed + pairs x per_pair, n workers take
    fixed + ceil(pairs / n) x per_pair."""
    one = fixed_s + pairs * per_pair_s
    return one / (workers * (fixed_s + math.ceil(pairs / workers) * per_pair_s))


def part_scaling(
    generations: int, workers: list[int], num_cpus: int, pairs_per_worker: int
) -> dict[str, Any]:
    """Strong scaling (population 64 fixed, the original criterion: 2 workers >= 1.8x
    one), weak scaling (``pairs_per_worker`` pairs per worker, the way Salimans et al.
    scaled), and a model of the strong case from two one-worker measurements."""
    from rlsuite.platform import cluster
    from rlsuite.platform.es import ESPlan

    pairs = SCALING_PLAN["population_size"] // 2
    out: dict[str, Any] = {
        "plan": ESPlan(**SCALING_PLAN).to_dict(),
        "generations": generations,
        "num_cpus": num_cpus,
        "pairs_per_worker_weak": pairs_per_worker,
        "runs": {},
        "weak": {},
        "skipped": {},
    }
    with cluster.local_cluster(num_cpus=num_cpus):
        for n in workers:
            if n > num_cpus:
                out["skipped"][str(n)] = f"needs {n} CPUs (1 per worker), Ray has {num_cpus}"
                console.print(f"{n} workers: skipped ({out['skipped'][str(n)]})")
                continue
            out["runs"][str(n)] = _measure(
                ESPlan(**SCALING_PLAN, num_workers=n), generations, f"{n} worker(s), pop 64"
            )
            weak = {**SCALING_PLAN, "population_size": 2 * pairs_per_worker * n}
            out["weak"][str(n)] = _measure(
                ESPlan(**weak, num_workers=n),
                generations,
                f"{n} worker(s), pop {weak['population_size']}",
            )
        one_pair = _measure(
            ESPlan(**{**SCALING_PLAN, "population_size": 2}, num_workers=1),
            generations,
            "1 worker, one pair",
        )
    for key in ("runs", "weak"):
        runs = out[key]
        if "1" in runs:
            for n, r in runs.items():
                r["efficiency_vs_1"] = r["env_steps_per_s"] / (
                    int(n) * runs["1"]["env_steps_per_s"]
                )
    if "1" in out["runs"]:
        t64 = out["runs"]["1"]["s_per_generation"]
        per_pair = max(0.0, (t64 - one_pair["s_per_generation"]) / (pairs - 1))
        fixed = max(0.0, one_pair["s_per_generation"] - per_pair)
        out["model"] = {
            "fixed_s_per_generation": fixed,
            "per_pair_s": per_pair,
            "predicted_strong_efficiency": {
                str(n): predicted_efficiency(fixed, per_pair, pairs, n) for n in (2, 4, 8, 15)
            },
            "granularity_ceiling": {str(n): granularity_ceiling(pairs, n) for n in (2, 4, 8, 15)},
        }
        console.print(
            f"one worker: {1000 * fixed:.1f} ms fixed per generation + {1000 * per_pair:.2f} ms "
            "per pair; population 64 predicted at "
            + ", ".join(
                f"{n} workers {e:.0%}"
                for n, e in out["model"]["predicted_strong_efficiency"].items()
            )
        )
    if "1" in out["runs"] and "2" in out["runs"]:
        r1, r2 = out["runs"]["1"], out["runs"]["2"]
        out["speedup"] = r2["env_steps_per_s"] / r1["env_steps_per_s"]
        out["criterion"] = "env steps/s with 2 workers >= 1.8x 1 worker (population 64 fixed)"
        out["passed"] = out["speedup"] >= 1.8
    else:
        out["criterion"] = "needs 1 and 2 workers"
        out["passed"] = False
    _plot_scaling(out)
    return out


def part_cluster(generations: int) -> dict[str, Any]:
    import ray
    from ray.cluster_utils import Cluster

    from rlsuite.platform import cluster as rcluster
    from rlsuite.platform.es import ESPlan

    sim = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    sim.add_node(num_cpus=1)
    try:
        rcluster.init(address=sim.address)
        info = rcluster.info()
        plan = ESPlan(**SCALING_PLAN, num_workers=2)
        rows, _ = _es_generations(plan, generations + 1, "2 workers on 2 nodes")
        rows = rows[1:]
        node_totals: dict[str, int] = {}
        for r in rows:
            for node, k in r["nodes"].items():
                node_totals[node] = node_totals.get(node, 0) + k
        wall = sum(r["time_s"] for r in rows)
        steps = sum(r["env_steps_this_iter"] for r in rows)
        out = {
            "nodes": info.num_nodes,
            "cpus": info.num_cpus,
            "pairs_per_node": {k[:12]: v for k, v in node_totals.items()},
            "nodes_used_every_generation": all(r["num_nodes_used"] == 2 for r in rows),
            "s_per_generation": wall / len(rows),
            "env_steps_per_s": steps / wall,
            "criterion": "both simulated nodes evaluate perturbations in every generation",
        }
        out["passed"] = bool(out["nodes_used_every_generation"] and len(node_totals) == 2)
        return out
    finally:
        rcluster.shutdown()
        ray.shutdown()
        sim.shutdown()


def _first(rows: list[dict], key: str, threshold: float) -> dict | None:
    for r in rows:
        v = r.get(key, math.nan)
        if not math.isnan(v) and v >= threshold:
            return r
    return None


def _confirm(controller: Any, episodes: int = 20) -> float:
    from rlsuite.platform.evaluation import evaluate, scenarios

    res = evaluate(
        controller, scenarios("Pendulum-v1", range(10_000, 10_000 + episodes)), num_workers=0
    )
    return res.summary["return"]["mean"]


def _es_solve(plan: Any, budget_s: float) -> dict[str, Any]:
    from rlsuite.platform.es import ESTrainer

    trainer = ESTrainer(plan)
    rows: list[dict] = []
    confirmed, t0 = None, time.perf_counter()
    try:
        with _progress() as bar:
            task = bar.add_task(f"es on Pendulum-v1 {plan.hidden}", total=None, info="")
            while time.perf_counter() - t0 < budget_s:
                m = trainer.train()
                m["wall_s"] = time.perf_counter() - t0
                rows.append(m)
                bar.update(
                    task,
                    advance=1,
                    info=f"gen {m['generation']}  eval "
                    f"{m['eval_return_mean']:.0f}  {m['env_steps']:,} steps",
                )
                if m["eval_return_mean"] >= SOLVE_AT:
                    score = _confirm(trainer.controller())
                    m["confirm_return_mean"] = score
                    if score >= SOLVE_AT:
                        confirmed = m
                        break
    finally:
        trainer.stop()
    return {
        "plan": plan.to_dict(),
        "curve": [
            {
                k: r[k]
                for k in (
                    "generation",
                    "wall_s",
                    "env_steps",
                    "eval_return_mean",
                    "episode_return_mean",
                )
            }
            for r in rows
        ],
        "solved": confirmed is not None,
        "time_to_solve_s": confirmed["wall_s"] if confirmed else None,
        "env_steps_to_solve": confirmed["env_steps"] if confirmed else None,
        "confirm_return_mean": confirmed["confirm_return_mean"] if confirmed else None,
        "time_to_rllib_target_s": (_first(rows, "eval_return_mean", RLLIB_TARGET) or {}).get(
            "wall_s"
        ),
        "best_eval_return": max((r["eval_return_mean"] for r in rows), default=math.nan),
        "budget_s": budget_s,
    }


def part_solve(budget_s: float, ppo_budget_s: float) -> dict[str, Any]:
    from rlsuite.platform import cluster
    from rlsuite.platform.es import ESPlan

    out: dict[str, Any] = {"threshold": SOLVE_AT, "rllib_target": RLLIB_TARGET, "es_attempts": []}
    with cluster.local_cluster(num_cpus=2):
        for cfg in SOLVE_PLANS:
            es = _es_solve(ESPlan(**cfg), budget_s / len(SOLVE_PLANS))
            out["es_attempts"].append(es)
            if es["solved"]:
                break
        out["es"] = es
        out["sync"] = _ppo(ppo_budget_s)
    out["criterion"] = f"es central policy >= {SOLVE_AT} on Pendulum-v1 (20 seeded episodes)"
    out["passed"] = bool(out["es"]["solved"])
    _plot_solve(out)
    return out


def _ppo(budget_s: float) -> dict[str, Any]:
    import tempfile

    from rlsuite.platform.optimizers import make_plan
    from rlsuite.platform.training import train

    plan = make_plan("sync", **PPO_PLAN)
    run_dir = tempfile.mkdtemp(prefix="es-bench-ppo-")
    t0 = time.perf_counter()

    class _Budget(Exception):
        pass

    def stop_on_budget(it: int, row: dict) -> None:
        if time.perf_counter() - t0 > budget_s:
            raise _Budget

    rows: list[dict] = []
    try:
        res = train(
            plan,
            iterations=10_000,
            run_dir=run_dir,
            progress=True,
            checkpoint_every=10,
            stop_return=SOLVE_AT,
            callback=stop_on_budget,
        )
        rows, ckpt = res.metrics, res.checkpoint
    except _Budget:
        from rlsuite.platform.checkpoints import latest_checkpoint
        from rlsuite.platform.metrics import JSONL, read_jsonl

        rows = list(read_jsonl(os.path.join(run_dir, JSONL)))
        ckpt = latest_checkpoint(run_dir)
    hit = _first(rows, "episode_return_mean", SOLVE_AT)
    final = _confirm(ckpt) if ckpt else math.nan
    return {
        "plan": plan.to_dict(),
        "curve": [
            {k: r.get(k) for k in ("iteration", "wall_s", "env_steps", "episode_return_mean")}
            for r in rows
        ],
        "solved": hit is not None,
        "time_to_solve_s": hit["wall_s"] if hit else None,
        "env_steps_to_solve": hit["env_steps"] if hit else None,
        "time_to_rllib_target_s": (_first(rows, "episode_return_mean", RLLIB_TARGET) or {}).get(
            "wall_s"
        ),
        "final_checkpoint_return_mean": final,
        "budget_s": budget_s,
        "note": "return = the stochastic policy's training episodes (RLlib's episode_return_mean); "
        "final_checkpoint_return_mean: the deterministic policy on 20 seeded episodes",
    }


def _plot_scaling(out: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for key, label in (
        ("runs", "population 64 (strong)"),
        ("weak", f"{out['pairs_per_worker_weak']} pairs per worker (weak)"),
    ):
        pts = sorted(
            (int(n), r["efficiency_vs_1"]) for n, r in out[key].items() if "efficiency_vs_1" in r
        )
        if pts:
            ax.plot([p[0] for p in pts], [100 * p[1] for p in pts], "o-", label=label)
    model = out.get("model", {}).get("predicted_strong_efficiency", {})
    if model:
        pts = sorted((int(n), e) for n, e in model.items())
        ax.plot(
            [1] + [p[0] for p in pts],
            [100] + [100 * p[1] for p in pts],
            "k:",
            label="population 64, model",
        )
    ax.set_xlabel("workers")
    ax.set_ylabel("efficiency vs 1 worker (%)")
    ax.set_ylim(0, 110)
    ax.set_title("es on Pendulum-v1", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, "platform_es_scaling.png"), dpi=120)
    plt.close(fig)


def _plot_solve(out: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    es, ppo = out["es"]["curve"], out["sync"]["curve"]
    for ax, x in zip(axes, ("wall_s", "env_steps")):
        ax.plot(
            [r[x] for r in es], [r["eval_return_mean"] for r in es], label="es (central policy)"
        )
        ax.plot(
            [r[x] for r in ppo],
            [r["episode_return_mean"] for r in ppo],
            label="sync / PPO (train episodes)",
        )
        ax.axhline(SOLVE_AT, color="k", ls="--", lw=0.8)
        ax.set_xlabel("wall time (s)" if x == "wall_s" else "env steps")
        ax.set_ylabel("return")
        ax.legend(loc="lower right")
    fig.suptitle("Pendulum-v1 on a 2-core CPU")
    fig.tight_layout()
    fig.savefig(os.path.join(RESULTS, "platform_es_solve.png"), dpi=120)
    plt.close(fig)


def _table(results: dict[str, Any]) -> Table:
    t = Table(title=f"es plan benchmark ({results.get('machine', '')})")
    for c in ("part", "measure", "value", "criterion", "pass"):
        t.add_column(c)
    if "scaling" in results:
        s = results["scaling"]
        for key, what in (("runs", "pop 64"), ("weak", "weak")):
            for n, r in s.get(key, {}).items():
                eff = r.get("efficiency_vs_1")
                t.add_row(
                    "scaling",
                    f"{n} worker(s), {what} ({r.get('population_size', 64)})",
                    f"{r['s_per_generation']:.3f} s/gen, {r['env_steps_per_s']:,.0f} steps/s"
                    + ("" if eff is None else f", {eff:.0%} of linear"),
                    "",
                    "",
                )
        if "speedup" in s:
            t.add_row(
                "scaling", "speed-up 1 -> 2", f"{s['speedup']:.2f}x", ">= 1.8x", str(s["passed"])
            )
    if "cluster" in results:
        c = results["cluster"]
        t.add_row(
            "cluster",
            "pairs per node",
            json.dumps(c["pairs_per_node"]),
            "both nodes work",
            str(c["passed"]),
        )
        t.add_row(
            "cluster",
            "2 nodes x 1 CPU",
            f"{c['s_per_generation']:.3f} s/gen, {c['env_steps_per_s']:,.0f} steps/s",
            "",
            "",
        )
    if "solve" in results:
        s = results["solve"]
        for k in ("es", "sync"):
            r = s[k]
            v = (
                f"{r['time_to_solve_s']:.0f} s, {r['env_steps_to_solve']:,} steps"
                if r["solved"]
                else f"not within {r['budget_s']:.0f} s"
            )
            t.add_row(
                "solve",
                f"{k}: Pendulum >= {SOLVE_AT:.0f}",
                v,
                "es solves" if k == "es" else "(beside)",
                str(s["passed"]) if k == "es" else "",
            )
            tt = r.get("time_to_rllib_target_s")
            t.add_row(
                "solve",
                f"{k}: Pendulum >= {RLLIB_TARGET:.0f}",
                f"{tt:.0f} s" if tt is not None else "not reached",
                "",
                "",
            )
    return t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--part", choices=["scaling", "cluster", "solve", "all"], default="all")
    ap.add_argument(
        "--generations", type=int, default=10, help="measured generations (scaling, cluster)"
    )
    ap.add_argument("--budget", type=float, default=600.0, help="ES wall budget for solve (s)")
    ap.add_argument("--ppo-budget", type=float, default=900.0, help="PPO wall budget for solve (s)")
    ap.add_argument(
        "--workers",
        type=lambda t: [int(x) for x in t.split(",")],
        default=[1, 2],
        help="worker counts of the scaling part, e.g. 1,2,4,8,15 (default 1,2); counts above "
        "--num-cpus are skipped",
    )
    ap.add_argument(
        "--num-cpus", type=int, default=None, help="Ray's CPUs (default: all this process can use)"
    )
    ap.add_argument(
        "--pairs-per-worker",
        type=int,
        default=16,
        help="antithetic pairs per worker in the weak-scaling runs (default 16)",
    )
    ap.add_argument(
        "--out",
        default=None,
        help="the JSON (default benchmarks/results/platform/platform_es.json)",
    )
    args = ap.parse_args(argv)
    global RESULTS, JSON_PATH
    if args.out:
        JSON_PATH = os.path.abspath(args.out)
        RESULTS = os.path.dirname(JSON_PATH)
    num_cpus = args.num_cpus or usable_cpus()
    os.makedirs(RESULTS, exist_ok=True)
    results: dict[str, Any] = {}
    if os.path.exists(JSON_PATH):
        with open(JSON_PATH) as f:
            results = json.load(f)
    results["machine"] = (
        f"{cpu_topology().describe()}, {platform.processor() or platform.machine()}"
    )
    parts = ["scaling", "cluster", "solve"] if args.part == "all" else [args.part]
    for part in parts:
        console.rule(f"es benchmark: {part}")
        if part == "scaling":
            results["scaling"] = part_scaling(
                args.generations, args.workers, num_cpus, args.pairs_per_worker
            )
        elif part == "cluster":
            results["cluster"] = part_cluster(args.generations)
        else:
            results["solve"] = part_solve(args.budget, args.ppo_budget)
        given = argv if argv is not None else sys.argv[1:]
        results.setdefault("commands", {})[part] = " ".join(
            ["python", "benchmarks/platform_es.py", *given]
        )
        with open(JSON_PATH, "w") as f:
            json.dump(results, f, indent=2)
    console.print(_table(results))
    console.print(f"JSON: {JSON_PATH}")
    ok = all(results[p]["passed"] for p in parts)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
