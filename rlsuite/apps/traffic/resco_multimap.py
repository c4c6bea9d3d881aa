"""One policy for every light of several RESCO maps: trained on the maps in turn (one run of
:mod:`~rlsuite.apps.traffic.resco_training` on ``rlsuite/Signals-v0`` with ``networks=``, the
maps padded to common spaces) and scored on each map alone, beside the baselines and each
map's own policy (the best of ``traffic_resco_learned*.json``)."""

from __future__ import annotations

import glob
import json
import os
import time

from rlsuite.apps.traffic import resco_training as rt
from rlsuite.apps.traffic.resco_scoring import BASELINES, run_seeds

CALL_BUDGET_S = 420
"""A call scores maps while it has been running less than this (heavy-lock etiquette)."""


def results_stem(s: rt.RescoSettings) -> str:
    """``--json``'s name, else ``traffic_resco_together[_TAG]``."""
    if s.json:
        return os.path.splitext(os.path.basename(s.json))[0]
    return "traffic_resco_together" + (f"_{s.tag}" if s.tag else "")


def check_maps(maps: list[str]) -> None:
    """The maps share one episode length (the budget counts episodes in decisions)."""
    steps = {m: rt.steps_per_episode({"network": m}) for m in maps}
    if len(set(steps.values())) > 1:
        raise ValueError(
            "these maps decide a different number of times per episode "
            f"({', '.join(f'{m}: {n}' for m, n in steps.items())}); train together only maps "
            "of one episode length (RESCO's six city maps: 360)"
        )


def env_config(s: rt.RescoSettings, maps: list[str], rd: str) -> dict:
    """The run's env config: the maps, their common padding (so the checkpoint records it),
    the SUMO release and the episode log."""
    from rlsuite.apps.traffic.envs.signals_multimap import padding

    return {"networks": ",".join(maps), **padding(maps, sumo_version=s.sumo),
            "sumo_version": s.sumo, "episode_log": os.path.join(rd, "episodes.jsonl")}  # fmt: skip


def single_map(cfg: dict, m: str) -> dict:
    """One of the run's maps alone, in the run's padded spaces."""
    return {"network": m, **{k: cfg[k] for k in ("pad_lanes", "pad_phases", "sumo_version")}}


def evaluate_maps(s: rt.RescoSettings, maps: list[str], state: dict, t_start: float) -> bool:
    """Score the final policy and the baselines on each map's held-out seeds, as many
    (map, controller) cells as the call's time allows; True when every cell is done."""
    from rlsuite.apps.traffic.controllers import SignalProgram
    from rlsuite.platform.checkpoints.loading import load_controller

    seeds = list(range(s.eval_seed, s.eval_seed + s.eval_seeds))
    ev = state.setdefault("evaluation", {})
    if ev.get("seeds") != seeds:
        ev.clear()
        ev["seeds"] = seeds
    for m in maps:
        cells = ev.setdefault(m, {})
        for label in ["learned"] + ([] if s.no_baselines else list(BASELINES)):
            if label in cells:
                continue
            if time.time() - t_start > CALL_BUDGET_S:
                return False
            ctrl, extra = ((load_controller(state["checkpoint"]), {}) if label == "learned"
                           else (SignalProgram(label), {"program": label}))  # fmt: skip
            cells[label] = run_seeds(ctrl, label, seeds, {**single_map(state["env_config"], m),
                                                          **extra}, f"{m} held-out")  # fmt: skip
    return True


def own_policies(results: str) -> dict[str, dict]:
    """Each map's best held-out delay of a policy trained on that map alone (the
    ``traffic_resco_learned*.json`` files in ``results``), with where it comes from."""
    out: dict[str, dict] = {}
    for path in sorted(glob.glob(os.path.join(results, "traffic_resco_learned*.json"))):
        for r in json.load(open(path)).get("rows", []):
            if r.get("heldout"):
                d = r["heldout"][rt.policy_label(r["heldout"])]["delay_mean"]
                if r["map"] not in out or d < out[r["map"]]["delay"]:
                    out[r["map"]] = {"delay": d, "plan": r["plan"], "file": os.path.basename(path)}
    return out


def summarise(maps: list[str], state: dict, results: str) -> list[dict]:
    from rlsuite.apps.traffic import resco

    ev, own = state.get("evaluation", {}), own_policies(results)
    rows = []
    for m in maps:
        pub = resco.PUBLISHED[m]
        best = rt.best_learner(pub)
        row = {"map": m, "published": pub, "best_published_learner": best,
               "own_policy": own.get(m), "heldout": ev.get(m, {})}  # fmt: skip
        if learned := row["heldout"].get("learned"):
            ours = learned["delay_mean"]
            row["checks"] = {f"held-out <= RESCO's best learner ({best})": ours <= best}
            for b in ("fixed", "maxpressure"):
                if b in row["heldout"]:
                    row["checks"][f"held-out < {b} (same seeds)"] = ours < row["heldout"][b]["delay_mean"]  # fmt: skip
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
        beaten = [k for k in rt.LEARNERS if r["published"].get(k) and ours <= r["published"][k]]
        fixed = r["heldout"].get("fixed", {}).get("delay_mean")
        if not beaten or fixed is None or ours >= fixed:
            out.append(f"{r['map']} {ours:.2f} (fixed {fixed}, RESCO learners beaten: "
                       f"{', '.join(beaten) or 'none'})")  # fmt: skip
    return out


def ship(
    s: rt.RescoSettings, maps: list[str], state: dict, rows: list[dict], policies: str
) -> None:
    """Export the shared policy to ``<policies>/resco_cities_<plan>`` unless
    :func:`ship_blockers` names a reason (not twice)."""
    out = os.path.join(policies, f"resco_cities_{s.plan}")
    if os.path.exists(out):
        return
    if blockers := ship_blockers(rows):
        print("not shipped: " + "; ".join(blockers))
        return
    cfg, seeds = state["env_config"], state["evaluation"]["seeds"]
    sets = " ".join(
        f"--env-set {k}={v}" for k, v in single_map(cfg, maps[0]).items() if k != "network"
    )
    rt.export(state["checkpoint"], out, seeds, f"--env-set network=<map> {sets}",
              f"{state['command']} (final checkpoint; held-out seeds {seeds[0]}-{seeds[-1]} of each map on "
              f"SUMO {cfg['sumo_version']}, per map in benchmarks/results/traffic/{results_stem(s)}.json; "
              f"any of {', '.join(maps)})")  # fmt: skip


def figure(rows: list[dict]):
    """Per map: the shared policy, the map's own, greedy, max-pressure and RESCO's best learner."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    bars = [("shared policy", lambda r: r["heldout"].get("learned", {}).get("delay_mean")),
            ("map's own policy", lambda r: (r["own_policy"] or {}).get("delay")),
            ("greedy", lambda r: r["heldout"].get("greedy", {}).get("delay_mean")),
            ("max-pressure", lambda r: r["heldout"].get("maxpressure", {}).get("delay_mean")),
            ("RESCO's best learner", lambda r: r["best_published_learner"])]  # fmt: skip
    x, w = np.arange(len(rows)), 0.8 / len(bars)
    fig, ax = plt.subplots(figsize=(1.9 * len(rows) + 2, 4))
    for i, (label, get) in enumerate(bars):
        ax.bar(x + (i - len(bars) / 2 + 0.5) * w, [get(r) or np.nan for r in rows], w, label=label)
    ax.set_xticks(x, [r["map"] for r in rows])
    ax.set(ylabel="RESCO delay, held-out seeds (s/veh)",
           title="one policy for every light of every map, scored on each map alone")  # fmt: skip
    ax.legend(fontsize=7)
    return fig
