#!/usr/bin/env bash
# On an NVIDIA machine, with ./greenlight built by scripts/build beside it:
# one GEMM campaign run twice, the second with a foreign GEMM sharing GPU 0
# (the machine's power limit is not ours to change), held against the
# first through baseline:, and `greenlight compare` on the two records.
# Everything lands in $OUT (default /tmp/greenlight-device).
set -u
OUT=${OUT:-/tmp/greenlight-device}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
BIN=$PWD/greenlight
W=$(mktemp -d)
cd "$W"
git init -q . && git -c user.email=a@b -c user.name=gl commit -q --allow-empty -m campaign
cat > gemm.py <<'PY'
import json, os, sys, torch
m, n, k = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16); b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
for _ in range(10): a @ b
torch.cuda.synchronize()
iters = 300
start = torch.cuda.Event(enable_timing=True); end = torch.cuda.Event(enable_timing=True)
start.record()
for _ in range(iters): a @ b
end.record(); torch.cuda.synchronize()
ms = start.elapsed_time(end) / iters
with open(os.environ["GREENLIGHT_RESULTS"], "a") as f:
    f.write(json.dumps({"time_us": round(ms * 1000, 2), "tflops": round(2 * m * n * k / (ms * 1e9), 1)}) + "\n")
PY
cat > hog.py <<'PY'
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
open(sys.argv[1], "w").write("up")
end = time.time() + 600
while time.time() < end:
    for _ in range(50): a @ a
    torch.cuda.synchronize()
PY
campaign() { # name, baseline
cat <<YAML
name: $1
report: $1.md
${2:+baseline: $2}
conditions:
  commands:
    - |
      nvidia-smi --query-gpu=name,power.limit,clocks.applications.graphics --format=csv,noheader
  packages: [torch, numpy]
phases:
  - id: gemm
    title: bf16 GEMM at Kimi-K2.5 MoE shapes, by M
    gpus: [0]
    sweep:
      m: [256, 2048, 8192]
      shape:
        - {name: lm_head, n: 20480, k: 7168}
        - {name: expert_down, n: 7168, k: 2048}
    repeat: 4
    better: lower           # time_us; tflops is higher-is-better by its expect
    expect:
      tflops: ">= 100"
    steps:
      - run: |
          python3 gemm.py \${m} \${shape.n} \${shape.k}
YAML
}
campaign bench0 > bench0.yaml
campaign bench1 bench0.md > bench1.yaml
{
  echo "== bench0 alone on the GPU"
  "$BIN" run --plain --gpu nvml bench0.yaml
  echo "rc=$?"
  echo "== bench1 with a foreign GEMM on GPU 0, baseline bench0"
  setsid python3 hog.py hog.up > /dev/null 2>&1 &
  hog=$!
  while [ ! -s hog.up ]; do sleep 0.2; done
  nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
  "$BIN" run --plain --gpu nvml bench1.yaml
  echo "rc=$?"
  kill $hog; wait $hog 2>/dev/null
  echo "== greenlight compare bench0.md bench1.md"
  "$BIN" compare --markdown compare.md bench0.md bench1.md
  echo "rc=$?"
} > runs.txt 2>&1
cp bench0.md bench1.md bench0.json bench1.json compare.md runs.txt "$OUT"/ 2>/dev/null
ls -la "$OUT"
