#!/usr/bin/env bash
# On an NVIDIA machine, with ./greenlight built by scripts/build beside it:
# each step's energy and clock as greenlight journals them, held against
# independent measurements of the same spans.
#   - energy: the GPU's own counter (NVML, through nvidia-ml-py) read by the
#     step itself as its first and last act;
#   - clock: nvidia-smi's SM clock every 100 ms over the step's busy span;
#   - "of the roof at that clock": ncu's tensor-pipe and SM throughput for a
#     compute-bound GEMM, its DRAM throughput for a memory-bound one.
# Everything lands in $OUT; scripts/energy-check.py prints the comparison.
set -u
OUT=${OUT:-/tmp/greenlight-energy}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
BIN=$PWD/greenlight
SCRIPTS=$PWD/scripts
W=$(mktemp -d)
cp examples/scripts/gemm_roof.py "$W/"
cat > "$W/gemm_energy.py" <<'PY'
import json, os, sys, time
import pynvml
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
e0, t0 = pynvml.nvmlDeviceGetTotalEnergyConsumption(h), time.time()
import torch
n, secs = int(sys.argv[1]), float(sys.argv[2])
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
k, start = 0, time.time()
while time.time() - start < secs:
    for _ in range(20):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    k += 20
el = time.time() - start
t1, e1 = time.time(), pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
row = {"n": n, "self_j": (e1 - e0) / 1000.0, "t0": t0, "t1": t1, "tflops": 2 * n**3 * k / el / 1e12}
with open(os.environ["GREENLIGHT_RESULTS"], "a") as f:
    f.write(json.dumps(row) + "\n")
PY
cat > "$W/counter.py" <<'PY'
# The GPU's energy counter (mJ) and the time, read as a step's first and
# last command: the reference spans the step's own processes whole.
import time, pynvml
pynvml.nvmlInit()
print(pynvml.nvmlDeviceGetTotalEnergyConsumption(pynvml.nvmlDeviceGetHandleByIndex(0)), time.time())
PY
cat > "$W/samples.py" <<'PY'
# What the driver's own samples look like here: their count, timestamps
# against the clock, values.
import time, pynvml
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
for name, kind in (("clock", pynvml.NVML_PROCESSOR_CLK_SAMPLES), ("util", pynvml.NVML_GPU_UTILIZATION_SAMPLES)):
    try:
        vt, ss = pynvml.nvmlDeviceGetSamples(h, kind, 0)
        ts = [s.timeStamp for s in ss]
        print(name, "type", vt, "n", len(ss), "first", ts[:2], "last", ts[-2:], "now_us", int(time.time() * 1e6),
              "values", [s.sampleValue.uiVal for s in ss[-5:]])
    except pynvml.NVMLError as e:
        print(name, "error", e)
PY
cat > "$W/energy.yaml" <<'YAML'
name: energy
phases:
  - id: gemm
    gpus: [0]
    sweep:
      w:
        - {name: s1, n: 8192, s: 7}
        - {name: s2, n: 4096, s: 6}
        - {name: s3, n: 6144, s: 8}
        - {name: s4, n: 2048, s: 6}
        - {name: s5, n: 8192, s: 6}
        - {name: s6, n: 6144, s: 7}
    steps:
      - run: |
          python3 samples.py >> "$OUT_SAMPLES"
          python3 counter.py > e0
          python3 gemm_energy.py ${w.n} ${w.s}
          python3 counter.py > e1
          echo "{\"shell_j\": $(awk 'NR==FNR{a=$1; next}{print ($1-a)/1000}' e0 e1), \"s0\": $(cut -d' ' -f2 e0), \"s1\": $(cut -d' ' -f2 e1)}" >> "$GREENLIGHT_RESULTS"
  - id: roof
    gpus: [0]
    sweep:
      shape:
        - {name: cube, m: 6144, n: 6144, k: 6144}
        - {name: skinny, m: 16, n: 8192, k: 8192}
    roofline:
      flops: 2*m*n*k
      bytes: 2*(m*k + k*n + m*n)
      seconds: time_ms / 1000
      dtype: bf16
    steps:
      - run: |
          python3 gemm_roof.py ${shape.m} ${shape.n} ${shape.k} --seconds 6
YAML
cd "$W"
nvidia-smi --query-gpu=timestamp,utilization.gpu,clocks.sm,power.draw --format=csv,noheader,nounits -lms 100 > "$OUT/smi.csv" 2>&1 &
SMI=$!
OUT_SAMPLES=$OUT/samples.txt "$BIN" run --plain --gpu nvml --interval 500ms energy.yaml > "$OUT/run.txt" 2>&1
echo "exit $?" >> "$OUT/run.txt"
kill $SMI
cp .greenlight/energy/journal.jsonl "$OUT/journal.jsonl"
cp energy.md energy.json "$OUT/" 2>/dev/null
for shape in "6144 6144 6144" "16 8192 8192"; do
	ncu --clock-control none --target-processes all -k regex:'gemm|sm90|cutlass|nvjet' -c 3 --csv \
		--metrics sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum \
		python3 gemm_roof.py $shape --once
done > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv > "$OUT/machine.txt" 2>&1
python3 "$SCRIPTS/energy-check.py" "$OUT" | tee "$OUT/check.txt"
