"""The runs of ``rlsuite bench run queryopt_online``: a model trained offline at the cheap UDF
cost, one model server (``serve --learn``) with one plugin stream through it (its record), the
figure of the speed-up windows, and the pass checks."""

from __future__ import annotations

import os
import time
from typing import Any


def train_cheap(root: str, dsn: str, cost: int) -> str:
    """A model trained offline at the cheap cost only (as queryopt_udf trains it)."""
    import shutil

    from rlsuite.apps.queryopt import train as T
    from rlsuite.platform import cluster

    run_dir = f"{root}/cheap"
    shutil.rmtree(run_dir, ignore_errors=True)
    cfg = T.TrainConfig(
        dsn=dsn, workload="udf", workload_config={"udf_cost": cost}, num_queries=30, max_steps=2,
        timeout_ms=1000, iterations=3, learning_starts=100, epsilon_timesteps=1500, target_update_freq=100,
    )  # fmt: skip
    with cluster.local_cluster(num_cpus=2):
        T.train(cfg, run_dir, progress=True)
    return run_dir


def one_run(s: Any, run_dir: str, name, workload, db, schema, queries, costs, per_cost, base, rows, model, first_s, drift, tmp) -> dict:  # fmt: skip
    """One model server (``serve --learn``) and one plugin stream through it; its record."""
    import shutil

    from rich.console import Console

    from rlsuite.apps.queryopt.plugin import drift as D
    from rlsuite.apps.queryopt.plugin.protocol import request
    from rlsuite.apps.queryopt.plugin.sessions import model_server

    sock, store, log = (os.path.join(tmp, f"{name}.{x}") for x in ("sock", "sqlite", "log"))
    serve = ["--model", model] if model else []
    serve += ["--learn", "--store", store, "--workload", workload, "--wait-ms", str(s.wait_ms), "--retrain-every", str(s.retrain_every), "--explore", str(s.explore)]  # fmt: skip
    with model_server(sock, db.dsn, serve, log):
        t1 = time.time()
        trace = D.run_stream(db.dsn, schema, queries, costs, per_cost, base, rows, sock, s.qopt_timeout_ms, Console(), s.seed, first_s, drift, s.warm_session)  # fmt: skip
        stream_s = time.time() - t1
        stats = request(sock, {"op": "stats"}, timeout_s=30) or {}
    os.makedirs(run_dir, exist_ok=True)
    shutil.copy(log, os.path.join(run_dir, f"serve_{name}.log"))
    shutil.copy(store, os.path.join(run_dir, f"store_{name}.sqlite"))
    keys = ("requests", "not_ready", "rewards", "explored", "answers", "regressions_caught", "models", "retrains", "retrainer", "shapes")  # fmt: skip
    server = {k: stats.get(k) for k in keys}
    with open(log) as f:
        tail = f.read().splitlines()[-30:]
    return {
        "model": model, "workload": workload, "stream_s": stream_s,
        "analysis": D.analyse(trace, costs, per_cost), "during_retrains": D.during_retrains(trace, server.get("retrains") or []),
        "server": server, "server_log_tail": tail, "trace": trace,
    }  # fmt: skip


def figure(runs: dict, costs: list[int]):
    """One panel per run: the 20- and 50-execution speed-ups, the drifts and the targets."""
    import matplotlib.pyplot as plt

    from rlsuite.apps.queryopt.plugin import drift as D

    fig, axes = plt.subplots(len(runs), 1, figsize=(9, 3.2 * len(runs)), squeeze=False)
    for ax, r in zip(axes[:, 0], runs.values()):
        tr, ws = r["trace"], r["analysis"]["windows"]
        xs = list(range(D.ADAPT_WINDOW, len(tr) + 1))
        ax.plot(xs, [D.ratio(tr[x - D.ADAPT_WINDOW : x]) for x in xs], lw=0.8, label="20-run")
        ax.step([w["start"] + D.WINDOW for w in ws], [w["speedup"] for w in ws], where="pre", lw=1.6, label="50-run windows")  # fmt: skip
        if r["workload"] == "udf":
            for p, cost in enumerate(costs):
                idx = [e["i"] for e in tr if e["phase"] == p]
                if p:
                    ax.axvline(idx[0], color="grey", ls=":")
                target = 0.9 * D.OFFLINE.get(cost, 1.0)
                ax.hlines(target, idx[0], idx[-1] + 1, colors="red", linestyles="--", lw=1)
                ax.text(idx[0], 1.08 * target, f"cost {cost}", fontsize=7)
            ax.set_title(f"udf, from {'no model' if r['model'] is None else 'the cheap model'}")
        else:
            ax.axhline(10.0, color="red", ls="--", lw=1)
            ax.set_title(f"{r['workload']}, from no model (red: 10x)")
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set(yscale="log", ylabel="speed-up (log)")
        ax.legend(fontsize=7, loc="lower right")
    axes[-1, 0].set_xlabel("execution")
    fig.suptitle("pg_qopt learning online (red: 90% of the offline-trained speed-up)", fontsize=10)
    return fig


def verdicts(runs: dict) -> dict[str, bool]:
    """Per run: adapted after each drift (udf) or a 20-window above 10x (joins); no 50-window
    slower; 0 wrong."""
    out = {}
    for start, r in runs.items():
        a = r["analysis"]
        if r["workload"] == "udf":
            out[f"{start}: adapted within {200} executions after each drift"] = a["pass_adapt"]
        else:
            f10 = r["first_above_10x"]
            out[f"{start}: a 20-window above 10x ({'never' if f10 is None else f10['executions']})"] = f10 is not None  # fmt: skip
        out[f"{start}: no 50-window slower ({a['windows_slower']} of {len(a['windows'])})"] = a["pass_windows"]  # fmt: skip
        out[f"{start}: 0 wrong ({a['wrong_results']})"] = a["pass_wrong"]
    return out
