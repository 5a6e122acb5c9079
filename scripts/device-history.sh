#!/usr/bin/env bash
# On an NVIDIA machine, with ./greenlight built by scripts/build: eight
# runs of one small campaign standing in for eight nights (two of the
# model's GEMM shapes at M = 8, three runs each). From the sixth on, the
# campaign's step times the GEMM as a decode step runs it (gemm_roof.py
# --decode: each product on a weight of its own from memory) where the
# first five reused one weight the L2 cache held: a change to the
# benchmark, not the machine. `greenlight history` over the eight records
# should find the move at the sixth and name the campaign file's change.
set -u
OUT=${OUT:-/tmp/greenlight-history}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
for i in 1 2 3 4 5 6 7 8; do
  d="$OUT/night$i"
  mkdir -p "$d"
  cp "$ROOT/examples/scripts/gemm_roof.py" "$d/"
  flag=""
  [ "$i" -ge 6 ] && flag="--decode"
  cat > "$d/nightly.yaml" <<YAML
name: nightly
gpus: 1
phases:
  - id: gemm
    title: two of Llama-3-8B's GEMMs at M = 8
    gpus: [0]
    sweep:
      shape:
        - {name: qkv_proj, n: 6144, k: 4096}
        - {name: gate_up_proj, n: 28672, k: 4096}
    repeat: 3
    roofline:
      flops: 2*m*n*k
      bytes: 2*(m*k + k*n + m*n)
      seconds: time_ms / 1000
      dtype: bf16
    metrics: [{time_ms: lower}]
    steps:
      - run: |
          python3 gemm_roof.py 8 \${shape.n} \${shape.k} --seconds 1 $flag
YAML
  (cd "$d" && "$ROOT/greenlight" run --plain --gpu nvml nightly.yaml > run.txt 2>&1; echo "exit $?" >> run.txt)
done
cd "$OUT" && tar czf all.tgz night*/nightly.json night*/nightly.md night*/nightly.yaml night*/run.txt
