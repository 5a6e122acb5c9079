#!/usr/bin/env bash
# On an NVIDIA machine, with ./greenlight built by scripts/build beside it:
# examples/h100-roofline.yaml run for real (NVML: the SM clock each shape
# held), then Nsight Compute on each shape's GEMM kernel at the clock it
# runs at (--clock-control none, the SpeedOfLight section: compute (SM)
# and DRAM throughput as % of peak), side by side with the record's
# shares. The record, its JSON and ncu's CSV land in $OUT.
set -u
OUT=${OUT:-/tmp/greenlight-roofline}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
BIN=$PWD/greenlight
rm -rf examples/results/.greenlight/h100-roofline examples/results/h100-roofline*
(cd examples && "$BIN" run --plain --gpu nvml h100-roofline.yaml) > "$OUT/run.txt" 2>&1
cp examples/results/h100-roofline.md examples/results/h100-roofline.json "$OUT/" 2>/dev/null
for s in "8192 8192 8192" "4096 4096 4096" "16 8192 8192"; do
	set -- $s
	ncu --clock-control none --section SpeedOfLight --kernel-name regex:'gemm|nvjet|sm90|cutlass' \
		--launch-skip 5 --launch-count 1 --csv --page details \
		python3 examples/scripts/gemm_roof.py $1 $2 $3 --once > "$OUT/ncu-$1x$2x$3.csv" 2> "$OUT/ncu-$1x$2x$3.err"
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv > "$OUT/machine.txt" 2>&1
grep -h -E '"(SM Frequency|Compute \(SM\) Throughput|DRAM Throughput|Memory Throughput|Duration)"' "$OUT"/ncu-*.csv > "$OUT/ncu-sol.txt"
