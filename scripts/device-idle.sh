#!/usr/bin/env bash
# On an NVIDIA machine: the idle cost of greenlight's runner and window
# against nvtop's, side by side over the same seconds: a campaign whose
# step sleeps, NVML at 1 Hz, a window at 200x60 in tmux, and nvtop in a
# second tmux session. ROUNDS rounds of SECS seconds; the runner's CPU
# profile (GREENLIGHT_RUNNER_CPUPROFILE) of the last round. Shares are of
# one core: (utime+stime)/CLK_TCK/seconds.
#   BIN=./greenlight NVTOP=/path/to/nvtop OUT=/tmp/idle scripts/device-idle.sh [SECS] [ROUNDS]
set -u
secs=${1:-60}
rounds=${2:-2}
OUT=${OUT:-/tmp/greenlight-idle}
BIN=$(realpath "${BIN:-./greenlight}")
NVTOP=${NVTOP:-nvtop}
mkdir -p "$OUT"
export LANG=C.UTF-8 TERM=xterm-256color
hz=$(getconf CLK_TCK)
cpu() { awk '{print $14+$15}' /proc/"$1"/stat 2>/dev/null || echo 0; }
R=$OUT/idle.txt
{ nvidia-smi -L; nproc; } > "$R" 2>&1
for round in $(seq 1 "$rounds"); do
	work=$(mktemp -d)
	printf "name: idle\nphases:\n  - id: long\n    steps:\n      - run: |\n          sleep 3600\n        estimate: 1h\n" > "$work/c.yaml"
	# The profiler's own SIGPROF costs CPU: only the last round is profiled.
	if [ "$round" = "$rounds" ]; then export GREENLIGHT_RUNNER_CPUPROFILE=$OUT/runner.pprof; fi
	tmux new-session -d -s gl$round -x 200 -y 60 -c "$work" "$BIN run --gpu nvml c.yaml"
	tmux new-session -d -s nv$round -x 200 -y 60 "$NVTOP -d 10"
	sleep 8
	runner=$(pgrep -f "__runner.*$work" | head -1)
	window=$(tmux list-panes -t gl$round -F '#{pane_pid}')
	nv=$(pgrep -x nvtop | head -1)
	r0=$(cpu "$runner"); w0=$(cpu "$window"); n0=$(cpu "$nv"); t0=$(date +%s.%N)
	sleep "$secs"
	r1=$(cpu "$runner"); w1=$(cpu "$window"); n1=$(cpu "$nv"); t1=$(date +%s.%N)
	awk -v r=$((r1-r0)) -v w=$((w1-w0)) -v n=$((n1-n0)) -v t0="$t0" -v t1="$t1" -v hz="$hz" -v round="$round" -v prof="${GREENLIGHT_RUNNER_CPUPROFILE:+1}" 'BEGIN {
		s = t1 - t0; printf "round %d%s over %.0f s: runner %.3f%%  window %.3f%%  nvtop %.3f%%  runner/nvtop %.2f\n",
			round, (prof ? " (profiled)" : ""), s, 100*r/hz/s, 100*w/hz/s, 100*n/hz/s, (n > 0 ? r/n : 0) }' | tee -a "$R"
	(cd "$work" && "$BIN" stop c.yaml >/dev/null 2>&1)
	sleep 3
	tmux kill-session -t gl$round 2>/dev/null
	tmux kill-session -t nv$round 2>/dev/null
	unset GREENLIGHT_RUNNER_CPUPROFILE
done
go_tool=$(command -v go || true)
[ -n "$go_tool" ] && go tool pprof -top "$BIN" "$OUT/runner.pprof" > "$OUT/pprof-top.txt" 2>&1
echo "done; $R"
