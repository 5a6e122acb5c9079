#!/usr/bin/env bash
# An SLO search on a real GPU: examples/h200-search.yaml (the largest M at
# which a bf16 o_proj GEMM stays within 30 µs) run to its end by greenlight,
# the GPU read through NVML (its stamps decide which runs a probe may
# use); the record, its chart, the plain log and the journal go to $OUT.
#   BIN=./.dev/greenlight OUT=/tmp/search scripts/device-search.sh
set -eu
OUT=${OUT:-/tmp/greenlight-search}
BIN=$(realpath "${BIN:-./greenlight}")
mkdir -p "$OUT"
work=$(mktemp -d "${TMPDIR:-/var/tmp}/gl-search.XXXX")
cp examples/h200-search.yaml "$work/"
mkdir -p "$work/scripts"
cp examples/scripts/gemm_bench.py "$work/scripts/"
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,driver_version --format=csv > "$OUT/gpu.txt"
cd "$work"
t0=$(date +%s)
code=0
"$BIN" run --plain --gpu nvml h200-search.yaml > "$OUT/run.log" 2>&1 || code=$?
echo "exit $code, wall $(( $(date +%s) - t0 )) s" >> "$OUT/run.log"
"$BIN" status --json h200-search.yaml > "$OUT/status.json" 2>&1 || true
cp -r results "$OUT/" 2>/dev/null || true
cp .greenlight/h200-search/journal.jsonl "$OUT/" 2>/dev/null || true
