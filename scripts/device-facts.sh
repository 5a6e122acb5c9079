#!/usr/bin/env bash
# On an NVIDIA machine, with ./greenlight built by scripts/build beside it:
# each step's facts as the runner journals them at its end, from NVML (the
# GPUs' summed power, the energy they drew, the SM clock they ran at, the
# stamp): a GEMM roofline (its rows held against the roof at the clock each
# step ran at), a token-throughput step (its energy per token), and a
# search during one of whose runs a process not of the campaign holds the
# GPU (that run stamped, run again, never decided by). The journal's facts,
# the record, status --json and the record rebuilt by greenlight report
# land in $OUT.
set -u
OUT=${OUT:-/tmp/greenlight-facts}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
BIN=$PWD/greenlight
W=$(mktemp -d)
cp examples/scripts/gemm_roof.py "$W/"
cat > "$W/facts.yaml" <<'YAML'
name: facts
phases:
  - id: gemm
    gpus: [0]
    sweep:
      shape:
        - {name: big, m: 8192, n: 8192, k: 8192}
        - {name: skinny, m: 16, n: 8192, k: 8192}
    repeat: 2
    roofline:
      flops: 2*m*n*k
      bytes: 2*(m*k + k*n + m*n)
      seconds: time_ms / 1000
      dtype: bf16
    steps:
      - run: |
          python3 gemm_roof.py ${shape.m} ${shape.n} ${shape.k} --seconds 4
  - id: decode
    gpus: [0]
    steps:
      - run: |
          python3 -c "
          import time, torch
          a = torch.randn(64, 7168, device='cuda', dtype=torch.bfloat16); w = torch.randn(7168, 7168, device='cuda', dtype=torch.bfloat16)
          t = time.time(); n = 0
          while time.time() - t < 6:
              for _ in range(61): a @ w
              torch.cuda.synchronize(); n += 64
          print('{\"output_tok_s\": %.1f}' % (n / (time.time() - t)))" >> "$GREENLIGHT_RESULTS"
  - id: limit
    gpus: [0]
    search:
      axis: c
      range: [1, 64]
      slo: {p99_ms: "<= 40"}
    repeat: 3
    steps:
      - run: |
          python3 -c "
          import random, time, torch
          a = torch.randn(4096, 4096, device='cuda', dtype=torch.bfloat16)
          t = time.time()
          while time.time() - t < 2: a @ a
          torch.cuda.synchronize()
          print('{\"p99_ms\": %.3f}' % (${c} * (1 + 0.01 * random.random())))" >> "$GREENLIGHT_RESULTS"
YAML
cd "$W"
"$BIN" run --plain --gpu nvml --interval 250ms facts.yaml > "$OUT/run.txt" 2>&1 &
RUN=$!
# A process not of the campaign on GPU 0 for 5 s, once the search's third
# run has started.
for _ in $(seq 1 600); do
	n=$(grep -c '"kind":"step-start","phase":"limit"' .greenlight/facts/journal.jsonl 2>/dev/null)
	[ "${n:-0}" -ge 3 ] && break
	sleep 0.5
done
python3 -c "
import time, torch
a = torch.randn(4096, 4096, device='cuda'); t = time.time()
while time.time() - t < 5: a @ a
torch.cuda.synchronize()" > "$OUT/foreign.txt" 2>&1
wait $RUN; echo "exit $?" >> "$OUT/run.txt"
grep '"kind":"facts"' .greenlight/facts/journal.jsonl > "$OUT/facts.jsonl"
"$BIN" status facts.yaml > "$OUT/status.txt" 2>&1
"$BIN" status --json facts.yaml > "$OUT/status.json" 2>&1
cp facts.md facts.json "$OUT/" 2>/dev/null
"$BIN" report facts.yaml > "$OUT/report.txt" 2>&1
cp facts.md "$OUT/facts.rebuilt.md"; cp facts.json "$OUT/facts.rebuilt.json"
ls .greenlight/facts > "$OUT/statedir.txt"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit,power.default_limit --format=csv > "$OUT/machine.txt" 2>&1
