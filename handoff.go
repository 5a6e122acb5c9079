package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/greenlight-run/greenlight/runner"
)

// The campaign goes on when its window closes. Until the runner lives in
// a process of its own with the window as a client (DESIGN.md), the
// window that leaves hands the campaign to a background monitor: the same
// binary, `run --plain --headless`, in a session of its own with its lines
// going to STATE/monitor.log. It resumes from the journal as a re-attach
// does (finished phases kept, live steps and services re-adopted, nothing
// run twice) and drives the queue on: later phases start on time, gates
// wait. The next `greenlight run` of the campaign takes it back: it asks
// the background monitor to leave (SIGTERM), waits for the lock, and
// re-attaches.

const headlessFlag = "--headless"

// handOff starts the background monitor for a campaign this process has
// let go of, and says where it is. It returns its pid. approveAll opens
// every gate (the demo's, which nobody is left to greenlight).
func handOff(campaign string, f *runFlags, stateDir string, approveAll bool, out io.Writer) (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	args := []string{"run", "--plain", headlessFlag, "--state-dir", stateDir, "--interval", f.interval.String()}
	for _, g := range f.gpu {
		args = append(args, "--gpu", g)
	}
	if f.report != "" {
		args = append(args, "--report", f.report)
	}
	if approveAll {
		args = append(args, "--approve", "all")
	}
	args = append(args, campaign)
	logPath := filepath.Join(stateDir, "monitor.log")
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	cmd.Process.Release()
	fmt.Fprintf(out, "greenlight: the campaign goes on in the background (pid %d, its lines in %s); `greenlight run %s` takes it back\n",
		pid, logPath, campaign)
	return pid, nil
}

// takeOver asks a background monitor that holds the campaign's lock to
// leave, and waits until it has. It reports whether the lock is free now;
// false when the holder is a window (or another person's monitor).
func takeOver(stateDir string, out io.Writer) bool {
	pid, held := runner.LockHolder(stateDir)
	if !held || !isHeadless(pid) {
		return false
	}
	fmt.Fprintf(out, "greenlight: taking the campaign back from the background monitor (pid %d)\n", pid)
	if syscall.Kill(pid, syscall.SIGTERM) != nil {
		return false
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// isHeadless reports whether pid is a background monitor of ours (checked
// by its command line, never by the pid alone: pids are reused).
func isHeadless(pid int) bool {
	if pid <= 1 {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(cmdline), headlessFlag)
}
