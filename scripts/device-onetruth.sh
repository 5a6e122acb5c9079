#!/usr/bin/env bash
# On an NVIDIA machine, with ./greenlight built by scripts/build beside it:
# a campaign on the real GPUs whose record, NAME.json and status --json
# are read by one results model (a GEMM sweep run until precise, one point
# skipped by you after a run), and the interconnect tie: all-reduce by size
# through PyTorch and NCCL, and a decode-like loop under torch.profiler
# whose traces hold NCCL's all-reduce kernels. Everything lands in $OUT.
set -u
OUT=${OUT:-/tmp/greenlight-onetruth}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
BIN=$PWD/greenlight
W=$(mktemp -d)
cp examples/scripts/allreduce_table.py examples/scripts/allreduce_trace.py "$W/"
cat > "$W/real.yaml" <<EOF
name: real
phases:
  - id: gemm
    gpus: [0]
    sweep: {n: [2048, 4096, 8192]}
    repeat: {until: 1%, max: 6}
    steps:
      - run: |
          if [ \${n} = 8192 ] && [ \$GREENLIGHT_REPEAT = 2 ]; then "$BIN" skip --point n=8192 real.yaml gemm; sleep 20; fi
          python3 -c "
          import time, torch
          n = \${n}; a = torch.randn(n, n, device='cuda', dtype=torch.bfloat16); b = torch.randn_like(a)
          for _ in range(5): a @ b
          torch.cuda.synchronize(); t = time.time(); k = 50
          for _ in range(k): a @ b
          torch.cuda.synchronize(); s = (time.time() - t) / k
          print('{\"tflops\": %.2f, \"time_us\": %.1f}' % (2 * n**3 / s / 1e12, s * 1e6))" >> "\$GREENLIGHT_RESULTS"
  - id: allreduce
    steps:
      - name: all-reduce, every GPU
        results: {format: nccl-tests}
        run: |
          python3 allreduce_table.py 8 67108864 20
  - id: decode
    artifacts: ['traces/*.pt.trace.json']
    steps:
      - run: |
          python3 allreduce_trace.py traces 7168 64
EOF
cd "$W"
"$BIN" run --plain --gpu nvml real.yaml > "$OUT/run.txt" 2>&1; echo "exit $?" >> "$OUT/run.txt"
"$BIN" status real.yaml > "$OUT/status.txt" 2>&1
"$BIN" status --json real.yaml > "$OUT/status.json" 2>&1
cp real.md real.json "$OUT/" 2>/dev/null
"$BIN" report real.yaml > "$OUT/report.txt" 2>&1
cp real.json "$OUT/real.rebuilt.json"; cp real.md "$OUT/real.rebuilt.md"
ls traces > "$OUT/traces.txt" 2>&1
nvidia-smi -L > "$OUT/machine.txt"; nvidia-smi topo -m >> "$OUT/machine.txt" 2>&1
