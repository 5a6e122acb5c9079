#!/usr/bin/env bash
# On an NVIDIA machine with no Slurm (the H200 device): a single-node Slurm
# cluster from .slurmkit (scripts/slurm-kit makes it here), its GPU as
# GRES, and greenlight (./greenlight, scripts/build) running bf16 GEMM
# phases here and as Slurm jobs, interleaved:
#   1. TFLOP/s of a 20 s 8192^3 GEMM run here and as a Slurm job (Slurm
#      sets CUDA_VISIBLE_DEVICES from the GRES), twice each;
#   2. the window at 200x60 and `status --json` while a job runs;
#   3. freeze (scontrol suspend) of the GPU job and thaw;
#   4. the runner killed (-9) mid-job and `greenlight run --plain`
#      re-adopting it: one job, its result recorded.
# Everything lands in $OUT (default /tmp/greenlight-slurm).
set -u
OUT=${OUT:-/tmp/greenlight-slurm}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
KIT=$PWD/.slurmkit
BIN=$PWD/greenlight
R=$OUT/report.txt
export LANG=C.UTF-8 TERM=xterm-256color
# The kit's libraries system-wide: slurmd starts slurmstepd, which starts
# the job, each with an environment of its own.
# Only the libraries this machine lacks: the kit's older ones must not
# shadow the system's (tmux needs this machine's libtinfo).
libs=$(mktemp -d)
for l in "$KIT"/lib/*; do
	ldconfig -p | grep -q "^[[:space:]]*$(basename "$l") " || cp "$l" "$libs/"
done
echo "$libs" > /etc/ld.so.conf.d/slurmkit.conf && echo "$KIT/plugins" >> /etc/ld.so.conf.d/slurmkit.conf && ldconfig
mkdir -p /usr/lib/x86_64-linux-gnu/slurm-wlm && cp --update=none "$KIT"/plugins/libslurmfull.so /usr/lib/x86_64-linux-gnu/slurm-wlm/ 2>/dev/null
export PATH=$KIT/bin:$KIT/sbin:$PATH
work=$(mktemp -d)
C=$work/cluster
mkdir -p "$C/munge" "$C/state" "$C/spool"
# The daemons go with the script (on the device the machine goes back anyway).
trap 'for p in slurmd slurmctld munge/; do f=$C/${p%/}; [ "$p" = munge/ ] && f=$C/munge/pid || f=$C/$p.pid; kill "$(cat "$f" 2>/dev/null)" 2>/dev/null; done' EXIT
chmod 700 "$C/munge"
head -c 1024 /dev/urandom > "$C/munge/key" && chmod 400 "$C/munge/key"
{ nvidia-smi -L; uname -r; cat /etc/os-release | head -2; echo "kit libraries this machine lacked: $(ls "$libs" | tr '\n' ' ')"; } > "$R" 2>&1
munged -f -S "$C/munge/sock" --key-file="$C/munge/key" --log-file="$C/munge/log" --pid-file="$C/munge/pid" --seed-file="$C/munge/seed" >> "$R" 2>&1
node=$(hostname -s)
# The tests' slurm.conf (runner/slurm/slurmtest), filled in for this machine.
sed -e "s|@CLUSTER@|h200|; s|@NODE@|$node|g; s|@PORT0@|46817|; s|@PORT1@|46818|; s|@SOCK@|$C/munge/sock|" \
	-e "s|@DIR@|$C|g; s|@CPUS@|16|; s|@GPUS@|1|; s|@PART@|h200|; s|@EXTRA@|PluginDir=$KIT/plugins|" \
	runner/slurm/slurmtest/slurm.conf > "$C/slurm.conf"
echo "Name=gpu File=${GRES_FILE:-/dev/nvidia0}" > "$C/gres.conf"
# No cgroups are used (linuxproc, task/none); pinning v1 keeps slurmd from
# wanting systemd and dbus for v2 on a cgroup2 machine.
echo "CgroupPlugin=cgroup/v1" > "$C/cgroup.conf"
export SLURM_CONF=$C/slurm.conf
slurmctld -i >> "$R" 2>&1
slurmd -N "$node" -d "$KIT/sbin/slurmstepd" >> "$R" 2>&1
for i in $(seq 1 60); do [ "$(sinfo -h -o %t 2>/dev/null)" = idle ] && break; sleep 0.5; done
echo "== cluster: $(sinfo -h -o '%P %t %G %N' 2>&1)" >> "$R"
if [ "$(sinfo -h -o %t 2>/dev/null)" != idle ]; then
	tail -n 20 "$C/slurmctld.log" "$C/slurmd.log" >> "$R" 2>&1
	cat "$R"; exit 1
fi

cat > "$work/gemm.py" <<'PY'
import os, sys, time
if os.environ.get("FAKE_GEMM"):  # a dry run of the script where there is no GPU
    time.sleep(float(sys.argv[1]) / 4)
    print('{"tflops": 1.0, "where": "%s"}' % (os.environ.get("SLURM_JOB_ID") and "slurm" or "here")); sys.exit(0)
import torch
secs = float(sys.argv[1])
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
for _ in range(5): a @ b
torch.cuda.synchronize(); t = time.time(); n = 0
while time.time() - t < secs:
    a @ b; n += 1
torch.cuda.synchronize()
print(f'{{"tflops": {2*8192**3*n/(time.time()-t)/1e12:.1f}, "where": "{os.environ.get("SLURM_JOB_ID") and "slurm" or "here"}", "cuda_visible": "{os.environ.get("CUDA_VISIBLE_DEVICES", "")}"}}')
PY
cat > "$work/c.yaml" <<EOF
name: h200-slurm
report: h200-slurm.md
slurm: {partition: h200, gpus_per_node: 1, time: 10m}
phases:
  - id: here1
    slurm: off
    steps:
      - run: |
          python3 $work/gemm.py 20 >> "\$GREENLIGHT_RESULTS"
  - id: job1
    needs: [here1]
    steps:
      - run: |
          echo "on \$SLURMD_NODENAME, job \$SLURM_JOB_ID, CUDA_VISIBLE_DEVICES=\$CUDA_VISIBLE_DEVICES"
          python3 $work/gemm.py 20 >> "\$GREENLIGHT_RESULTS"
  - id: here2
    needs: [job1]
    slurm: off
    steps:
      - run: |
          python3 $work/gemm.py 20 >> "\$GREENLIGHT_RESULTS"
  - id: job2
    needs: [here2]
    steps:
      - run: |
          python3 $work/gemm.py 20 >> "\$GREENLIGHT_RESULTS"
EOF
echo "== 1-2: GEMM here and as Slurm jobs, interleaved; the window while job1 runs" >> "$R"
(cd "$work" && "$BIN" run --detach --gpu nvml c.yaml >> "$R" 2>&1)
tmux new-session -d -s w -x 200 -y 60 "cd $work && $BIN run c.yaml; sleep 600"
for i in $(seq 1 90); do squeue -h -t R 2>/dev/null | grep -q . && break; sleep 1; done
sleep 8
tmux capture-pane -p -t w > "$OUT/screen-200x60-job.txt"
"$BIN" status --json "$work/c.yaml" > "$OUT/status-job.json" 2>&1
squeue -o '%i %j %T %N %b' >> "$R" 2>&1
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv >> "$R" 2>&1
for i in $(seq 1 180); do grep -q "Status:\*\* finished" "$work/h200-slurm.md" 2>/dev/null && break; sleep 1; done
tmux capture-pane -p -t w > "$OUT/screen-200x60-end.txt"
tmux kill-session -t w
cp "$work/h200-slurm.md" "$OUT/"
python3 - "$work/.greenlight/h200-slurm" >> "$R" <<'PY'
import json, glob, os, sys
rows = {}
for f in sorted(glob.glob(sys.argv[1] + "/steps/*/a1-s1-t1/results.jsonl")):
    ph = f.split("/")[-3]
    for line in open(f):
        rows[ph] = json.loads(line)
for ph in ["here1", "job1", "here2", "job2"]:
    print(ph, rows.get(ph))
if all(p in rows for p in ["here1", "job1", "here2", "job2"]):
    print("ratio job/here: %.4f, %.4f" % (rows["job1"]["tflops"] / rows["here1"]["tflops"], rows["job2"]["tflops"] / rows["here2"]["tflops"]))
PY

echo "== 3-4: a 60 s GEMM job frozen (scontrol suspend) and thawed, then its runner killed (-9) and resumed" >> "$R"
cat > "$work/d.yaml" <<EOF
name: h200-slurm-readopt
report: h200-slurm-readopt.md
phases:
  - id: long
    slurm: {partition: h200, gpus_per_node: 1, time: 10m}
    steps:
      - run: |
          echo ran >> $work/ran
          python3 $work/gemm.py 45 >> "\$GREENLIGHT_RESULTS"
EOF
(cd "$work" && "$BIN" run --detach --gpu nvml d.yaml >> "$R" 2>&1)
tmux new-session -d -s f -x 120 -y 40 "cd $work && $BIN run d.yaml; sleep 600"
for i in $(seq 1 90); do squeue -h -t R 2>/dev/null | grep -q . && break; sleep 1; done
sleep 10
tmux send-keys -t f f
sleep 4
echo "after f: $(squeue -h -o '%i %T')" >> "$R"
nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader >> "$R" 2>&1
tmux capture-pane -p -t f > "$OUT/screen-120x40-frozen.txt"
tmux send-keys -t f f
sleep 3
echo "after f again: $(squeue -h -o '%i %T')" >> "$R"
tmux kill-session -t f
runner=$("$BIN" status --json "$work/d.yaml" | python3 -c 'import json,sys; print(json.load(sys.stdin)["monitor"]["pid"])')
kill -9 "$runner"
echo "killed runner $runner; squeue: $(squeue -h -o '%i %T')" >> "$R"
(cd "$work" && timeout 300 "$BIN" run --plain --gpu nvml d.yaml) > "$OUT/rerun.txt" 2>&1
echo "rerun exit $?; the step ran $(wc -l < "$work/ran") time(s); step-job records: $(grep -c step-job "$work/.greenlight/h200-slurm-readopt/journal.jsonl")" >> "$R"
cp "$work/h200-slurm-readopt.md" "$OUT/" 2>/dev/null
tail -n 5 "$C/slurmd.log" >> "$R" 2>/dev/null
cat "$R"
