package demo

// Where the demo lives: one folder of the user's, the last demo's set
// aside beside it, and whether a greenlight still runs it there.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/greenlight-run/greenlight/internal/statedir"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/state"
)

// Dir is the demo's one folder, under the user's XDG state dir.
func Dir() (string, error) {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no home folder for the demo (set XDG_STATE_HOME): %w", err)
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "greenlight", "demo"), nil
}

// SetAside moves the last demo's folder to a dated name beside it;
// "" when there was none.
func SetAside(dir string, now time.Time) (string, error) {
	if _, err := os.Stat(dir); err != nil {
		return "", nil
	}
	old := runner.AsideName(dir, "", now)
	return old, os.Rename(dir, old)
}

// Running reports whether a greenlight still runs the demo there.
func Running(file string) bool {
	if _, err := os.Stat(file); err != nil {
		return false
	}
	plan, err := campaign.Load(file)
	if err != nil {
		return false
	}
	dir, _, err := statedir.Resolve(plan, "")
	if err != nil {
		return false
	}
	if _, held := state.LockHolder(dir); held {
		return true
	}
	// Not locked: a demo left running in the background (steps, the
	// simulated server) is re-adopted by running the same file again.
	return liveSteps(dir)
}

// liveSteps reports whether a step of a state dir still runs.
func liveSteps(stateDir string) bool {
	files, _ := filepath.Glob(runner.Layout(stateDir).StepStatusFiles())
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), `"state":"running"`) {
			var pid int
			if i := strings.Index(string(b), `"supervisor_pid":`); i >= 0 {
				fmt.Sscanf(string(b[i+17:]), "%d", &pid)
			}
			if pid > 0 && syscall.Kill(pid, 0) == nil {
				return true
			}
		}
	}
	return false
}
