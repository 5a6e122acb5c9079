package supervise

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/testutil"
)

// TestMain lets the test binary be the supervisor.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == Command {
		os.Exit(Main(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// escapees is a step that leaves behind, each writing its pid to pids: a
// setsid'd process, a double-forked daemon, a process that ignores
// SIGTERM (and SIGINT), and a fork storm of short-lived children.
const escapees = `
setsid sh -c 'echo $$ >> pids; exec sleep 300' &
sh -c 'sh -c "echo \$\$ >> pids; exec sleep 300" &' &
setsid sh -c 'trap "" TERM INT; echo $$ >> pids; while :; do sleep 0.05; done' &
sh -c 'echo $$ >> pids; while :; do (sleep 0.01 &) ; sleep 0.005; done' &
while [ "$(wc -l < pids 2>/dev/null || echo 0)" -lt 4 ]; do sleep 0.02; done
`

func supervised(t *testing.T, script string, flags ...string) (cmd *exec.Cmd, dir, status string) {
	t.Helper()
	dir = t.TempDir()
	status = filepath.Join(dir, "status.json")
	args := append([]string{Command, "--status", status, "--log", filepath.Join(dir, "log"), "--dir", dir, "--grace", "300ms"}, flags...)
	cmd = exec.Command(os.Args[0], append(args, "--", "sh", "-c", script)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, dir, status
}

func pidsIn(t *testing.T, dir string) []int {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(dir, "pids"))
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// live says pid runs (a zombie does not).
func live(pid int) bool {
	state, _, _, ok := procStat(pid)
	return ok && state != 'Z' && state != 'X'
}

func checkNoneLeft(t *testing.T, dir string, want int) {
	t.Helper()
	pids := pidsIn(t, dir)
	if len(pids) < want {
		t.Fatalf("the step wrote %d pids; want %d", len(pids), want)
	}
	for _, pid := range pids {
		if live(pid) {
			t.Errorf("pid %d of the step's tree is still running", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// ways are how a step's tree is held: by the supervisor alone (child
// subreaper and /proc), and in a cgroup of its own where this machine
// lets one be made (skipped, said why, where it does not).
func ways(t *testing.T, each func(t *testing.T, flags ...string)) {
	t.Run("subreaper", func(t *testing.T) { each(t) })
	t.Run("cgroup", func(t *testing.T) {
		cg := campaignCgroup(t)
		each(t, "--cgroup", filepath.Join(cg, "step"))
		if ents, _ := os.ReadDir(cg); len(ents) > 0 && ents[0].IsDir() {
			t.Errorf("the step's cgroup %s was not removed at its end", ents[0].Name())
		}
	})
}

func campaignCgroup(t *testing.T) string {
	t.Helper()
	cg, err := CampaignCgroup(strings.ReplaceAll(t.Name(), "/", "-"), t.TempDir())
	if err != nil {
		t.Skipf("no cgroup v2 can be made here (run as root on a cgroup v2 machine): %v", err)
	}
	t.Cleanup(func() { RemoveCgroups(cg) })
	return cg
}

// TestNothingLeftAtTheEnd: a step whose command exits while its tree
// lives on: every process of the tree is stopped (the one that ignores
// SIGTERM too) and named in the status.
func TestNothingLeftAtTheEnd(t *testing.T) {
	ways(t, func(t *testing.T, flags ...string) {
		cmd, dir, status := supervised(t, escapees, flags...)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("supervisor: %v", err)
		}
		checkNoneLeft(t, dir, 4)
		st, err := ReadStatus(status)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Left) < 4 || !strings.Contains(strings.Join(st.Left, " "), "sleep") {
			t.Errorf("the status names %v; want the 4 left behind", st.Left)
		}
		if len(st.LeftPIDs) < 4 || len(st.LeftPIDs) > maxLeft {
			t.Errorf("the status has pids %v for %d named", st.LeftPIDs, len(st.Left))
		}
	})
}

// TestNothingLeftAfterAStop: a step stopped mid-run (skip, stop: the
// supervisor gets SIGTERM; its timeout): its whole tree ends, escapees
// included.
func TestNothingLeftAfterAStop(t *testing.T) {
	ways(t, func(t *testing.T, flags ...string) {
		cmd, dir, _ := supervised(t, escapees+"sleep 300\n", flags...)
		testutil.Eventually(t, 10*time.Second, "the step's 4 escapees", func() bool { return len(pidsIn(t, dir)) >= 4 })
		cmd.Process.Signal(syscall.SIGTERM)
		waitEnd(t, cmd)
		checkNoneLeft(t, dir, 4)
	})
}

func TestNothingLeftAfterATimeout(t *testing.T) {
	ways(t, func(t *testing.T, flags ...string) {
		cmd, dir, status := supervised(t, escapees+"sleep 300\n", append(flags, "--timeout", "2s")...)
		waitEnd(t, cmd)
		checkNoneLeft(t, dir, 4)
		if st, err := ReadStatus(status); err != nil || !st.TimedOut {
			t.Errorf("status %+v (%v): want timed out", st, err)
		}
	})
}

func waitEnd(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the supervisor did not end after its stop")
	}
}

// TestStepUsage: the status says the CPU time and the peak memory of the
// step's tree, an orphan's included: the cgroup's whole tree, or the
// largest process the supervisor reaped.
func TestStepUsage(t *testing.T) {
	// About 0.3 s of CPU in a setsid'd orphan, and a 64 MiB buffer held.
	const busy = `setsid sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done' &
python3 -c 'b = bytearray(64 << 20); b[::4096] = b"x" * len(b[::4096])' 2>/dev/null || head -c 67108864 /dev/zero | tail -c 1 >/dev/null
wait`
	ways(t, func(t *testing.T, flags ...string) {
		cmd, _, status := supervised(t, busy, flags...)
		waitEnd(t, cmd)
		st, err := ReadStatus(status)
		if err != nil {
			t.Fatal(err)
		}
		if st.CPU < 50*time.Millisecond {
			t.Errorf("CPU %v: the busy orphan's time is missing", st.CPU)
		}
		if st.PeakMem < 32<<20 || st.PeakOf == "" {
			t.Errorf("peak %d bytes (%q): want the 64 MiB buffer", st.PeakMem, st.PeakOf)
		}
		if len(flags) > 0 && st.Cgroup == "" {
			t.Errorf("the step ran in no cgroup")
		}
	})
}

// TestIsSupervisor: a supervisor is known by its command line, whether it
// is greenlight's subcommand or its own binary; nothing else is one.
func TestIsSupervisor(t *testing.T) {
	for cmd, want := range map[string]bool{
		"/usr/bin/greenlight\x00__supervise\x00--status\x00/s\x00": true,
		"/opt/gl/greenlight-supervise\x00--status\x00/s\x00":       true,
		"/usr/bin/greenlight\x00run\x00c.yaml\x00":                 false,
		"sh\x00-c\x00echo __supervise greenlight-supervise\x00":    false,
		"/usr/bin/greenlight-supervise-not\x00--status\x00/s\x00":  false,
	} {
		if got := isSupervisor([]byte(cmd)); got != want {
			t.Errorf("isSupervisor(%q) = %v, want %v", cmd, got, want)
		}
	}
}

// TestInASlurmJobNoCgroup: a supervisor inside a Slurm job makes no
// cgroup of its own (the job's holds the tree and Slurm ends it) and says
// so in the step's log.
func TestInASlurmJobNoCgroup(t *testing.T) {
	cg := campaignCgroup(t)
	dir := t.TempDir()
	status := filepath.Join(dir, "status.json")
	cmd := exec.Command(os.Args[0], Command, "--status", status, "--log", filepath.Join(dir, "log"), "--dir", dir,
		"--cgroup", filepath.Join(cg, "step"), "--", "sh", "-c", "true")
	cmd.Env = append(os.Environ(), "SLURM_JOB_ID=4242")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	st, err := ReadStatus(status)
	if err != nil || st.Cgroup != "" {
		t.Errorf("status %+v (%v): want no cgroup in a Slurm job", st, err)
	}
	if log, _ := os.ReadFile(filepath.Join(dir, "log")); !strings.Contains(string(log), "in Slurm job 4242: its cgroup holds the step's processes") {
		t.Errorf("the log does not say why: %q", log)
	}
}
