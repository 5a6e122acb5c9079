package supervise

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/testutil"
)

// TestKillCgroupAfterTheSupervisorDied: a step's supervisor killed -9
// leaves its tree running in the step's cgroup (a setsid daemon, a
// double fork, one deaf to SIGTERM, and one that cleared its environment,
// which no mark finds): KillCgroup ends them all at once, says how many,
// and removes the cgroup.
func TestKillCgroupAfterTheSupervisorDied(t *testing.T) {
	cg := campaignCgroup(t)
	script := escapees + `
env -i /bin/sh -c 'echo $$ >> pids; exec sleep 300' &
while [ "$(wc -l < pids)" -lt 5 ]; do sleep 0.02; done
sleep 300
`
	cmd, dir, status := supervised(t, script, "--cgroup", filepath.Join(cg, "step"))
	var st *Status
	testutil.Eventually(t, 10*time.Second, "the step's five processes and its cgroup in its status", func() bool {
		st, _ = ReadStatus(status)
		return len(pidsIn(t, dir)) >= 5 && st != nil && st.Cgroup != ""
	})
	syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	for _, pid := range pidsIn(t, dir) {
		if !live(pid) {
			t.Fatalf("pid %d ended with its supervisor: nothing left to test", pid)
		}
	}
	n := KillCgroup(st.Cgroup, 2*time.Second)
	if n < 5 {
		t.Errorf("KillCgroup says %d processes; want the 5 (and more) left", n)
	}
	checkNoneLeft(t, dir, 5)
	if _, err := os.Stat(st.Cgroup); err == nil {
		t.Errorf("the step's cgroup %s is still there", st.Cgroup)
	}
}

// TestStaleCgroupsRemoved: a campaign's cgroup with no live process in
// it (its runner killed before its end) is removed at a runner's start;
// one with a live process stays; a step of a campaign whose empty cgroup
// was removed makes it again.
func TestStaleCgroupsRemoved(t *testing.T) {
	stale, busy := campaignCgroup(t), campaignCgroup(t)
	if err := os.Mkdir(filepath.Join(stale, "p.a1-s1-t1"), 0o755); err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command("sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Process.Kill()
	step := filepath.Join(busy, "q.a1-s1-t1")
	os.Mkdir(step, 0o755)
	if err := os.WriteFile(filepath.Join(step, "cgroup.procs"), []byte(strconv.Itoa(sleeper.Process.Pid)), 0o644); err != nil {
		t.Fatalf("cannot move a process into %s: %v", step, err)
	}
	t.Cleanup(func() { KillCgroup(step, 2*time.Second) })
	if n := RemoveStaleCgroups(); n < 1 {
		t.Errorf("RemoveStaleCgroups removed %d; want the stale one", n)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Errorf("the stale cgroup %s is still there", stale)
	}
	if _, err := os.Stat(step); err != nil {
		t.Errorf("a cgroup with a live process was removed: %v", err)
	}
	c, err := newStepCgroup(stale, "p.a2-s1-t1")
	if err != nil {
		t.Fatalf("a step of the campaign whose cgroup was removed: %v", err)
	}
	c.remove()
}
