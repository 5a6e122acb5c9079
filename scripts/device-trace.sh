#!/usr/bin/env bash
# On an NVIDIA machine, with ./greenlight built by scripts/build beside it:
# examples/h200-trace.yaml run for real in tmux (NVML), the window at
# 200x60 and 80x24 on the results preview once the traces are summarised;
# the record, its kernels CSV and the screens land in $OUT.
set -u
OUT=${OUT:-/tmp/greenlight-trace}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
BIN=$PWD/greenlight
export LANG=C.UTF-8 TERM=xterm-256color
rm -rf examples/results/.greenlight examples/results/h200-trace* examples/traces
tmux kill-server 2>/dev/null
tmux new-session -d -s t -x 200 -y 60 "cd examples && $BIN run --gpu nvml h200-trace.yaml; sleep 600"
for i in $(seq 1 120); do
	grep -q "Across ranks" examples/results/h200-trace.md 2>/dev/null && break
	sleep 1
done
sleep 2
shot() { { echo "=== $1"; tmux capture-pane -p -t t; } >> "$OUT/screens.txt"; }
shot "200x60, the campaign at its end"
tmux send-keys -t t Tab; sleep 2
tmux send-keys -t t End; sleep 2
shot "200x60, tab to the results preview, End"
tmux resize-window -t t -x 80 -y 24; sleep 3
tmux send-keys -t t End; sleep 2
shot "80x24, the results preview, End"
for i in 1 2 3 4 5 6; do tmux send-keys -t t PageUp; done; sleep 2
shot "80x24, the results preview, PageUp x6"
"$BIN" status examples/h200-trace.yaml > "$OUT/status.txt" 2>&1
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'; } > "$OUT/machine.txt" 2>&1
cp examples/results/h200-trace.md examples/results/h200-trace.capture.kernels.csv "$OUT/" 2>/dev/null
tar czf "$OUT/extra.tgz" examples/results/.greenlight/h200-trace/runner.log examples/results/h200-trace.*.csv 2>/dev/null
tmux kill-server
