#!/usr/bin/env bash
# The platform measurements that need a 16-core GPU machine (the `device` tool's machines):
# sampling scale-out at 1-15 runners with the machine's own ceiling and the async plan,
# the GPU learner against the CPU learner, "auto" and two learners sharing the GPU, and the
# es plan at 1-15 workers.
#
# Here, once: ../shared/tools/device-carry        (builds .devcarry/, the Ray wheels)
# There, one call per part, each within the tool's 10-minute limit, carrying .devcarry:
#     bash benchmarks/platform_device.sh sampling     # ~7 min
#     bash benchmarks/platform_device.sh learner      # ~5 min
#     bash benchmarks/platform_device.sh es           # ~3 min
#     bash benchmarks/platform_device.sh imitation    # ~3 min: BC's offline path and the
#                                                    # shared-encoder sync plan on the GPU
#     bash benchmarks/platform_device.sh halfcheetah  # ~6 min: RLlib's own mujoco_ppo.py,
#                                                    # seeds 0-2 side by side (needs MuJoCo)
# or all three in one call, each part cut at its own limit (seconds; defaults 200, 230, 90) so the
# call ends inside the tool's limit; a part cut off keeps what it wrote and its JSON lists what it
# had not finished (``unfinished``), and parts.txt says which parts ran to the end
# (ES_GENERATIONS, default 10, shortens the es part):
#     bash benchmarks/platform_device.sh all [LEARNER_S SAMPLING_S ES_S]
# JSON and PNGs go to $OUT (the tool's folder that comes back), else benchmarks/results/platform/device.
# The halfcheetah part also needs mujoco (mujoco, mujoco-core 4.0.0, glfw for gymnasium's
# renderer import). With them the wheels pass the tool's 64 MiB, so carry instead
# .devcarry2/: site.tar.xz, the same wheels (without ray's jars and dashboard client, and
# without mujoco-studio) unpacked and packed with xz -9 (36 MB), and the glfw wheel.
# Run on a machine without .devcarry, the script uses the Python it finds (PYTHON, default
# .venv/bin/python, else python3) and the installed packages.
set -euo pipefail
part=${1:?"say which part: sampling, learner, es, imitation, halfcheetah or all"}
cd "$(dirname "$0")/.."
if [ -f .devcarry2/site.tar.xz ]; then
  if [ ! -d /tmp/site/ray ]; then
    mkdir -p /tmp/site && tar -C /tmp/site -xJf .devcarry2/site.tar.xz
    for w in .devcarry2/*.whl; do [ -f "$w" ] && python3 -m zipfile -e "$w" /tmp/site; done
  fi
  export PYTHONPATH=/tmp/site:$PWD
  py=python3
elif [ -d .devcarry/whl ]; then
  [ -d /tmp/site/ray ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .devcarry/whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD
  py=python3
else
  py=${PYTHON:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
fi
out=${OUT:-benchmarks/results/platform/device}
mkdir -p "$out"
$py -m rlsuite.cli info 2>&1 | grep -E '^(CPUs|GPUs|  cuda)' | tee "$out/machine.txt" || true

case "$part" in
  all)
    : >"$out/parts.txt"
    for spec in "learner:${2:-200}" "sampling:${3:-230}" "es:${4:-90}"; do
      name=${spec%%:*}; limit=${spec#*:}
      rc=0; timeout --kill-after=10 "$limit" bash "$0" "$name" || rc=$?
      case $rc in 0) what=finished ;; 1) what="finished, a pass criterion not met" ;; 124|137) what="cut off at ${limit} s" ;; *) what="failed (exit $rc)" ;; esac
      echo "$name: $what" | tee -a "$out/parts.txt"
    done
    ;;
  sampling)
    $py benchmarks/platform_sampling.py --sections scaling,ceiling,async-scaling \
      --runners 1,2,4,8,15 --envs Pendulum-v1,CartPole-v1 \
      --out "$out/platform_scaling_device.json"
    ;;
  learner)
    $py benchmarks/platform_sampling.py --sections gpu-learner --envs CartPole-v1 \
      --out "$out/platform_gpu_learner_device.json"
    # "auto" end to end on the large net (it should print "learner: cuda"), then two
    # data-parallel learners sharing the one GPU.
    $py -m rlsuite.cli train --plan sync --env CartPole-v1 --iterations 3 --no-progress \
      --set 'hidden=[256,256]' --set train_batch_size=16000 --set minibatch_size=4000 \
      --run-dir /tmp/rlsuite-auto 2>&1 | tee "$out/auto_large_net.txt"
    $py -m rlsuite.cli train --plan sync --env CartPole-v1 --iterations 3 --no-progress \
      --set num_learners=2 --set num_gpus_per_learner=0.5 \
      --run-dir /tmp/rlsuite-two-learners 2>&1 | tee "$out/two_learners_one_gpu.txt"
    ;;
  es)
    $py benchmarks/platform_es.py --part scaling --workers 1,2,4,8,15 \
      --generations "${ES_GENERATIONS:-10}" \
      --out "$out/platform_es_device.json"
    ;;
  imitation)
    # The imitation plan's driver-mapped offline data (rlsuite.platform.offline) feeding a
    # GPU learner: BC on the PD expert's 200,000 CartPole rows to RLlib's 350, then the
    # sync plan with one shared encoder (vf_share_layers) on the GPU.
    $py -c 'import sys; sys.path.insert(0, "benchmarks"); import platform_learning_tasks as t; print(t.record_cartpole_expert())' \
      2>&1 | tail -n 3 | tee "$out/imitation_data.txt"
    $py -m rlsuite.cli train --plan imitation --env CartPole-v1 --iterations 120 --no-progress \
      --stop-return 350 --set data=benchmarks/results/tmp/cartpole_pd_expert \
      --set 'hidden=[256,256]' --set activation=tanh --set lr=8e-4 --set train_batch_size=1024 \
      --set updates_per_iteration=5 --set num_gpus_per_learner=1 \
      --run-dir /tmp/rlsuite-bc-gpu 2>&1 | tee "$out/imitation_gpu.txt"
    $py -m rlsuite.cli train --plan sync --env Pendulum-v1 --iterations 3 --no-progress \
      --set vf_share_layers=true --set num_gpus_per_learner=1 \
      --run-dir /tmp/rlsuite-shared-gpu 2>&1 | tee "$out/sync_shared_encoder_gpu.txt"
    ;;
  halfcheetah)
    # RLlib's mujoco_ppo.py on HalfCheetah-v5 to 1M steps (its 4 runners x 16 envs and one
    # remote learner: 5 logical CPUs each), three seeds at once, each cut at HC_MAX_S.
    for seed in 0 1 2; do
      $py benchmarks/platform_learning.py --tasks ppo-halfcheetah --impls rllib --seeds "$seed" \
        --num-cpus 5 --max-wall-s "${HC_MAX_S:-400}" \
        --out "$out/platform_learning_halfcheetah_rllib_s$seed.json" >"/tmp/hc_s$seed.log" 2>&1 &
    done
    rc=0; for job in $(jobs -p); do wait "$job" || rc=1; done
    tail -n 40 /tmp/hc_s*.log >"$out/halfcheetah.log"
    rm -f "$out"/platform_learning_halfcheetah_rllib_s*.png  # drawn here, keeps the tool's 8 files
    exit $rc
    ;;
  *)
    echo "unknown part '$part': say sampling, learner, es, imitation, halfcheetah or all" >&2
    exit 2
    ;;
esac
