"""Held-out TPC-DS templates (``rlsuite bench run queryopt_tpcds_learn``): the DQN trained
on one half of the templates (by query-number parity) against greedy-by-cost and the oracle
(rlsuite.apps.queryopt.oracle.search) on the other half.

Every run goes through one :class:`~rlsuite.apps.queryopt.oracle.RuntimeCache`. A rewrite is
served only when measured faster than the original and its rows equal the original's
(:class:`RowChecker`: on the SF 0.01 copy; when the copy returns no rows, the rewrite's
full-data rows against DuckDB's answer on the same data). Greedy is served as it chooses,
its rewrite timed under 2x the original (a slower one counts at that bound).
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class HeldOutSettings:
    """The search and training settings of a held-out benchmark (what :func:`train_split`
    reads besides ``scale``); a declaration subclasses it with its own defaults and fields."""

    depth: int = 3
    """longest rewrite sequence"""
    beam: int = 2
    """0: exhaustive search; k: extend the k fastest"""
    iterations: int = 8
    """DQN iterations"""
    steps_per_iteration: int = 1000
    """env steps per iteration"""
    epsilon_steps: int = 0
    """exploration decay (0: six tenths of all steps)"""
    log_reward: bool = False
    """replay reward -log(runtime ratio) instead of -ratio"""
    keep_censored: bool = False
    """train on censored times as runtimes (a lower bound; default: left out)"""
    seed: int = 0
    """the DQN's seed"""
    rules: str = ""
    """the DQN's and the oracle's actions: rule names, comma-separated, in order (empty: the
    MDP's rules)"""


def rule_list(s) -> tuple[str, ...]:
    """The rule names of settings ``s``'s ``rules`` (empty: the MDP's rules), checked."""
    from rlsuite.apps.queryopt import rules as R

    names = tuple(x.strip() for x in s.rules.split(",") if x.strip())
    return tuple(r.name for r in R.named(names))


SPLITS = {"odd": 1, "even": 0}
"""Split name -> parity of the query numbers trained on (the rest are held out)."""


class RowChecker:
    """Rows of a rewrite against the original's (module doc); DuckDB opened on first need."""

    def __init__(self, db, w, cache, cap_ms):
        self.db, self.w, self.cache, self.cap_ms = db, w, cache, cap_ms
        self._duck = None
        self._ctx = None

    def __call__(self, sql: str, q) -> tuple[bool | None, str]:
        from rlsuite.apps.queryopt.verify import has_order_by, reference_rows_match, same_rows

        ordered = has_order_by(sql)
        a = self.db.run(sql, self.w.check_schema, self.cap_ms)
        b = self.db.run(q.sql(), self.w.check_schema, self.cap_ms, q.settings_dict)
        if a.rows and not a.timed_out and not b.timed_out:
            return same_rows(a.rows, b.rows or [], ordered=ordered), self.w.check_schema
        rows = self.cache.rows.get(q.key())
        if rows is None:
            r = self.db.run(q.sql(), self.w.schema, self.cap_ms, q.settings_dict)
            rows = None if r.timed_out else r.rows
        if rows is None:
            return None, "rewrite past the cap"
        if self._duck is None:
            from rlsuite.apps.queryopt.workloads.tpcds import duckdb_tpcds

            self._ctx = duckdb_tpcds(self.w.scale)
            self._duck = self._ctx.__enter__()
        ok = reference_rows_match(rows, self._duck.execute(sql).fetchall(), ordered)
        return ok, "duckdb_same_data"

    def close(self):
        if self._ctx is not None:
            self._ctx.__exit__(None, None, None)


def serve(db, w, cache, check, n, sql, seq, orig_s, cap_ms) -> dict:
    """Time ``seq`` (cache first); served only when faster than the original with the
    original's rows."""
    from rlsuite.apps.queryopt import rules as R
    from rlsuite.apps.queryopt.rewriter import apply_rules, catalog

    out = {"rules": list(seq), "s": orig_s, "served": False}
    if not seq:
        return out
    q, reasons = apply_rules(R.Query.parse(sql, catalog(db, w.schema)), seq)
    if reasons or not q.applied:
        out["note"] = f"does not apply: {reasons}"
        return out
    bound = int(min(cap_ms, orig_s * 1000))
    s, cens = cache.time(db, w.schema, q, bound)
    if not cens and s < orig_s:
        s, cens = cache.time(db, w.schema, q, bound, again=True)  # the second run counts
    out["measured_s"], out["censored"] = s, cens
    if cens or s >= orig_s:
        out["note"] = "not faster than the original; kept it"
        return out
    ok, on = check(sql, q)
    out.update(rows=ok, checked_on=on)
    if ok:
        out.update(s=s, served=True)
    else:
        out["note"] = "rows not confirmed; kept the original"
    return out


def greedy(db, w, cache, check, sql, orig_s, cap_ms) -> dict:
    from rlsuite.apps.queryopt import rules as R
    from rlsuite.apps.queryopt.rewriter import GreedyByCost, apply_rules, catalog

    try:
        names = GreedyByCost(db, w.schema, timeout_ms=cap_ms).choose(sql)
    except Exception as e:  # noqa: BLE001 - an unsupported query keeps its plan
        return {"rules": [], "s": orig_s, "note": str(e)[:200]}
    out = {"rules": names, "s": orig_s}
    if names:
        q, _ = apply_rules(R.Query.parse(sql, catalog(db, w.schema)), names)
        if q.applied:
            s, cens = cache.time(db, w.schema, q, int(min(cap_ms, 2000 * orig_s + 50)))
            ok, on = check(sql, q) if not cens else (None, "past its bound")
            out.update(s=s if ok is not False else orig_s, censored=cens, rows=ok, checked_on=on)
    return out


def train_split(
    db, s, split: str, searched: dict, qs: dict, run_dir: str, train_q: list | None = None
) -> tuple[list, dict]:
    """The training half's searches as an experience store, and the DQN trained on it in
    ``run_dir`` (settings ``s``: ``scale`` and :class:`HeldOutSettings`). The half: the queries of ``split``'s
    parity, or ``train_q`` when given. Returns the queries trained on and the training
    record."""
    from rlsuite.apps.queryopt import train as T
    from rlsuite.apps.queryopt.envs.rewrite import QueryRewriteEnv
    from rlsuite.apps.queryopt.featurizer import VERSION
    from rlsuite.apps.queryopt.oracle import SearchResult, experience_rows
    from rlsuite.apps.queryopt.plugin.experience import ExperienceStore
    from rlsuite.platform import cluster

    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    store_path = os.path.join(run_dir, "experience.sqlite")
    store = ExperienceStore(store_path, "qopt_tpcds", window=1_000_000)
    wcfg = {"scale": s.scale}
    rules = rule_list(s)
    env = QueryRewriteEnv(dsn=db.dsn, workload="tpcds", workload_config=wcfg, max_steps=s.depth, rules=rules)  # fmt: skip
    if train_q is None:
        train_q = [n for n in searched if n % 2 == SPLITS[split]]
    train_q = [n for n in train_q if n in searched]
    for n in train_q:
        r = searched[n]
        res = SearchResult(orig_s=r["orig_s"], best=tuple(r["best"]), best_s=r["best_s"])
        res.times = {tuple(k.split(",")) if k else (): tuple(v) for k, v in r["times"].items()}
        for e in experience_rows(env, f"tpcds_q{n}", qs[n], res, censored=s.keep_censored):
            store.add(e)
    env.close()
    store.close()
    eps = s.epsilon_steps or max(1000, int(0.6 * s.steps_per_iteration * s.iterations))
    cfg = T.TrainConfig(
        dsn=db.dsn, workload="tpcds", workload_config=wcfg, experience=store_path,
        max_steps=s.depth, iterations=s.iterations, num_env_runners=0,
        env_steps_per_iteration=s.steps_per_iteration, epsilon_timesteps=eps, seed=s.seed,
        log_reward=s.log_reward, rules=rules,
    )  # fmt: skip
    t = time.time()
    with cluster.local_cluster(num_cpus=2):
        res = T.train(cfg, run_dir, progress=True)
    return train_q, {
        "train_s": round(time.time() - t, 1), "env_steps": res.env_steps,
        "epsilon_timesteps": eps, "censored_rows": s.keep_censored, "log_reward": s.log_reward,
        "featurizer_version": VERSION, "iterations": s.iterations,
        "steps_per_iteration": s.steps_per_iteration, "seed": s.seed,
        "actions": list(env.action_names),
    }  # fmt: skip


def held_out(db, w, cache, check, rw, searched: dict, qs: dict, train_q, cap_ms, say) -> list[dict]:
    """Each held-out query: the DQN's choice, the oracle's and greedy's, each served or not."""
    held = []
    for n in sorted(k for k in searched if k not in train_q):
        s = searched[n]
        o, sql = s["orig_s"], qs[n]
        try:
            q, notes = rw.choose(sql)
            seq = tuple(q.applied)
        except Exception as e:  # noqa: BLE001 - the model never fails a query
            seq, notes = (), {"*": f"model error: {e}"}
        row = {
            "query": n, "orig_s": o, "orig_capped": s["orig_capped"],
            "dqn": serve(db, w, cache, check, n, sql, seq, o, cap_ms),
            "oracle": serve(db, w, cache, check, n, sql, tuple(s["best"]), o, cap_ms),
            "greedy": greedy(db, w, cache, check, sql, o, cap_ms),
        }  # fmt: skip
        if notes:
            row["dqn"]["policy_notes"] = notes
        held.append(row)
        say(f"[dim]Q{n:<3d} {o:7.2f} greedy {row['greedy']['s']:7.3f} dqn {row['dqn']['s']:7.3f} {list(seq)} oracle {row['oracle']['s']:7.3f} {s['best']}[/]")  # fmt: skip
    return held


def split_summary(held: list[dict]) -> dict:
    """Totals per chooser, the DQN's share of the oracle's gain, served slower and wrong; pass:
    >= 80% of the oracle's gain and nothing served slower."""
    tot = sum(r["orig_s"] for r in held)
    summ = {"queries": len(held), "postgres_s": round(tot, 2)}
    for k in ("greedy", "dqn", "oracle"):
        summ[f"{k}_s"] = round(sum(r[k]["s"] for r in held), 2)
        summ[f"{k}_gain_s"] = round(tot - summ[f"{k}_s"], 2)
    summ["dqn_over_oracle"] = summ["dqn_gain_s"] / max(summ["oracle_gain_s"], 1e-9)
    served = [r[k] for r in held for k in ("dqn", "oracle") if r[k].get("served", False)]
    summ["served_slower"] = sum(x["s"] > r["orig_s"] for r in held for x in (r["dqn"], r["oracle"]) if x.get("served", False))  # fmt: skip
    summ["wrong_served"] = sum(x.get("rows") is False for x in served)
    summ["passed"] = summ["dqn_over_oracle"] >= 0.8 and not summ["served_slower"]
    return summ


def ship(splits: dict, policies: str) -> list[str]:
    """Export each split's DQN (policy only, with its ``queryopt.json``) to
    ``<policies>/queryopt_tpcds_<split>_dqn`` when every split passed."""
    from rlsuite.apps.queryopt.train import SIDECAR
    from rlsuite.platform.checkpoints.export import export_policy
    from rlsuite.platform.checkpoints.layout import resolve

    if not splits or not all(sp["summary"]["passed"] for sp in splits.values()):
        return []
    out = []
    for name, sp in splits.items():
        dst = os.path.join(policies, f"queryopt_tpcds_{name}_dqn")
        shutil.rmtree(dst, ignore_errors=True)
        s = sp["summary"]
        note = (
            f"rlsuite bench run queryopt_tpcds_learn {' '.join(sp['train']['argv'])}: trained on "
            f"the {name} TPC-DS templates {sp['trained_on']}; on the {s['queries']} held-out ones "
            f"{s['postgres_s']} -> {s['dqn_s']} s, {100 * s['dqn_over_oracle']:.0f}% of the "
            f"oracle's gain. Use: LearnedRewriter('{os.path.relpath(dst)}', dsn, workload="
            "'tpcds', workload_config={'scale': 1.0})"
        )
        ckpt = resolve(sp["run_dir"])
        export_policy(ckpt, dst, note=note)
        shutil.copy2(os.path.join(ckpt, SIDECAR), os.path.join(dst, SIDECAR))
        out.append(dst)
    return out
