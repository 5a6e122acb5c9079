package supervise

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/testutil"
)

// TestStopSupervisorOf: the process whose command line says --status PATH
// (a supervisor on its way for a try its runner died starting) is
// stopped; another status file's is not.
func TestStopSupervisorOf(t *testing.T) {
	dir := t.TempDir()
	mine, other := filepath.Join(dir, "a", "status.json"), filepath.Join(dir, "b", "status.json")
	start := func(path string) *exec.Cmd {
		c := exec.Command("sh", "-c", "sleep 30", "__supervise", "--status", path)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	a, b := start(mine), start(other)
	for _, c := range []*exec.Cmd{a, b} { // exec'd: its command line is there
		testutil.Eventually(t, 5*time.Second, "the command line", func() bool {
			got, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c.Process.Pid))
			return strings.Contains(string(got), "--status")
		})
	}
	got := StopSupervisorOf(mine)
	if !slices.Contains(got, a.Process.Pid) || slices.Contains(got, b.Process.Pid) {
		t.Fatalf("stopped %v; want %d and not %d", got, a.Process.Pid, b.Process.Pid)
	}
	if err := a.Wait(); err == nil {
		t.Error("the supervisor of the try exited cleanly; want it killed")
	}
	if b.ProcessState != nil {
		t.Error("another try's supervisor was stopped")
	}
}
