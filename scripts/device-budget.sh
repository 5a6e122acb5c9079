#!/usr/bin/env bash
# On an NVIDIA machine, with ./greenlight built by scripts/build beside it:
# the decode budget of a dense model (Llama-3-8B's shapes, random bf16
# weights) on one GPU, for real. A copy measures the box's bandwidth (the
# floor's), a roofline phase times the model's GEMM shapes at each batch as
# a decode step runs them (gemm_roof.py --decode: the GEMMs' term), a
# decode loop runs at batch 1, 8, 32 and 64 (its TPOT from CUDA
# events), and a capture at batch 8 marks ten profiler steps: the record's
# budget splits that row's time into the floor, other GPU work and GPU
# idle. nvidia-smi's memory bandwidth is not read here: the independent
# check is the capture's step (kineto's GPU timeline) against the loop's
# TPOT (CUDA events), and the floor against the bytes over the copy's GB/s
# by hand (budget-check.py). Everything lands in $OUT.
set -u
OUT=${OUT:-/tmp/greenlight-budget}
mkdir -p "$OUT"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d)
mkdir -p "$W/llama"
cp "$ROOT/internal/decodefloor/testdata/llama-3-8b.json" "$W/llama/config.json"
cp "$ROOT/examples/scripts/decode_loop.py" "$ROOT/examples/scripts/gemm_roof.py" "$W/"
cat > "$W/budget.yaml" <<'YAML'
name: budget
gpus: 1
phases:
  - id: serve
    title: the model's shapes on one GPU (the loop stands in for vLLM's engine)
    gpus: none
    service:
      run: |
        echo "decode loop, --tensor-parallel-size 1"; echo up; exec sleep 3600
      ready: {log: up}
      model: llama
  - id: copy
    title: device memory bandwidth (a copy)
    gpus: [0]
    sweep: {size: [1073741824, 4294967296]}
    repeat: 3
    roofline: {flops: 1, bytes: 2*size, seconds: ms/1000, dtype: bf16}
    steps:
      - run: |
          python3 -c "import torch; n=${size}//2; a=torch.empty(n,dtype=torch.bfloat16,device='cuda'); b=torch.empty_like(a); [b.copy_(a) for _ in range(5)]; torch.cuda.synchronize(); s=torch.cuda.Event(enable_timing=True); e=torch.cuda.Event(enable_timing=True); s.record(); [b.copy_(a) for _ in range(50)]; e.record(); e.synchronize(); print('ms=%f' % (s.elapsed_time(e)/50))"
        results: {regex: 'ms=(?P<ms>[0-9.]+)'}
  - id: gemm
    title: the model's GEMMs as a decode step runs them (one GPU's shard, tensor-parallel 1)
    gpus: [0]
    after: [copy]
    sweep:
      m: [1, 8, 32, 64]
      shape:
        - {name: qkv_proj, n: 6144, k: 4096}
        - {name: o_proj, n: 4096, k: 4096}
        - {name: gate_up_proj, n: 28672, k: 4096}
        - {name: down_proj, n: 4096, k: 14336}
        - {name: lm_head, n: 128256, k: 4096}
    roofline:
      flops: 2*m*n*k
      bytes: 2*(m*k + k*n + m*n)
      seconds: time_ms / 1000
      dtype: bf16
    steps:
      - run: |
          python3 gemm_roof.py ${m} ${shape.n} ${shape.k} --seconds 1 --decode
  - id: decode
    needs: [serve]
    after: [gemm]
    gpus: [0]
    sweep: {batch: [1, 8, 32, 64]}
    floor:
      batch: batch
      context: 1024
      tpot: mean_tpot_ms
      bandwidth: copy
    steps:
      - run: |
          python3 decode_loop.py llama/config.json --batch ${batch} --context 1024 --steps 50
  - id: prof
    needs: [serve]
    after: [decode]
    gpus: [0]
    artifacts: ['traces/*.pt.trace.json.gz']
    steps:
      - run: |
          python3 decode_loop.py llama/config.json --batch 8 --context 1024 --steps 50 --trace traces
YAML
cd "$W" && "$ROOT/greenlight" run --plain --gpu nvml budget.yaml > "$OUT/run.txt" 2>&1
echo "exit $?" >> "$OUT/run.txt"
cp budget.md budget.json budget.*.svg budget.yaml "$OUT/" 2>/dev/null
ls traces > "$OUT/traces.txt" 2>&1
cp traces/*.pt.trace.json.gz "$OUT/" 2>/dev/null
python3 "$ROOT/scripts/budget-gemm-check.py" "$OUT" 8 > "$OUT/gemm-check.txt" 2>&1
nvidia-smi --query-gpu=name,memory.total,clocks.max.mem,driver_version --format=csv > "$OUT/machine.txt" 2>&1
