package supervise

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestOwner: a process is the campaign's when its environment names the
// campaign's state dir, exactly; its phase is the last GREENLIGHT_PHASE
// (a step's own, after any it inherited). StopLeft stops only such a one.
func TestOwner(t *testing.T) {
	run := func(env ...string) *exec.Cmd {
		c := exec.Command("sleep", "30")
		c.Env = append(os.Environ(), env...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	ours := run("GREENLIGHT_PHASE=outer", EnvState+"=/s/c", "GREENLIGHT_PHASE=leak")
	longer := run(EnvState+"=/s/c2", "GREENLIGHT_PHASE=x")
	none := run()
	owner := Owner("/s/c")
	if got := owner(ours.Process.Pid); got != "leak" {
		t.Errorf("the campaign's process: %q, want leak", got)
	}
	if got := owner(longer.Process.Pid); got != "" {
		t.Errorf("another state dir's process: %q", got)
	}
	if got := owner(none.Process.Pid); got != "" {
		t.Errorf("a stranger: %q", got)
	}
	StopLeft(none.Process.Pid, "/s/c", 100*time.Millisecond)
	StopLeft(ours.Process.Pid, "/s/c", 100*time.Millisecond)
	ours.Wait()
	if !live(none.Process.Pid) {
		t.Errorf("StopLeft stopped a process not of the campaign")
	}
}
