#!/usr/bin/env bash
# On an NVIDIA machine, with ./greenlight built by scripts/build beside it:
#  1. greenlight's NVML readings against nvidia-smi's, under a matmul load;
#  2. examples/h200-smoke.yaml run for real in tmux with --gpu nvml, the
#     screen captured with nvidia-smi readings alongside, the results kept.
# Everything lands in $OUT (default /tmp/greenlight-smoke).
set -u
OUT=${OUT:-/tmp/greenlight-smoke}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
BIN=$PWD/greenlight
export LANG=C.UTF-8
for d in /opt/nvidia/nsight-compute/*/; do [ -x "$d/ncu" ] && export PATH=$PATH:$d; done
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; python3 -c 'import torch; print("torch", torch.__version__)'; command -v ncu tmux; } > "$OUT/machine.txt" 2>&1
"$BIN" version >> "$OUT/machine.txt" 2>&1
"$BIN" gpus --gpu nvml > "$OUT/gpus-idle.txt" 2>&1

# 1. NVML vs nvidia-smi while a bf16 matmul keeps the GPU busy.
python3 - <<'PY' > "$OUT/load.txt" 2>&1 &
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
t = time.time(); n = 0
while time.time() - t < 40:
    c = a @ b; n += 1
torch.cuda.synchronize(); print(f"{n} matmuls, {2*8192**3*n/(time.time()-t)/1e12:.0f} TFLOP/s")
PY
load=$!
sleep 12
for i in 1 2 3 4 5; do
  "$BIN" gpus --gpu nvml --json > "$OUT/nvml-$i.json" 2>&1 &
  nvidia-smi --query-gpu=index,name,memory.total,memory.used,utilization.gpu,power.draw,temperature.gpu --format=csv,noheader,nounits > "$OUT/smi-$i.csv"
  wait $!
  sleep 2
done
"$BIN" gpus --gpu nvml > "$OUT/gpus-load.txt" 2>&1
wait $load
python3 scripts/nvml-vs-smi.py "$OUT" > "$OUT/compare.txt" 2>&1; echo "compare exit $?" >> "$OUT/compare.txt"

# 2. The smoke campaign in tmux, 200x60 then 80x24.
rm -rf examples/results/.greenlight examples/results/h200-smoke.md
tmux new-session -d -s gl -x 200 -y 60 "cd $PWD && $BIN run --gpu nvml examples/h200-smoke.yaml; echo EXIT=\$? > $OUT/exit.txt; sleep 300"
for i in $(seq 1 150); do
  sleep 2
  tmux capture-pane -p -t gl > "$OUT/screen-$(printf %03d $i).txt"
  nvidia-smi --query-gpu=utilization.gpu,memory.used,power.draw,temperature.gpu --format=csv,noheader > "$OUT/screen-$(printf %03d $i)-smi.txt"
  [ "$i" = 20 ] && tmux resize-window -t gl -x 80 -y 24
  [ "$i" = 24 ] && tmux resize-window -t gl -x 200 -y 60
  if grep -q 'Status:\*\* finished' examples/results/h200-smoke.md 2>/dev/null; then
    sleep 2; tmux send-keys -t gl Tab; sleep 1; tmux capture-pane -p -t gl > "$OUT/screen-final-report.txt"
    tmux send-keys -t gl q; sleep 2; break
  fi
done
cp examples/results/h200-smoke.md "$OUT/" 2>/dev/null
(cd "$OUT" && tar czf screens.tgz screen-* nvml-*.json smi-*.csv && rm -f screen-* nvml-*.json smi-*.csv)
tar czf "$OUT/state.tgz" examples/results/.greenlight 2>/dev/null
cat "$OUT/exit.txt" 2>/dev/null
cat "$OUT/compare.txt"
