package main

// The demo: `greenlight demo` runs the embedded campaign in a fresh folder,
// and greenlight itself plays the vLLM server and its client, printing
// vLLM's real log formats, so the demo needs no GPU, Python or network.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/greenlight-run/greenlight/demo"
	"github.com/greenlight-run/greenlight/internal/statedir"
	"github.com/greenlight-run/greenlight/runner/campaign"

	"github.com/greenlight-run/greenlight/runner"
)

func cmdDemo(args []string, stdout, stderr io.Writer) int {
	dir, err := demoDir()
	if err != nil {
		fmt.Fprintf(stderr, "greenlight demo: %v\n", err)
		return exitFailed
	}
	campaign := filepath.Join(dir, "campaign.yaml")
	if !demoRunning(campaign) {
		// Each demo starts over in the one folder it owns; the last
		// demo's folder is set aside beside it, as --fresh does, never
		// deleted without a word.
		if old, err := setDemoAside(dir, time.Now()); err != nil {
			fmt.Fprintf(stderr, "greenlight demo: setting the last demo aside: %v\n", err)
			return exitFailed
		} else if old != "" {
			fmt.Fprintf(stdout, "greenlight demo: the last demo's campaign and results are set aside in %s\n", old)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintf(stderr, "greenlight demo: %v\n", err)
			return exitFailed
		}
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "greenlight demo: %v\n", err)
			return exitFailed
		}
		port, err := demo.FreePort()
		if err != nil {
			fmt.Fprintf(stderr, "greenlight demo: no free loopback port: %v\n", err)
			return exitFailed
		}
		if err := os.WriteFile(campaign, demo.Campaign(exe, port), 0o644); err != nil {
			fmt.Fprintf(stderr, "greenlight demo: %v\n", err)
			return exitFailed
		}
		fmt.Fprintf(stdout, "greenlight demo: campaign and results in %s\n", dir)
	} else {
		fmt.Fprintf(stdout, "greenlight demo: the demo in %s is still running: attaching to it\n", dir)
	}
	fmt.Fprintf(stdout, "greenlight demo: after q, `greenlight run %s` attaches again\n", campaign)
	hasGPU := false
	for _, a := range args {
		if a == "--gpu" || len(a) > 6 && a[:6] == "--gpu=" {
			hasGPU = true
		}
	}
	if !hasGPU {
		args = append([]string{"--gpu", "fake:8"}, args...)
	}
	return cmdRun(append(args, campaign), stdout, stderr, true)
}

// demoDir is the demo's one folder, under the user's XDG state dir.
func demoDir() (string, error) {
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

// setDemoAside moves the last demo's folder to a dated name beside it;
// "" when there was none.
func setDemoAside(dir string, now time.Time) (string, error) {
	if _, err := os.Stat(dir); err != nil {
		return "", nil
	}
	old := runner.AsideName(dir, "", now)
	return old, os.Rename(dir, old)
}

// demoRunning reports whether a greenlight still runs the demo there.
func demoRunning(file string) bool {
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
	if _, held := runner.LockHolder(dir); held {
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
