"""One shared AV policy for the multi-AV ring (``rlsuite/RingMulti-v0``, 22 vehicles, ``--avs``
AVs), trained on lengths drawn from [220, 270] m under Flow's env protocol, from scratch
(``--plan-set init_from='"DIR"'`` warm-starts ES) or ``--plan sync --demonstrations N``: PPO
warm-started from N episodes of PI on every AV (``--demo-avs 2 3 4``: N at each count;
``--dagger R``: R DAgger rounds; the clone is evaluated too). ``--validate`` reports the
checkpoint (or clone) best on validation seeds (3 from 500: min over 230 and 260 m of its speed
over PI's). Evaluated with 2, 3 and 4 AVs at 230 and 260 m (and ``--held-out-lengths``) beside
PI on every AV and all-human driving, same seeds. Pass: within 2% of PI at 230 and 260 m for
the trained count. Writes ``traffic_ring_multi.json`` and ``.png`` (``--out NAME``).
"""

from dataclasses import dataclass

from rlsuite.apps.traffic.benchmarking import TrainingSettings
from rlsuite.bench import Benchmark, Row, Value, here

ENV_ID = "rlsuite/RingMulti-v0"
LENGTHS = (230, 260)
COUNTS = (2, 3, 4)


@dataclass(frozen=True)
class Settings(TrainingSettings):
    avs: int = 3
    """AVs on the training rings"""
    plan: str = "es"
    """es or sync"""
    episodes: int = 2
    """seeded evaluation episodes"""
    held_out_lengths: tuple[int, ...] = ()
    """ring lengths (m) also evaluated and reported, outside the pass criterion"""
    demonstrations: int = 0
    """warm-start --plan sync from this many recorded episodes of PI on every AV (0: none)"""
    demo_avs: tuple[int, ...] = ()
    """record the demonstrations with each of these AV counts (N episodes each; default: --avs)"""
    validate: bool = False
    """score each chunk's checkpoint on validation seeds; report the best, not the last"""
    dagger: int = 0
    """DAgger rounds after recording: the clone drives --dagger-episodes per AV count, PI labels"""
    dagger_episodes: int = 8


def run(ctx) -> int:
    from rlsuite.apps.traffic import scenarios
    from rlsuite.apps.traffic.benchmarking import KeepBest, clone_of, save_training, train_plan
    from rlsuite.apps.traffic.envs.ring import equilibrium_speed
    from rlsuite.cli_common import parse_sets
    from rlsuite.platform import cluster, envs, evaluation

    s = ctx.settings
    cfg = {**dict(ring_length=[220, 270], num_avs=s.avs), **parse_sets(s.env_set)}
    envs.rllib_env(ENV_ID)
    if s.plan == "es":
        fields = dict(num_workers=s.workers, hidden=(32, 32))
    else:
        fields = dict(num_env_runners=s.workers, train_batch_size=12000, minibatch_size=2000,
                      num_epochs=6, gamma=0.999, lambda_=0.97, vf_clip_param=1e6)  # fmt: skip
    scen = scenarios.get("ring_multi")

    def speed(ctrl, k, length, seeds=s.episodes, who="learned", workers=0):
        ctrl = ctrl or scenarios.controller_for(scen, who, dict(ring_length=length, num_avs=k))[0]
        eval_cfg = scenarios.with_policy_fields(ENV_ID, dict(ring_length=length, num_avs=k), ctrl)  # a policy's memory_s  # fmt: skip
        ev = evaluation.evaluate(ctrl, evaluation.scenarios(ENV_ID, seeds, eval_cfg), num_workers=workers, name=who)  # fmt: skip
        return ev.summary["mean_speed"]["mean"]

    val_seeds = range(500, 500 + min(s.episodes, 3))
    pi_val = {L: speed(None, s.avs, L, val_seeds, "pi") for L in LENGTHS} if s.validate else {}
    run_dir = ctx.run_dir(f"runs/benchmarks/{ctx.bench.name}")
    keep = KeepBest(f"{run_dir}/best", lambda p: min(speed(p, s.avs, L, val_seeds) / pi_val[L] for L in LENGTHS),
                    first=f"{run_dir}/clone")  # fmt: skip
    cfgs = [{**cfg, "num_avs": k} for k in s.demo_avs or (s.avs,)]
    plan, res, curve, train_s = train_plan(ctx, s.plan, dict(env=ENV_ID, env_config=cfg, seed=0, **fields),
                                           demonstrations=s.demonstrations and [(scenarios.controller_for(scen, "pi", c)[0], s.demonstrations, c) for c in cfgs],
                                           after_chunk=keep if s.validate else None, dagger=([(scenarios.pi_labeller(), c) for c in cfgs], s.dagger, s.dagger_episodes))  # fmt: skip
    training = "with demonstrations (PI)" if s.demonstrations else "from scratch"
    clone, learned = clone_of(plan), keep.best_dir if keep.best else res.checkpoint
    rows, is_clone = [], keep.best.get("iteration") == 0  # the clone kept: not evaluated twice
    with cluster.local_cluster(num_cpus=s.workers):  # one episode per worker at a time
        for k, length in [(k, L) for k in COUNTS for L in (*LENGTHS, *s.held_out_lengths)]:
            row = dict(avs=k, ring_length=length, uniform_flow=equilibrium_speed(length), held_out=length not in LENGTHS)  # fmt: skip
            for who in ("learned", "pi", "idm", *(("clone",) if clone else ())):
                ctrl = {"learned": learned, "clone": clone}.get(who)
                row[who] = row["learned"] if who == "clone" and is_clone else speed(ctrl, k, length, who=who, workers=s.workers)  # fmt: skip
            rows.append(row)
    chosen = f", best on validation: it {keep.best['iteration']}" if keep.best else ""
    ctx.table(rows, f"multi-AV ring: one shared policy trained with {s.avs} AVs {training} ({plan.name}, "
                    f"{res.iterations} it, {res.env_steps} steps, {train_s / 60:.1f} min{chosen}); mean speed m/s")  # fmt: skip
    trained = [r for r in rows if r["avs"] == s.avs and not r["held_out"]]
    checks = {f"learned >= 98% of PI on every AV ({s.avs} AVs, 230 and 260 m)":
              all(r["learned"] >= 0.98 * r["pi"] for r in trained)}  # fmt: skip
    bars = [dict(controller=f"{w} ({s.avs} AVs, 230 m)", mean_speed=r[w])
            for r in trained if r["ring_length"] == 230 for w in ("learned", "pi", "idm")]  # fmt: skip
    return save_training(
        ctx, s.out or "traffic_ring_multi", plan, cfg, res, curve, rows, train_s, checks, bars,
        dict(training=training, from_scratch=not s.demonstrations, clone=clone or None, learned=learned,
             validation=s.validate and dict(seeds=list(val_seeds), pi=pi_val, scores=keep.history, best=keep.best)),  # fmt: skip
        metric="mean_speed", curve_label="episode return", curve_title=f"{plan.name} on the multi-AV ring",
        bar_label="mean speed (m/s)", bar_title=f"{s.avs} AVs, 230 m")  # fmt: skip


# fmt: off
BENCHMARK = Benchmark(
    claim="One shared AV policy for the multi-AV ring matches PI on every AV (within 2%) at 230 and 260 m.",
    run=run, settings=Settings, quick=dict(minutes=0.2, chunk=1, episodes=1, workers=1), rows=(
    Row("traffic", "multi-AV ring, 3 AVs at 230 m", "mean speed, m/s", "traffic_ring_multi.json",
        Value(("rows", {"avs": 3, "ring_length": 230}, "learned")),
        here("PI on every AV", "rows", {"avs": 3, "ring_length": 230}, "pi"),
        "rlsuite bench run traffic_ring_multi --avs 3 --plan es --minutes 40 --chunk 4 --workers 1 --plan-set lr=0.003 "
        "--plan-set sigma=0.03 --plan-set recurrent='\"gru\"' --plan-set cell_size=16 --plan-set episodes_per_eval=2 "
        "--plan-set common_env_seeds=true --env-set warmup_steps=0 --env-set bunching=20 --env-set horizon=3750 "
        "--env-set accel_penalty=0.25", "`ring_multi_es_gru`"),
    Row("traffic", "multi-AV ring, 3 AVs at 230 m, PPO from PI's demonstrations and 2 DAgger rounds (PI labels the clone's states), 38 s speed memory (checkpoint on validation); at or above PI in all 12 cells (2-4 AVs, 225-260 m)",
        "mean speed, m/s (10 seeds)", "traffic_ring_multi_pi_demos_dagger.json", Value(("rows", {"avs": 3, "ring_length": 230}, "learned")),
        here("PI on every AV", "rows", {"avs": 3, "ring_length": 230}, "pi"),
        "rlsuite bench run traffic_ring_multi --avs 3 --plan sync --demonstrations 32 --dagger 2 --dagger-episodes 8 --validate --minutes 20 --chunk 5 --workers 2 "
        "--episodes 10 --held-out-lengths 225 245 --env-set warmup_steps=0 --env-set bunching=20 --env-set horizon=3750 --env-set accel_penalty=0.25 "
        "--env-set memory_s=38 --plan-set demo_epochs=50 --plan-set lr=3e-5 --out traffic_ring_multi_pi_demos_dagger "
        "--run-dir runs/benchmarks/ring_multi_pi_demos_dagger", "`ring_multi_pi_dagger`"),
))
# fmt: on
