#!/usr/bin/env bash
# On an NVIDIA machine, with ./greenlight built by scripts/build: the load
# a serving row applied, proven against a real server. A continuous-
# batching decode server on the GPU (examples/scripts/cb_server.py: 16
# slots, a waiting queue, real decode steps, /metrics in vLLM's names) is
# driven by a closed-loop client (decode_load.py, vllm bench's
# --save-detailed file, and the same requests as AIPerf's and GuideLLM's
# documented exports, each read by its own format) at concurrency 4, 8,
# 16, 24 and 32. Each row says the concurrency it achieved at the client;
# the server's running gauge, read every 0.5 s, is held against it over
# each step's own window by load-check.py, from the state dir's kept
# scrapes and journal, without greenlight; the rows at 24 and 32 are
# stamped capped by the server (16 slots), and at 32, where 8 more than
# may wait were sent, admission-limited.
set -u
OUT=${OUT:-/tmp/greenlight-load-proven}
mkdir -p "$OUT"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d)
cp "$ROOT/examples/scripts/cb_server.py" "$ROOT/examples/scripts/decode_load.py" "$W/"
cat > "$W/proven.yaml" <<'YAML'
name: proven
gpus: 1
env:
  PORT: "8123"
phases:
  - id: serve
    title: a continuous-batching decode server (16 slots, 8 may wait)
    gpus: [0]
    service:
      run: |
        exec python3 cb_server.py --port ${PORT} --max-num-seqs 16 --max-waiting 8 --step-ms 10
      ready: {log: 'serving on'}
      metrics:
        url: http://127.0.0.1:${PORT}/metrics
  - id: decode
    title: a closed-loop client at each concurrency (vllm bench's file, and the same requests as AIPerf's and GuideLLM's)
    needs: [serve]
    gpus: none
    sweep: {c: [4, 8, 16, 24, 32]}
    artifacts: ['bench/*.json']
    steps:
      - results: {format: vllm-bench}
        run: |
          mkdir -p bench/aiperf-c${c} bench/guidellm
          python3 decode_load.py --base http://127.0.0.1:${PORT} --model cb --requests $(( ${c} * 6 )) --concurrency ${c} --max-tokens 100 --prompt-words 64 --tolerate-errors --save-result bench/c${c}.json --aiperf-dir bench/aiperf-c${c} --guidellm-file bench/guidellm/c${c}.json
  - id: as-aiperf
    title: the same runs, read from AIPerf's export
    needs: [decode]
    gpus: none
    sweep: {c: [4, 8, 16, 24, 32]}
    artifacts: ['aiperf/*/*']
    steps:
      - results: {format: aiperf}
        run: |
          mkdir -p aiperf/c${c} && cp bench/aiperf-c${c}/* aiperf/c${c}/
  - id: as-guidellm
    title: the same runs, read from GuideLLM's export
    needs: [decode]
    gpus: none
    sweep: {c: [4, 8, 16, 24, 32]}
    artifacts: ['guidellm/*.json']
    steps:
      - results: {format: guidellm}
        run: |
          mkdir -p guidellm && cp bench/guidellm/c${c}.json guidellm/c${c}.json
YAML
cd "$W" && "$ROOT/greenlight" run --plain --gpu "${GPU:-nvml}" proven.yaml > "$OUT/run.txt" 2>&1
echo "exit $?" >> "$OUT/run.txt"
python3 "$ROOT/scripts/load-check.py" "$W" > "$OUT/load-check.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt" 2>&1
tar czf "$OUT/all.tgz" proven.md proven.json proven.*.csv proven.*.svg proven.yaml bench .greenlight/proven/journal.jsonl .greenlight/proven/metrics 2>/dev/null
