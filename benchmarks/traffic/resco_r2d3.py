"""R2D3 / DQfD on a RESCO map: the ``replay`` plan (DQN, MLP 64x64, dueling double) with a
hand-written controller's (``--demonstrator``: greedy or maxpressure) ``--demo-episodes``
inside its replay, ``--demo-ratio`` of each batch, and DQfD's large-margin loss with
``--large-margin-coeff``. The lights share one network and one buffer
(``rlsuite/SignalsShared-v0``, each light's steps an env step); ``--per-light`` gives each
light its own network, replaying its own light's demonstrations (``rlsuite/Signals-v0``,
``policies=per_agent``, one step of every light an env step). ``--sumo``: 1.28 or 1.9.2
(RESCO's, where its learners are the comparison). A snapshot every ``--snapshot-every``
iterations; the newest ``--val-snapshots`` scored on validation seeds 900-903, the best
(``learned_valsel``, beside the last) on held-out seeds 1000-1009 against fixed, actuated,
greedy and max-pressure (RESCO's delay, ``resco_scoring.JAM_RULE``). Pass: below every
hand-written controller, no held-out seed jammed, and on 1.9.2 at or below RESCO's best
published learner on the map.
"""

from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, here

PROGRAMS = ("fixed", "actuated", "greedy", "maxpressure")
"""The hand-written controllers it is scored against (the signals env runs them)."""


@dataclass(frozen=True)
class Settings:
    map: str = "ingolstadt1"
    """a RESCO map (its lights share the policy): ingolstadt1, cologne1, cologne3, cologne8 ..."""
    sumo: str = "1.28"
    """SUMO release: 1.28 (the project's) or 1.9.2 (RESCO's, installed apart)"""
    light_index: bool = False
    """each light's observation also holds its place among the network's lights"""
    wave: bool = False
    """each light's observation also holds each lane's vehicles within 50 m (greedy's view)"""
    per_light: bool = False
    """one network per light (``rlsuite/Signals-v0``, ``policies=per_agent``, action masks),
    each replaying its own light's demonstrations"""
    training_intensity: float = 32.0
    """replayed per sampled step (each light's step counts)"""
    demonstrator: str = "maxpressure"
    """greedy or maxpressure"""
    demo_episodes: int = 20
    """the demonstrator's recorded episodes"""
    demo_ratio: float = 0.25
    """share of each replayed batch drawn from the demonstrations"""
    episodes: int = 100
    """training episodes (one per iteration)"""
    num_seconds: int = 0
    """episode length in seconds (0: the map's RESCO window)"""
    eval_seeds: int = 10
    """held-out seeds (from 1000)"""
    large_margin_coeff: float = 0.0
    """DQfD's large-margin loss on the demonstrated steps, its weight (0: R2D3, none)"""
    prioritized: bool = True
    """prioritised replay for the agent's steps (False: uniform, as the from-scratch runs)"""
    epsilon_share: float = 0.8
    """share of the training steps over which epsilon decays from 1 to 0 (RESCO's 0.8)"""
    snapshot_every: int = 10
    """iterations between kept snapshots"""
    val_snapshots: int = 2
    """the newest snapshots scored on the validation seeds"""
    minutes: float = 0.0
    """stop training after this many minutes and score what was trained (0: no cap)"""
    tag: str = ""
    """suffix of the run directory and the result file (``""``: the first run's names)"""


def plan_of(s: Settings, episode_log: str = ""):
    """The env config, the map's number of lights and the ``replay`` plan of settings ``s``
    (each light's step is an env step: an iteration is one episode of every light); the
    plan's env also appends each finished episode's delay to ``episode_log`` when given."""
    from rlsuite.apps.traffic import sumo_versions
    from rlsuite.apps.traffic.envs.signals_vector import num_lights
    from rlsuite.apps.traffic.resco_training import action_mask_offset
    from rlsuite.platform import optimizers

    cfg = {"network": s.map, **({"num_seconds": s.num_seconds} if s.num_seconds else {})}
    if s.sumo != sumo_versions.DEFAULT_SUMO:  # 1.28's runs keep their first config
        cfg["sumo_version"] = s.sumo
    for key in ("light_index", "wave"):
        if getattr(s, key):
            cfg[key] = True
    lights = num_lights(**cfg)  # refuses a map that is not RESCO's
    steps = (1 if s.per_light else lights) * (360 if not s.num_seconds else s.num_seconds // 10)
    per_light = dict(policies="per_agent", action_mask_offset=action_mask_offset(cfg)) if s.per_light else {}  # fmt: skip
    plan = optimizers.make_plan(
        "replay", env=f"rlsuite/Signals{'' if s.per_light else 'Shared'}-v0", seed=0, hidden=[64, 64],
        env_config={**cfg, "episode_log": episode_log} if episode_log else cfg,
        activation="relu", rollout_fragment_length=4, lr=1e-3, train_batch_size=32,
        buffer_size=10000, prioritized=s.prioritized, dueling=True, double_q=True, target_update_freq=500,
        learning_starts=steps, epsilon_timesteps=int(s.epsilon_share * steps * s.episodes),
        final_epsilon=0.0, training_intensity=s.training_intensity, env_steps_per_iteration=steps,
        num_env_runners=1,
        demonstrations=f"rlsuite.apps.traffic.demonstrators:{s.demonstrator}:{s.demo_episodes}",
        demo_ratio=s.demo_ratio, large_margin_coeff=s.large_margin_coeff, **per_light,
    )  # fmt: skip
    return cfg, lights, plan


def run(ctx) -> int:
    import functools
    import os

    from rlsuite.apps.traffic import resco, sumo_versions
    from rlsuite.apps.traffic.controllers import PerAgent, SignalProgram
    from rlsuite.apps.traffic.resco_scoring import jam_report, run_seeds, snapshot
    from rlsuite.apps.traffic.resco_training import LEARNERS
    from rlsuite.platform import cluster, training
    from rlsuite.platform.checkpoints.loading import load_controller

    s = ctx.settings
    tag = f"_{s.tag}" if s.tag else ""
    release = "" if s.sumo == sumo_versions.DEFAULT_SUMO else f"_sumo{s.sumo}"
    run_dir = ctx.run_dir(f"runs/bench/traffic_resco_r2d3/{s.map}_{s.demonstrator}{release}{tag}")
    log = os.path.join(run_dir, "episodes.jsonl")
    cfg, lights, plan = plan_of(s, episode_log=log)
    with cluster.local_cluster(num_cpus=2):
        res = training.train(plan, s.episodes, run_dir, resume=True, progress=False,
                             checkpoint_every=s.snapshot_every,
                             stop_after_s=s.minutes * 60 if s.minutes else None,
                             callback=lambda it, row: snapshot(run_dir))  # fmt: skip
    snapshot(run_dir)
    episodes = training_episodes(log)
    root = os.path.join(run_dir, "snapshots")
    snaps = sorted(d for d in os.listdir(root) if d.startswith("iter_"))[-s.val_snapshots :]

    def learned(name: str):  # one module per light acts on the lights' dict itself
        path = os.path.join(root, name)
        return load_controller(path) if s.per_light else PerAgent(functools.partial(load_controller, path), "learned")  # fmt: skip

    val = {n: run_seeds(learned(n), n, [900, 901, 902, 903], cfg, "validation") for n in snaps}
    score = {n: r["delay_mean"] if not r["sumo_crashed"] else float("inf") for n, r in val.items()}
    chosen = min(score, key=score.get)
    seeds = list(range(1000, 1000 + s.eval_seeds))
    ev: dict = {"seeds": seeds}
    ev["learned_valsel"] = run_seeds(learned(chosen), "learned_valsel", seeds, cfg, "held-out")
    ev["learned_final"] = (  # the same checkpoint is not scored twice
        ev["learned_valsel"] if chosen == snaps[-1]
        else run_seeds(learned(snaps[-1]), "learned_final", seeds, cfg, "held-out")
    )  # fmt: skip
    for p in PROGRAMS:
        ev[p] = run_seeds(SignalProgram(p), p, seeds, {**cfg, "program": p}, "held-out")
    ev["jams"] = jam_report(ev)
    means = {k: v["delay_mean"] for k, v in ev.items() if isinstance(v, dict) and "delay_mean" in v}
    best = min(PROGRAMS, key=means.get)
    ctx.table([dict(controller=k, delay=v, jam_rate=ev["jams"][k]["jam_rate"]) for k, v in means.items()],
              f"{s.map}, SUMO {s.sumo}, held-out seeds {seeds[0]}-{seeds[-1]}: RESCO's delay (s/veh)")  # fmt: skip
    print(f"best training episode (RESCO's rule): {episodes['best']}", flush=True)
    checks = {
        f"learned_valsel below every hand-written controller (best: {best} {means[best]:.2f})":
            means["learned_valsel"] < means[best],
        "learned_valsel jammed on no held-out seed": not ev["jams"]["learned_valsel"]["jammed_seeds"],
    }  # fmt: skip
    published = resco.PUBLISHED.get(s.map, {}) if s.sumo == "1.9.2" else {}
    learners = {k: v for k, v in published.items() if k in LEARNERS and v is not None}
    if learners:  # RESCO's numbers are SUMO 1.9.2's (its best training episode)
        top = min(learners, key=learners.get)
        checks[f"learned_valsel at or below RESCO's best learner ({top} {learners[top]:.2f})"] = (
            means["learned_valsel"] <= learners[top]
        )
    ctx.save(f"traffic_resco_r2d3_{s.map}{release.replace('.', '')}{tag}", dict(
        map=s.map, sumo=s.sumo, lights=lights, env=plan.env, demonstrator=s.demonstrator,
        resco_published=published,
        plan=plan.to_dict(), run_dir=run_dir, episodes_trained=res.iterations,
        env_steps=res.env_steps, checkpoint=res.checkpoint, training_episodes=episodes,
        validation=dict(seeds=[900, 901, 902, 903], delay_mean=score, chosen=chosen),
        heldout=ev, delay_means=means, checks=checks))  # fmt: skip
    return ctx.verdict(checks)


def training_episodes(path: str) -> dict:
    """The training episodes' delays from the env's episode log, and the best of them
    (RESCO's own rule); the demonstrator's recorded episodes (seeded from
    ``demo_sources.RUN_SEED_OFFSET`` up) are left out."""
    from rlsuite.platform.demo_sources import RUN_SEED_OFFSET
    from rlsuite.platform.metrics import read_jsonl

    rows = [r for r in read_jsonl(path) if r["seed"] < RUN_SEED_OFFSET]
    best = min(rows, key=lambda r: r["delay"], default=None)
    top = best and {"delay": best["delay"], "episode": rows.index(best) + 1}
    return {"delay": [r["delay"] for r in rows], "best": top}


NAMES = {"greedy": "greedy", "maxpressure": "max-pressure"}
"""How the rows name each demonstrator."""


def _row(what: str, file: str, args: str, shipped: str | None = None, map: str = "ingolstadt1",
         demonstrator: str = "maxpressure", sumo: str = "1.28", lights: int = 1, note: str = "", best: str = "") -> Row:  # fmt: skip
    """A row of a run with demonstrations: the validation-chosen checkpoint's held-out delay
    against the best static controller's (``best``, else the demonstrator's) on the same seeds."""
    name, best = NAMES[demonstrator], best or demonstrator
    ref = f"{name}, the demonstrator and" if best == demonstrator else f"{NAMES[best]},"
    release = "" if sumo == "1.28" else f"--sumo {sumo} "
    return Row(
        "traffic", f"signals, RESCO {map} ({lights} light{'s' * (lights > 1)}) on SUMO {sumo}, {what}, with demonstrations",
        f"average delay, s/veh, 10 held-out seeds, checkpoint chosen on validation seeds{note}", file,
        Value(("delay_means", "learned_valsel")),
        here(f"{ref} the best static controller, same seeds", "delay_means", best),
        f"rlsuite bench run traffic_resco_r2d3 --map {map} {release}--demonstrator {demonstrator} {args}".strip(),
        shipped or f"- (not shipped: {NAMES[best]} is lower)", lower_is_better=True,
    )  # fmt: skip


C8 = dict(map="cologne8", demonstrator="greedy", sumo="1.9.2", lights=8, note="; RESCO's IPPO 21.62, best training episode")  # fmt: skip
PLW = ("--per-light --wave --training-intensity 8 --demo-episodes 10 --large-margin-coeff 1.0 "
       "--demo-ratio 0.1 --no-prioritized --epsilon-share 0.5 --episodes 67 --snapshot-every 5 "
       "--val-snapshots 6 --minutes 26 --tag dqfdplw")  # fmt: skip
WAVE = (
    _row("DQfD with one DQN per light and each lane's vehicles within 50 m (greedy's view) in the state, "
         "otherwise the row above's recipe, stopped by the 26-minute cap at 48",
         "traffic_resco_r2d3_cologne8_sumo192_dqfdplw.json", PLW, "`resco_cologne8_dqfd_greedy_wave`", **C8),
    _row("the row above's recipe (one DQN per light, greedy's 50 m view), stopped by the 26-minute cap at 48",
         "traffic_resco_r2d3_cologne8_dqfdplw.json", PLW, "`resco_cologne8_dqfd_greedy_wave_sumo128`", **{**C8, "sumo": "1.28", "note": ""}),
    _row("cologne8's recipe (one DQN per light, greedy's 50 m view) with max-pressure's 10 episodes in replay, 67 episodes",
         "traffic_resco_r2d3_cologne3_dqfdmpplw.json", PLW.replace("--minutes 26 --tag dqfdplw", "--minutes 16 --tag dqfdmpplw"),
         "`resco_cologne3_dqfd_maxpressure_wave_sumo128`", map="cologne3", lights=3, best="greedy",
         note=" (greedy is lower on 9 of 10 seeds; its mean carries one seed at 70.0; max-pressure, the demonstrator, 24.04)"),
)  # fmt: skip
BENCHMARK = Benchmark(
    run=run,
    settings=Settings,
    quick=dict(
        map="cologne1", episodes=2, demo_episodes=1, num_seconds=300, eval_seeds=1, minutes=0.5
    ),
    rows=(
        _row(
            "R2D3 (DQN, a quarter of each batch from max-pressure's 20 episodes)",
            "traffic_resco_r2d3_ingolstadt1.json",
            "",
            note=" (measured before a fix to prioritised replay with demonstrations)",
        ),
        _row(
            "DQfD (DQN with uniform replay and the large-margin loss, a tenth of each batch "
            "from max-pressure's 20 episodes, 45 episodes)",
            "traffic_resco_r2d3_ingolstadt1_dqfd.json",
            "--large-margin-coeff 1.0 --demo-ratio 0.1 --no-prioritized --epsilon-share 0.5 "
            "--episodes 45 --snapshot-every 5 --val-snapshots 9 --minutes 8 --tag dqfd",
            "`resco_ingolstadt1_dqfd_maxpressure`",
        ),
        _row(
            "DQfD (the ingolstadt1 recipe: uniform replay, the large-margin loss, a tenth of each "
            "batch from greedy's 20 episodes, 45 episodes)",
            "traffic_resco_r2d3_cologne1_dqfd.json",
            "--large-margin-coeff 1.0 --demo-ratio 0.1 --no-prioritized --epsilon-share 0.5 "
            "--episodes 45 --snapshot-every 5 --val-snapshots 9 --minutes 8 --tag dqfd",
            map="cologne1",
            demonstrator="greedy",
        ),
        _row(
            "DQfD (the same, 75 episodes with epsilon at 0 after the same 8,100 steps, stopped by "
            "the 6-minute cap at 68)",
            "traffic_resco_r2d3_cologne1_dqfd75.json",
            "--large-margin-coeff 1.0 --demo-ratio 0.1 --no-prioritized --epsilon-share 0.3 "
            "--episodes 75 --snapshot-every 5 --val-snapshots 9 --minutes 6 --tag dqfd75",
            map="cologne1",
            demonstrator="greedy",
        ),
        _row(
            "DQfD (the recipe above with each lane's vehicles within 50 m, greedy's view, in the "
            "state; stopped by the 8-minute cap at 33 episodes)",
            "traffic_resco_r2d3_cologne1_dqfdwave.json",
            "--wave --large-margin-coeff 1.0 --demo-ratio 0.1 --no-prioritized --epsilon-share 0.5 "
            "--episodes 45 --snapshot-every 5 --val-snapshots 9 --minutes 8 --tag dqfdwave",
            map="cologne1",
            demonstrator="greedy",
        ),
        _row(
            "DQfD (one DQN for the 8 lights with each light's index, uniform replay, the "
            "large-margin loss, a tenth of each batch from greedy's 10 episodes, 8 replayed per "
            "light's step, 45 episodes, stopped by the 11-minute cap at 43)",
            "traffic_resco_r2d3_cologne8_sumo192_dqfd.json",
            "--light-index --training-intensity 8 --demo-episodes 10 --large-margin-coeff 1.0 "
            "--demo-ratio 0.1 --no-prioritized --epsilon-share 0.5 --episodes 45 --snapshot-every 5 "
            "--val-snapshots 9 --minutes 11 --tag dqfd",
            **C8,
        ),
        _row(
            "DQfD with one DQN per light (each replaying its own light's demonstrations, action "
            "masks), otherwise the row above's recipe, 67 episodes, stopped by the 26-minute cap at 60",
            "traffic_resco_r2d3_cologne8_sumo192_dqfdpl.json",
            "--per-light --training-intensity 8 --demo-episodes 10 --large-margin-coeff 1.0 "
            "--demo-ratio 0.1 --no-prioritized --epsilon-share 0.5 --episodes 67 --snapshot-every 5 "
            "--val-snapshots 6 --minutes 26 --tag dqfdpl",
            **C8,
        ),
        *WAVE,
    ),
)
