#!/usr/bin/env bash
# The model load's page-cache measures on a real machine: a folder of
# GB gigabytes of shards (random data, so no filesystem shortcut), evicted
# with posix_fadvise(DONTNEED), then prewarmed by the step supervisor as a
# service's start would be (its log says the count before, the bytes read
# and the rate), then prewarmed again (warm: skipped); then a campaign
# whose stand-in server prints vLLM's timing lines, model: that folder,
# prewarm: true, its GPU held by another phase for 15 s first (the
# prewarm runs meanwhile, holding no GPU), run to its end: its record's
# Load table is the result.
#   BIN=./greenlight OUT=/tmp/load scripts/device-load.sh [GB]
set -eu
gb=${1:-16}
OUT=${OUT:-/tmp/greenlight-load}
BIN=$(realpath "${BIN:-./greenlight}")
SUP=$(dirname "$BIN")/greenlight-supervise
mkdir -p "$OUT"
work=$(mktemp -d "${TMPDIR:-/var/tmp}/gl-load.XXXX")
model=$work/model
mkdir -p "$model"
head -c $((1 << 30)) /dev/urandom > "$work/one"
for i in $(seq 1 "$gb"); do cp "$work/one" "$model/model-$(printf %05d "$i")-of-$(printf %05d "$gb").safetensors"; done
rm "$work/one"
sync
evict() { python3 -c 'import os,sys
for root,_,fs in os.walk(sys.argv[1]):
    for f in fs:
        fd=os.open(os.path.join(root,f),os.O_RDONLY); os.fdatasync(fd); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED); os.close(fd)' "$1"; }
R=$OUT/load.txt
{ nproc; free -g | head -2; df -h "$work" | tail -1; } > "$R"
for round in 1 2; do
	evict "$model"
	"$SUP" --status "$work/s$round.json" --log "$work/p$round.log" --prewarm "$model" -- true
	grep -v 'GB read' "$work/p$round.log" | sed "s/^/cold round $round: /" >> "$R"
	"$SUP" --status "$work/w$round.json" --log "$work/w$round.log" --prewarm "$model" -- true
	grep -v 'GB read' "$work/w$round.log" | sed "s/^/warm round $round: /" >> "$R"
done
cp "$work/p1.log" "$OUT/prewarm-progress.log"
evict "$model"
cat > "$work/vllm.txt" <<'LINES'
(VllmWorker rank=0 pid=1) INFO 10-06 11:41:02 [default_loader.py:267] Loading weights took 1021.40 seconds
INFO 10-06 11:41:03 [gpu_model_runner.py:2653] Model loading took 72.1234 GiB and 1030.512 seconds
INFO 10-06 11:42:11 [gpu_worker.py:298] Memory profiling takes 12.45 seconds
(EngineCore_DP0 pid=212) INFO 10-06 12:00:40 [gpu_model_runner.py:3480] Graph capturing finished in 25 secs, took 0.31 GiB
INFO 10-06 12:00:41 [core.py:210] init engine (profile, create kv cache, warmup model) took 95.30 seconds
INFO:     Application startup complete.
LINES
cat > "$work/c.yaml" <<YAML
name: load
phases:
  - id: busy
    gpus: [0]
    steps:
      - run: |
          sleep 15
  - id: serve
    gpus: [0]
    service:
      run: |
        cat $work/vllm.txt; sleep 600
      ready: {log: "Application startup complete", timeout: 10m}
      model: $model
      prewarm: true
  - id: use
    needs: [serve]
    steps:
      - run: |
          sleep 1
YAML
(cd "$work" && "$BIN" run --plain --gpu "${GPU:-nvml}" c.yaml > "$OUT/run.txt" 2>&1) || true
cp "$work/load.md" "$OUT/" 2>/dev/null || true
echo "work: $work" >> "$R"
rm -rf "$model"
echo "done; $R"
