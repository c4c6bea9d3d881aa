"""One policy shared by every light of several RESCO maps, trained on the maps in turn and scored
on each map alone. RESCO trained one model per map; this asks whether one policy serves six
cities. Resumable as ``traffic_resco_learned`` (its flags; call again until it reports done).
Pass: on each map, the held-out delay at or below RESCO's best learner and below fixed-time
and max-pressure on the same seeds."""

import dataclasses
import os

from rlsuite.apps.traffic.resco_training import RescoSettings
from rlsuite.bench import Benchmark


def run(ctx) -> int:
    import shlex
    import time

    from rlsuite.apps.traffic import resco_multimap as mm
    from rlsuite.apps.traffic import resco_training as rt
    from rlsuite.apps.traffic.envs.signals_multimap import parse_networks
    from rlsuite.bench import command, repo_root, results_dir

    s = ctx.settings
    s = dataclasses.replace(s, run_root=s.run_root or ctx.run_dir("runs/benchmarks/traffic_resco_together"))  # fmt: skip
    maps = parse_networks(s.maps)
    mm.check_maps(maps)
    name = "+".join(maps)
    rd = rt.run_dir_of(s, name)
    state = rt.load_state(rd)
    if state is None:
        cmd = command("traffic_resco_together", shlex.join(ctx.argv))
        state = rt.new_state(s, name, mm.env_config(s, maps, rd), cmd, maps=maps)
        rt.save_state(rd, state)
    t_start = time.time()
    if not state.get("done_training"):
        rt.train_chunk(s, name, rd, state, t_start)
    done = bool(state.get("done_training")) and mm.evaluate_maps(s, maps, state, t_start)
    rt.save_state(rd, state)
    rows = mm.summarise(maps, state, results_dir("traffic"))
    eps = rt.read_jsonl(os.path.join(rd, "episodes.jsonl"))
    ctx.save(mm.results_stem(s), dict(
        run_dir=rd, command=state["command"], env_config=state["env_config"], plan=s.plan,
        sumo=state["sumo"], episodes_trained=len(eps), done=done, rows=rows,
        train_wall_s=sum(c.get("wall_s", 0.0) for c in state["chunks"]),
        training_episodes=[{k: e.get(k) for k in ("seed", "network", "delay")} for e in eps],
    ))  # fmt: skip
    ctx.save_plot(mm.results_stem(s), mm.figure(rows))
    if s.ship and done:
        mm.ship(s, maps, state, rows, str(repo_root() / "benchmarks" / "policies"))
    status = (
        "done" if done else ("trained" if state.get("done_training") else "training: run again")
    )
    ctx.say(f"{name} ({s.plan}): {len(eps)} episodes, {status}")
    return ctx.verdict({f"{r['map']}: {k}": v for r in rows for k, v in r.get("checks", {}).items()})  # fmt: skip


QUICK = dict(maps="cologne1,ingolstadt1", plan="sync", sumo="1.28", episodes=1, minutes=0.3)

BENCHMARK = Benchmark(
    run=run, settings=RescoSettings, quick={**QUICK, "eval_seeds": 1, "no_baselines": True}
)
