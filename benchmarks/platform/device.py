"""The platform's scale-out on a 16-core GPU machine: sampling at 1-15 runners against plain
processes, the GPU learner against the CPU one (and "auto", and two learners sharing the
GPU), and the es plan at 1-15 workers.

Each part runs the other platform benchmarks' forms (``PARTS``) as child processes, cut at
its seconds of ``--limits`` so that ``--part all`` ends inside the device tool's 10-minute
call; a part cut off keeps what it saved. Results go to ``benchmarks/results/platform/device/``
(point ``$RLSUITE_BENCH_RESULTS`` at the tool's ``$OUT`` to bring them back). A device
machine without Ray first installs the wheels ``../shared/tools/device-carry`` packs into
``.devcarry/`` (``pip install --no-index --no-deps --target /tmp/site .devcarry/whl/*.whl``,
then ``PYTHONPATH=/tmp/site:$PWD``).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from dataclasses import dataclass

from rlsuite.bench import Benchmark, Row, Value, here, pub

TRAIN = "train --plan sync --env CartPole-v1 --iterations 3 --no-progress"
PARTS = {
    "learner": (
        ("bench", "platform_sampling --sections gpu-learner --envs CartPole-v1 "
                  "--out device/platform_gpu_learner_device"),
        # "auto" end to end on the large net (it should say "learner: cuda"), then two
        # data-parallel learners sharing the one GPU
        ("auto_large_net", f"{TRAIN} --set hidden=[256,256] --set train_batch_size=16000 "
                           "--set minibatch_size=4000 --run-dir /tmp/rlsuite-auto"),
        ("two_learners_one_gpu", f"{TRAIN} --set num_learners=2 --set num_gpus_per_learner=0.5 "
                                 "--run-dir /tmp/rlsuite-two-learners"),
    ),
    "sampling": (("bench", "platform_sampling --sections scaling,ceiling --runners 1,2,4,8,15 "
                           "--envs Pendulum-v1,CartPole-v1 --out device/platform_scaling_device"),),
    "es": (("bench", "platform_es --part scaling --workers 1,2,4,8,15 "
                     "--out device/platform_es_device"),),
}  # fmt: skip


@dataclass(frozen=True)
class Settings:
    part: str = "all"
    """learner, sampling, es, or all (each in turn)"""
    limits: str = "200,230,90"
    """seconds at most for the learner, sampling and es parts"""
    es_generations: int = 10
    """generations per cell of the es part"""


def run(ctx) -> int:
    s = ctx.settings
    names = list(PARTS) if s.part == "all" else s.part.split(",")
    if bad := [n for n in names if n not in PARTS]:
        raise ValueError(f"unknown part {bad[0]!r}; say {', '.join(PARTS)} or all")
    limits = dict(zip(PARTS, (float(x) for x in s.limits.split(",")), strict=True))
    done = {}
    for name in names:
        t0, what = time.time(), "finished"
        for kind, args in PARTS[name]:
            argv = shlex.split(args) + (
                ["--generations", str(s.es_generations)] if name == "es" else []
            )
            if kind == "bench":  # another benchmark; this run already holds the lock
                argv = ["bench", "run", argv[0], "--no-lock", *(["--quick"] * ctx.quick), *argv[1:]]
            cmd = [sys.executable, "-m", "rlsuite.cli", *argv]
            left = limits[name] - (time.time() - t0)
            try:
                proc = subprocess.run(
                    cmd, timeout=max(left, 1), capture_output=kind != "bench", text=True
                )
            except subprocess.TimeoutExpired:
                what = f"cut off at {limits[name]:.0f} s"
                break
            if kind != "bench":
                ctx.path(f"device/{kind}", ".txt").write_text(proc.stdout + proc.stderr)
            if proc.returncode:
                what = f"exit {proc.returncode}"
        done[name] = {"ended": what, "seconds": round(time.time() - t0)}
        ctx.say(f"{name}: {what}")
    ctx.save("device/platform_device_parts", {"parts": done})
    return 0


# fmt: off
BENCHMARK = Benchmark(run=run, settings=Settings, device=True, quick=dict(limits="60,60,30", es_generations=2), rows=(
    Row("platform", "sampling at 15 runners, Pendulum-v1 (H100 machine, 16 cores)",
        "env steps/s per runner, 32 envs each", "device/platform_scaling_async_device.json",
        Value(("envs", "Pendulum-v1", "scaling", "runners", "15", "per_runner")),
        pub("target: >= 12k per runner", 12000),
        "rlsuite bench run platform_device --part sampling", fmt="{:,.0f}"),
    Row("platform", "sampling at 15 runners, Pendulum-v1 (H100 machine, 16 cores)",
        "efficiency against 1 runner", "device/platform_scaling_async_device.json",
        Value(("envs", "Pendulum-v1", "scaling", "runners", "15", "efficiency_vs_1")),
        here("plain processes, no Ray, same machine", "envs", "Pendulum-v1", "ceiling",
              "processes", "15", "efficiency_vs_1", file="device/platform_scaling_device.json"),
        "rlsuite bench run platform_device --part sampling", fmt="{:.0%}"),
))
# fmt: on
