package supervise

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
	"time"
)

// EnvState is the variable every step's process has in its environment,
// naming its campaign's state dir: a process started by a step keeps it
// wherever it goes (setsid, a double fork, adopted by init), so it is
// known for the campaign's after its step, or its supervisor, is gone.
const EnvState = "GREENLIGHT_STATE"

// Owner is a way to know the campaign's processes: for a pid, the phase
// whose step started it (its GREENLIGHT_PHASE), when its environment
// names this state dir; "" for any other process, or one whose
// environment cannot be read (another user's).
func Owner(stateDir string) func(pid int) string {
	want := []byte(EnvState + "=" + stateDir + "\x00")
	return func(pid int) string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(append([]byte{0}, b...), append([]byte{0}, want...)) {
			return ""
		}
		phase := "" // the last one: the step's own, after any it inherited
		for _, kv := range bytes.Split(b, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("GREENLIGHT_PHASE=")); ok {
				phase = string(v)
			}
		}
		return phase
	}
}

// StopLeft stops a process a step of the campaign at stateDir left
// running (SIGINT, SIGTERM, SIGKILL, grace apart), after making sure it
// is still that campaign's: a pid used again is left alone.
func StopLeft(pid int, stateDir string, grace time.Duration) {
	start := procStart(pid)
	if start == 0 || Owner(stateDir)(pid) == "" {
		return
	}
	StopKept([]Kept{{PID: pid, Start: start, Name: procName(pid)}}, grace)
}

// StopMarked stops every process whose environment holds mark (a step's
// own GREENLIGHT_RESULTS=PATH: each step's is its folder's), as what is
// left of a step whose supervisor died: it kept the mark wherever it went
// (setsid, a double fork), and nothing else has it. It returns what it
// stopped ("pid 1480 python3"), SIGINT, SIGTERM then SIGKILL, grace apart.
func StopMarked(mark string, grace time.Duration) []string {
	want := append([]byte{0}, append([]byte(mark), 0)...)
	procs, _ := os.ReadDir("/proc")
	var kept []Kept
	self := os.Getpid()
	for _, p := range procs {
		var pid int
		if _, err := fmt.Sscanf(p.Name(), "%d", &pid); err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(append([]byte{0}, b...), want) {
			continue
		}
		if start := procStart(pid); start != 0 {
			kept = append(kept, Kept{PID: pid, Start: start, Name: procName(pid)})
		}
	}
	var out []string
	for _, k := range StopKept(kept, grace) {
		out = append(out, fmt.Sprintf("pid %d %s", k.PID, k.Name))
	}
	return out
}

// StopSupervisorOf stops the supervisor started for the status file at
// path (its command line holds "--status PATH"), with SIGKILL: a try
// whose runner died as it started it, before the supervisor wrote its
// status, must not start its command after the next try has started.
// It returns the pids it stopped.
func StopSupervisorOf(path string) []int {
	want := []byte("\x00--status\x00" + path + "\x00")
	procs, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var out []int
	for _, p := range procs {
		var pid int
		if _, err := fmt.Sscanf(p.Name(), "%d", &pid); err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !bytes.Contains(append([]byte{0}, b...), want) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			out = append(out, pid)
		}
	}
	return out
}
