#!/bin/bash
# On the H200: a service sweep run, the runner killed (-9) at point 2,
# resumed in a tmux window; what came of it goes to $OUT.
R=$PWD
mkdir -p /tmp/bins && tar -xJf .device/bins.tar.xz -C /tmp/bins
export PATH=/tmp/bins:$PATH
cd .device/ss
log=$OUT/run.txt
{ date; nvidia-smi --query-gpu=name,memory.used --format=csv; greenlight version; } > $log 2>&1
greenlight run --detach --gpu nvml ss.yaml >> $log 2>&1
J=.greenlight/h200-serve-sweep/journal.jsonl
for i in $(seq 300); do grep -q '"kind":"step-start","phase":"bench.bf16.8192"' $J 2>/dev/null && break; sleep 0.2; done
pid=$(greenlight status --json ss.yaml | python3 -c 'import json,sys; print(json.load(sys.stdin)["monitor"]["pid"])')
echo "$(date +%T) kill -9 runner $pid at bench.bf16.8192's first step" >> $log
kill -9 $pid; sleep 1
nvidia-smi --query-compute-apps=pid,used_memory --format=csv >> $log
tmux new-session -d -s w -x 200 -y 60 "greenlight run --gpu nvml ss.yaml; sleep 600"
mkdir -p /tmp/screens
for i in $(seq 150); do
  sleep 2
  tmux capture-pane -p -t w > /tmp/screens/screen-$(printf %03d $i).txt
  greenlight status --json ss.yaml > /tmp/st.json 2>/dev/null
  grep -q '"status": *"finished"\|"finished": *true' /tmp/st.json && break
  python3 -c 'import json; s=json.load(open("/tmp/st.json")); exit(0 if all(p["status"] in ("done","failed","skipped","blocked") for p in s["phases"]) else 1)' && break
done
sleep 3
tmux capture-pane -p -t w > /tmp/screens/screen-final.txt
tmux resize-window -t w -x 80 -y 24 2>/dev/null; sleep 1; tmux capture-pane -p -t w > /tmp/screens/screen-final-80.txt
cp /tmp/st.json $OUT/status.json
{ echo "starts:"; cat starts.txt; date; } >> $log
greenlight logs ss.yaml > $OUT/logs.txt 2>&1
tar -czf $OUT/results.tgz *.md *.svg *.csv starts.txt .greenlight/h200-serve-sweep/journal.jsonl -C /tmp screens 2>/dev/null
tmux kill-server
