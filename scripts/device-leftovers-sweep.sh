#!/usr/bin/env bash
# On an NVIDIA machine, with ./greenlight built by scripts/build beside it:
#  1. leftovers: a step setsid's a torch process that holds 2.6 GiB of GPU
#     memory, then is skipped; the next phase reads nvidia-smi at its
#     start. And a step that exits leaving such a process behind.
#  2. a real GEMM sweep: bf16 matmuls over M x shape, repeated, the
#     record's tables with their confidence intervals and noise marks, and
#     the charts beside it (plot: curves along m, the GPU's history).
#  3. the idle monitor's CPU (window and runner), HEAD against BASE
#     (a directory holding an older build), side by side (PARTS=idle).
# Everything lands in $OUT (default /tmp/greenlight-device).
set -u
OUT=${OUT:-/tmp/greenlight-device}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
BIN=$PWD/greenlight
BASE=${BASE:-$PWD/.device/base}
W=$(mktemp -d)
cd "$W"
cat > hold.py <<'PY'
import os, sys, time, torch
x = torch.empty(int(2.6 * 2**30), dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
open(sys.argv[1], "w").write(str(os.getpid()))
time.sleep(900)
PY
cat > leak.yaml <<'YAML'
name: leak
report: leak.md
phases:
  - id: skipped
    title: a step that escapes and is skipped
    gpus: [0]
    steps:
      - run: |
          setsid python3 hold.py skipped.pid > /dev/null 2>&1 &
          while [ ! -s skipped.pid ]; do sleep 0.2; done
          sleep 600
  - id: ended
    title: a step that exits and leaves its helper running
    needs: [skipped]
    gpus: [0]
    steps:
      - run: |
          setsid python3 hold.py ended.pid > /dev/null 2>&1 &
          while [ ! -s ended.pid ]; do sleep 0.2; done
  - id: next
    title: the next phase, reading the GPU at its start
    needs: [ended]
    gpus: [0]
    steps:
      - run: |
          nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv > next-smi.csv
          echo "{\"leftover_processes\": $(($(wc -l < next-smi.csv) - 1))}" >> "$GREENLIGHT_RESULTS"
YAML
"$BIN" run --plain --gpu nvml leak.yaml > leak-run.txt 2>&1 &
run=$!
while [ ! -s skipped.pid ]; do sleep 0.5; done
sleep 2
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv > before-skip-smi.csv
"$BIN" skip leak.yaml skipped >> leak-run.txt 2>&1
wait $run
for p in skipped ended; do
  pid=$(cat $p.pid)
  if [ -r /proc/$pid/stat ]; then echo "$p: pid $pid still in /proc: $(cat /proc/$pid/stat | cut -d' ' -f1-4)"; else echo "$p: pid $pid gone"; fi
done > leftover-check.txt
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv > after-smi.csv
cp leak.md leak-run.txt leftover-check.txt before-skip-smi.csv after-smi.csv next-smi.csv "$OUT"/ 2>/dev/null
[ "${PARTS:-leak sweep}" = leak ] && exit 0
cat > gemm.py <<'PY'
import json, os, sys, time, torch
m, n, k = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16); b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
for _ in range(10): a @ b
torch.cuda.synchronize()
iters = 200
start = torch.cuda.Event(enable_timing=True); end = torch.cuda.Event(enable_timing=True)
start.record()
for _ in range(iters): a @ b
end.record(); torch.cuda.synchronize()
ms = start.elapsed_time(end) / iters
with open(os.environ["GREENLIGHT_RESULTS"], "a") as f:
    f.write(json.dumps({"time_us": round(ms * 1000, 2), "TFLOP/s": round(2 * m * n * k / (ms * 1e9), 1)}) + "\n")
PY
cat > sweep.yaml <<'YAML'
name: gemm-sweep
report: gemm-sweep.md
phases:
  - id: gemm
    title: bf16 GEMM at Kimi-K2.5 MoE shapes, by M
    gpus: [0]
    sweep:
      shape:
        - {name: expert_gate_up, n: 512, k: 7168}
        - {name: expert_down, n: 7168, k: 256}
        - {name: lm_head, n: 20480, k: 7168}
      m: [1, 16, 128, 1024, 8192]
    repeat: 2
    noise: 5%
    plot: {x: m, y: [TFLOP/s, time_us], series: shape}
    steps:
      - run: |
          python3 gemm.py ${m} ${shape.n} ${shape.k}
YAML
start=$(date +%s)
"$BIN" run --plain --gpu nvml sweep.yaml > sweep-run.txt 2>&1
echo "sweep wall: $(( $(date +%s) - start )) s for 30 units" >> sweep-run.txt
cp leak.md leak-run.txt leftover-check.txt before-skip-smi.csv after-smi.csv next-smi.csv "$OUT"/ 2>/dev/null
cp gemm-sweep.md sweep-run.txt gemm-sweep.gemm.csv gemm-sweep.*.svg leak.*.svg "$OUT"/ 2>/dev/null
case "${PARTS:-leak sweep}" in *idle*)
  cd "$OLDPWD"
  GPU=nvml ROUNDS=2 scripts/idle-cpu "${IDLE_SECS:-30}" ./greenlight "$BASE/greenlight" > "$OUT/idle-cpu.txt" 2>&1
esac
ls -la "$OUT"
