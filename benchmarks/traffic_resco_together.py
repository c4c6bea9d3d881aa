"""One policy shared by every light of several RESCO maps, trained on the maps in turn and
scored on each map alone. RESCO trained one model per map; this asks whether one policy
serves six cities.

Training is ``traffic_resco_learned.py``'s (same flags, plan settings and resumable chunks),
on the signals env's ``networks=...``: episode ``k`` runs map ``k % n``, every light in one
padded space (the most lanes and phases of any light of the maps), so ``--episodes 600``
over six maps gives each map 100 (RESCO's IDQN budget per map). Then the final policy acts
deterministically on each map alone (same padding) on ``--eval-seeds`` held-out seeds,
beside fixed-time, greedy and max-pressure on the same seeds (unless ``--no-baselines``),
and beside the map's own policy where ``traffic_resco_learned.py`` trained one (its JSONs).

Pass criterion, per map (as for the maps' own policies): held-out delay at or below RESCO's
best published learner, and below fixed-time and max-pressure on the same seeds.

``--ship`` exports the shared policy to ``benchmarks/policies/resco_cities_<plan>`` once
every map is scored, when on every map it beats one of RESCO's published learners and
fixed-time held-out (:func:`ship_blockers`).

Resumable: call the same command until it reports "done" (each call trains at most
``--minutes`` or scores as many maps as fit in ~7 minutes).

Usage:
    flock /tmp/rlsuite-heavy.lock .venv/bin/python benchmarks/traffic_resco_together.py \\
        --maps cologne1,cologne3,cologne8,ingolstadt1,ingolstadt7,ingolstadt21 \\
        --plan sync --episodes 600 --minutes 42 --action-mask

Writes benchmarks/results/traffic/traffic_resco_together.json and .png (per map: the shared
policy, the map's own policy, the baselines and RESCO's best learner), and the run under
runs/benchmarks/traffic_resco_together/<maps>_<plan>_<sumo>_s<seed>/.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time

import traffic_resco_learned as single

from rlsuite.apps.traffic.benchmarking import MACHINE, RESULTS
from rlsuite.apps.traffic.resco_scoring import BASELINES, run_seeds

CALL_BUDGET_S = 420
"""A call scores maps while it has been running less than this (heavy-lock etiquette)."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """``traffic_resco_learned.py``'s flags; ``--json`` defaults to this benchmark's file."""
    given = sys.argv[1:] if argv is None else argv
    args = single.parse_args(given)
    if "--run-root" not in given:  # apart from the single-map runs that script reports
        args.run_root = os.path.join("runs", "benchmarks", "traffic_resco_together")
    if "--json" not in given:
        tag = f"_{args.tag}" if args.tag else ""
        args.json = os.path.join(RESULTS, f"traffic_resco_together{tag}.json")
    return args


def check_maps(maps: list[str]) -> None:
    """The maps share one episode length (the budget counts episodes in decisions)."""
    steps = {m: single.steps_per_episode({"network": m}) for m in maps}
    if len(set(steps.values())) > 1:
        raise SystemExit(
            "these maps decide a different number of times per episode "
            f"({', '.join(f'{m}: {n}' for m, n in steps.items())}); train together only maps "
            "of one episode length (RESCO's six city maps: 360)"
        )


def env_config(args: argparse.Namespace, maps: list[str], rd: str) -> dict:
    """The run's env config: the maps, their common padding (so the checkpoint records it),
    the SUMO release and the episode log."""
    from rlsuite.apps.traffic.envs.signals_multimap import padding

    return {"networks": ",".join(maps), **padding(maps, sumo_version=args.sumo),
            "sumo_version": args.sumo, "episode_log": os.path.join(rd, "episodes.jsonl")}  # fmt: skip


def single_map(cfg: dict, m: str) -> dict:
    """One of the run's maps alone, in the run's padded spaces."""
    keep = ("pad_lanes", "pad_phases", "sumo_version")
    return {"network": m, **{k: cfg[k] for k in keep}}


def evaluate_maps(args: argparse.Namespace, maps: list[str], state: dict, t_start: float) -> bool:
    """Score the final policy and the baselines on each map's held-out seeds, as many
    (map, controller) cells as the call's time allows; True when every cell is done."""
    from rlsuite.apps.traffic.controllers import SignalProgram
    from rlsuite.platform.checkpoints.loading import load_controller

    seeds = list(range(args.eval_seed, args.eval_seed + args.eval_seeds))
    ev = state.setdefault("evaluation", {})
    if ev.get("seeds") != seeds:
        ev.clear()
        ev["seeds"] = seeds
    labels = ["learned"] + ([] if args.no_baselines else list(BASELINES))
    for m in maps:
        cells = ev.setdefault(m, {})
        for label in labels:
            if label in cells:
                continue
            if time.time() - t_start > CALL_BUDGET_S:
                return False
            cfg = single_map(state["env_config"], m)
            if label == "learned":
                ctrl, extra = load_controller(state["checkpoint"]), {}
            else:
                ctrl, extra = SignalProgram(label), {"program": label}
            cells[label] = run_seeds(ctrl, label, seeds, {**cfg, **extra}, f"{m} held-out")
    return True


def own_policies() -> dict[str, dict]:
    """Each map's best held-out delay of a policy trained on that map alone (the
    ``traffic_resco_learned*.json`` files), with where it comes from."""
    out: dict[str, dict] = {}
    for path in sorted(glob.glob(os.path.join(RESULTS, "traffic_resco_learned*.json"))):
        for r in json.load(open(path)).get("rows", []):
            if not r.get("heldout"):
                continue
            d = r["heldout"][single.policy_label(r["heldout"])]["delay_mean"]
            if r["map"] not in out or d < out[r["map"]]["delay"]:
                out[r["map"]] = {"delay": d, "plan": r["plan"], "file": os.path.basename(path)}
    return out


def summarise(maps: list[str], state: dict) -> list[dict]:
    from rlsuite.apps.traffic import resco

    ev, own = state.get("evaluation", {}), own_policies()
    rows = []
    for m in maps:
        pub = resco.PUBLISHED[m]
        best = min(v for k, v in pub.items() if k in single.LEARNERS and v)
        row = {"map": m, "published": pub, "best_published_learner": best,
               "own_policy": own.get(m), "heldout": ev.get(m, {})}  # fmt: skip
        learned = row["heldout"].get("learned")
        if learned:
            ours = learned["delay_mean"]
            row["checks"] = {f"held-out <= RESCO's best learner ({best})": ours <= best}
            for b in ("fixed", "maxpressure"):
                if b in row["heldout"]:
                    row["checks"][f"held-out < {b} (same seeds)"] = (
                        ours < row["heldout"][b]["delay_mean"]
                    )
        rows.append(row)
    return rows


def ship_blockers(rows: list[dict]) -> list[str]:
    """Why the shared policy is not shipped (empty: ship it): a map not scored yet, or one
    where its held-out delay beats none of RESCO's published learners or is not below
    fixed-time on the same seeds. It need not beat the best static controller, as a map's
    own policy must: it is one policy a user can run on each city."""
    out = []
    for r in rows:
        cell = r["heldout"].get("learned")
        if cell is None:
            out.append(f"{r['map']} not scored yet")
            continue
        ours = cell["delay_mean"]
        beaten = [k for k in single.LEARNERS if r["published"].get(k) and ours <= r["published"][k]]
        fixed = r["heldout"].get("fixed", {}).get("delay_mean")
        if not beaten or fixed is None or ours >= fixed:
            out.append(f"{r['map']} {ours:.2f} (fixed {fixed}, RESCO learners beaten: "
                       f"{', '.join(beaten) or 'none'})")  # fmt: skip
    return out


def ship(args: argparse.Namespace, maps: list[str], state: dict, rows: list[dict]) -> None:
    """Export the shared policy to ``benchmarks/policies/resco_cities_<plan>`` unless
    :func:`ship_blockers` names a reason (not twice)."""
    from rlsuite.platform.checkpoints.export import export_policy

    out = os.path.join(os.path.dirname(RESULTS), "policies", f"resco_cities_{args.plan}")
    if os.path.exists(out):
        return
    blockers = ship_blockers(rows)
    if blockers:
        print("not shipped: " + "; ".join(blockers))
        return
    cfg, seeds = state["env_config"], state["evaluation"]["seeds"]
    sets = " ".join(
        f"--env-set {k}={v}" for k, v in single_map(cfg, maps[0]).items() if k != "network"
    )
    note = (
        f"{state['command']} (final checkpoint; held-out seeds {seeds[0]}-{seeds[-1]} of each "
        f"map on SUMO {cfg['sumo_version']}, per map in "
        f"benchmarks/results/traffic/{os.path.basename(args.json)}). Evaluate on one map (any of "
        f"{', '.join(maps)}): traffic-train evaluate --scenario signals --env-set network=<map> "
        f"{sets} --controller {os.path.relpath(out)} --episodes {len(seeds)} --seed {seeds[0]} "
        "--workers 0"
    )
    export_policy(state["checkpoint"], out, note=note)
    print(f"shipped: {out}")


def plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    bars = [("shared policy", lambda r: r["heldout"].get("learned", {}).get("delay_mean")),
            ("map's own policy", lambda r: (r["own_policy"] or {}).get("delay")),
            ("greedy", lambda r: r["heldout"].get("greedy", {}).get("delay_mean")),
            ("max-pressure", lambda r: r["heldout"].get("maxpressure", {}).get("delay_mean")),
            ("RESCO's best learner", lambda r: r["best_published_learner"])]  # fmt: skip
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(1.9 * len(rows) + 2, 4))
    w = 0.8 / len(bars)
    for i, (label, get) in enumerate(bars):
        v = [get(r) or np.nan for r in rows]
        ax.bar(x + (i - len(bars) / 2 + 0.5) * w, v, w, label=label)
    ax.set_xticks(x, [r["map"] for r in rows])
    ax.set_ylabel("RESCO delay, held-out seeds (s/veh)")
    ax.set_title("one policy for every light of every map, scored on each map alone")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    from rlsuite.apps.traffic.envs.signals_multimap import parse_networks

    args = parse_args(argv)
    maps = parse_networks(args.maps)
    check_maps(maps)
    name = "+".join(maps)
    rd = single.run_dir_of(args, name)
    state = single.load_state(rd)
    if state is None:
        given = sys.argv[1:] if argv is None else argv
        state = {"map": name, "maps": maps, "plan_name": args.plan, "sumo": args.sumo,
                 "env_config": env_config(args, maps, rd), "episodes": args.episodes,
                 "args": vars(args), "chunks": [],
                 "command": "flock /tmp/rlsuite-heavy.lock .venv/bin/python "
                 "benchmarks/traffic_resco_together.py " + " ".join(given)}  # fmt: skip
        single.save_state(rd, state)
    t_start = time.time()
    if not state.get("done_training"):
        single.train_chunk(args, name, rd, state, t_start)
    done = False
    if state.get("done_training"):
        done = evaluate_maps(args, maps, state, t_start)
        single.save_state(rd, state)
    rows = summarise(maps, state)
    eps = single.read_jsonl(os.path.join(rd, "episodes.jsonl"))
    out = {"benchmark": "traffic_resco_together", "machine": MACHINE, "run_dir": rd,
           "command": state["command"], "env_config": state["env_config"],
           "plan": state["plan_name"], "sumo": state["sumo"], "episodes_trained": len(eps),
           "train_wall_s": sum(c.get("wall_s", 0.0) for c in state["chunks"]),
           "training_episodes": [{k: e.get(k) for k in ("seed", "network", "delay")} for e in eps],
           "done": done, "rows": rows}  # fmt: skip
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1, default=str)
    plot(rows, os.path.splitext(args.json)[0] + ".png")
    ok = True
    for r in rows:
        cell = r["heldout"].get("learned")
        got = f"{cell['delay_mean']:.2f} ± {cell['delay_std']:.2f}" if cell else "not scored yet"
        print(
            f"{r['map']}: shared policy {got}; RESCO's best learner {r['best_published_learner']}"
        )
        for k, v in r.get("checks", {}).items():
            print(f"  {'PASS' if v else 'FAIL'}  {k}")
            ok = ok and v
    if args.ship and done:
        ship(args, maps, state, rows)
    status = "done" if done else ("trained, evaluate next call" if state.get("done_training")
                                  else "training: run again")  # fmt: skip
    print(f"{name} [{args.plan}]: {len(eps)} episodes, {status}\nresults: {args.json}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
