"""The tables and charts of ``platform_sampling.py``: the baseline table and bar chart,
the scale-out table and efficiency chart, the sync-iterations and overlap-learning tables
and their chart.
"""

from __future__ import annotations

from platform_sampling_sync import BEHAVIOUR_CLIP, HANDWRITTEN


def baseline_table(out: dict):
    """The ``baseline`` section's table: steps/s and the criteria's ratios per env."""
    from rich.table import Table

    t = Table(title="platform sampling (env steps/s)")
    for c in (
        "env",
        "plain loop",
        "plain+policy",
        "RLlib default",
        "platform default",
        "x RLlib",
        "% plain/core",
        "% plain+policy/core",
        "sync it",
        "overlap it",
        "hand PPO it",
        "sync/hand",
        "overlap/hand",
    ):
        t.add_column(c, justify="right")
    for env_id, r in out["envs"].items():
        t.add_row(
            env_id,
            f"{r['plain_loop_steps_per_s']:.0f}",
            f"{r['plain_policy_loop_steps_per_s']:.0f}",
            f"{r['rllib_default_steps_per_s']:.0f}",
            f"{r['platform_default_steps_per_s']:.0f}",
            f"{r['platform_vs_rllib_default']:.1f}x",
            f"{100 * r['platform_per_core_fraction_of_plain']:.0f}%",
            f"{100 * r['platform_per_core_fraction_of_plain_policy']:.0f}%",
            f"{r.get('sync_plan', {}).get('iteration_steps_per_s', float('nan')):.0f}",
            f"{r.get('sync_plan_overlap', {}).get('iteration_steps_per_s', float('nan')):.0f}",
            f"{r.get('handwritten_ppo', {}).get('iteration_steps_per_s', float('nan')):.0f}",
            f"{r.get('sync_vs_handwritten', float('nan')):.2f}",
            f"{r.get('overlap_vs_handwritten', float('nan')):.2f}",
        )
    return t


def sync_iterations_table(out: dict):
    from rich.table import Table

    t = Table(title="whole iterations (batch 4000, minibatch 500, 10 epochs, 64x64), env steps/s")
    for c in ("env", "variant", "per round", "median", "median ratio vs hand-written"):
        t.add_column(c, justify="right")
    for env_id, rec in out["envs"].items():
        si = rec.get("sync_iterations")
        if not si:
            continue
        for label, rates in si["steps_per_s"].items():
            ratio = si["median_ratio_vs_handwritten"].get(label)
            t.add_row(
                env_id,
                label,
                ", ".join(f"{x:.0f}" for x in rates),
                f"{si['median_steps_per_s'][label]:.0f}",
                "" if ratio is None else f"{ratio:.2f}x",
            )
    return t


def overlap_learning_table(ol: dict):
    from rich.table import Table

    t = Table(title=f"{ol['env']} to return {ol['target_return']:g}, sync plan")
    for c in ("overlap", "seed", "reached", "iterations", "env steps", "s in train()", "s total"):
        t.add_column(c, justify="right")
    for key, runs in ol["runs"].items():
        for r in runs:
            t.add_row(
                key,
                str(r["seed"]),
                "yes" if r["reached"] else "no",
                str(r["iterations"]),
                str(r["env_steps"]),
                f"{r['train_s']:.1f}",
                f"{r['wall_s']:.1f}",
            )
    return t


def scaling_table(out: dict):
    from rich.table import Table

    t = Table(
        title=f"sampling scale-out, 32 envs per process ({out['machine']})",
        caption="runners: the platform's env runners, sampling only; plain: processes "
        "without Ray (the machine's ceiling); async: the async plan's sampling while it "
        "trains",
    )
    for c in (
        "env",
        "what",
        "n",
        "steps/s",
        "per proc.",
        "eff. vs 1",
        "us CPU/step",
        "CPU/wall",
        "straggler",
        "dispatch",
    ):
        t.add_column(c, justify="right")
    for env_id, rec in out["envs"].items():
        for key, what, rows_key in (
            ("scaling", "runners", "runners"),
            ("ceiling", "plain", "processes"),
        ):
            sc = rec.get(key, {})
            for n, r in sc.get(rows_key, {}).items():
                eff = r.get("efficiency_vs_1")
                t.add_row(
                    env_id,
                    what,
                    str(n),
                    f"{r['steps_per_s']:.0f}",
                    f"{r['steps_per_s'] / int(n):.0f}",
                    "" if eff is None else f"{100 * eff:.0f}%",
                    f"{r['runner_cpu_us_per_step']:.1f}",
                    f"{r['runner_cpu_per_wall']:.2f}",
                    f"{100 * r['straggler_loss']:.1f}%",
                    f"{100 * r['dispatch_loss']:.1f}%",
                )
            for n, why in sc.get("skipped", {}).items():
                t.add_row(env_id, what, str(n), "skipped", why, "", "", "", "", "")
        for n, r in rec.get("async_scaling", {}).get("runners", {}).items():
            eff = r.get("efficiency_vs_1")
            t.add_row(
                env_id,
                "async",
                str(n),
                f"{r['sampled_steps_per_s']:.0f}",
                f"{r['per_runner']:.0f}",
                "" if eff is None else f"{100 * eff:.0f}%",
                "",
                "",
                "",
                "",
            )
    return t


def plot_scaling(out: dict, path: str) -> None:
    """Efficiency against one process, per env: platform runners, plain processes and the
    async plan's sampling."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = list(out["envs"])
    fig, axes = plt.subplots(1, len(envs), figsize=(5 * len(envs), 3.6), squeeze=False)
    for ax, env_id in zip(axes[0], envs):
        rec = out["envs"][env_id]
        for key, rows_key, label in (
            ("scaling", "runners", "platform runners (sampling)"),
            ("ceiling", "processes", "plain processes (no Ray)"),
            ("async_scaling", "runners", "async plan (sampled while training)"),
        ):
            rows = rec.get(key, {}).get(rows_key, {})
            pts = sorted(
                (int(n), r["efficiency_vs_1"]) for n, r in rows.items() if "efficiency_vs_1" in r
            )
            if pts:
                ax.plot([p[0] for p in pts], [100 * p[1] for p in pts], "o-", label=label)
        ax.axhline(85, color="grey", ls="--", lw=1, label="target 85%")
        ax.set_title(env_id)
        ax.set_xlabel("processes")
        ax.set_ylabel("efficiency vs 1 (%)")
        ax.set_ylim(0, 110)
        ax.legend(fontsize=7)
    fig.suptitle(out["machine"], fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_overlap(out: dict, path: str) -> None:
    """Whole-iteration steps/s per variant (bars: median, dots: rounds) and the
    overlap-learning returns, overlap off and on."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(e, r["sync_iterations"]) for e, r in out["envs"].items() if "sync_iterations" in r]
    ol = out.get("overlap_learning")
    n = len(panels) + (1 if ol else 0)
    fig, axes = plt.subplots(1, n, figsize=(6 * n, 4), dpi=110, squeeze=False)
    for ax, (env_id, si) in zip(axes[0], panels, strict=False):
        labels = list(si["steps_per_s"])
        short = [
            lb.replace("sync plan (defaults)", "sync\n(defaults)")
            .replace("sync plan, ", "sync\n")
            .replace(", RLlib's stock PPO learner", "\nstock learner")
            .replace("RLlib's stock PPO learner", "stock learner")
            .replace(", check_finite_gradients=false", "\nunchecked\ngrads")
            .replace(", kl_coeff=0", "\nno KL term")
            .replace("hand-written PPO (1 process, 8 envs, 1 torch thread)", "hand-\nwritten\nPPO")
            for lb in labels
        ]
        x = range(len(labels))
        ax.bar(x, [si["median_steps_per_s"][lb] for lb in labels], color="tab:blue", alpha=0.6)
        for i, lb in enumerate(labels):
            ax.plot([i] * len(si["steps_per_s"][lb]), si["steps_per_s"][lb], "k.")
        if HANDWRITTEN in si["median_steps_per_s"]:
            ax.axhline(si["median_steps_per_s"][HANDWRITTEN], color="k", ls=":", lw=1)
        ax.set_xticks(list(x), short, fontsize=7)
        ax.set_ylabel("env steps / s (whole iterations)")
        ax.set_title(f"{env_id}: batch 4000, minibatch 500, 10 epochs")
    if ol:
        ax = axes[0][-1]
        for key, color in (
            ("overlap=false", "tab:grey"),
            ("overlap=true", "tab:blue"),
            (BEHAVIOUR_CLIP, "tab:orange"),
        ):
            for i, r in enumerate(ol["runs"].get(key, [])):
                ax.plot(
                    range(1, len(r["returns"]) + 1),
                    r["returns"],
                    color=color,
                    label=key if i == 0 else None,
                )
        ax.axhline(ol["target_return"], color="k", ls=":", lw=1)
        ax.set_xlabel("iteration (4000 env steps)")
        ax.set_ylabel("smoothed episode return")
        ax.set_title(f"{ol['env']}, sync plan, seeds {[r['seed'] for r in _first_runs(ol)]}")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _first_runs(ol: dict) -> list[dict]:
    """The overlap-learning runs of the first setting (its seeds)."""
    return next(iter(ol["runs"].values()), [])


def plot_baseline(out: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = list(out["envs"])
    fig, axes = plt.subplots(1, len(envs), figsize=(5 * len(envs), 3.5), dpi=110, squeeze=False)
    for ax, env_id in zip(axes[0], envs, strict=True):
        r = out["envs"][env_id]
        labels = ["plain loop\n(1 core)", "RLlib\ndefault"] + [
            f"platform\n{out['cores_used']}x{k}" for k in r["platform_sweep_steps_per_s"]
        ]
        vals = [
            r["plain_loop_steps_per_s"],
            r["rllib_default_steps_per_s"],
            *r["platform_sweep_steps_per_s"].values(),
        ]
        ax.bar(labels, vals, color=["grey", "tab:red"] + ["tab:blue"] * (len(vals) - 2))
        ax.set_yscale("log")
        ax.set_title(env_id)
        ax.set_ylabel("env steps / s")
        ax.tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
