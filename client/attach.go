// Package client is the one way to reach a campaign's runner (package
// daemon): finding it, or starting it, and the session that a window or
// the plain printer watches it through. A Session implements what the
// window asks of a runner (tui.Controller) and of a sampler (tui.GPUs);
// the window never learns it is a socket.
package client

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/greenlight-run/greenlight/report/mdfile"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/link"
	"github.com/greenlight-run/greenlight/runner/state"
)

// runnerStart is how long a new runner may take to open its socket (NVML
// on eight GPUs and a first dcgm scrape take seconds, not minutes).
const runnerStart = 2 * time.Minute

// runnerKilled is a runner's exit status when a signal ended it.
const runnerKilled = -1

// RunnerLog is the runner's own lines, in its state dir.
func RunnerLog(stateDir string) string { return state.Layout(stateDir).RunnerLog() }

// Attach connects to the campaign's runner (cfg.StateDir), starting one
// with cfg when none runs (it resumes from the journal). started says
// whether it was started here. On failure it has said why on stderr and
// returns the exit status.
func Attach(plan *campaign.Plan, cfg *link.Config, stdout, stderr io.Writer) (c *link.Client, started bool, code int) {
	stateDir := cfg.StateDir
	for try := 0; try < 3; try++ {
		c, err := link.Dial(stateDir)
		if err == nil && !endingAfterStop(c) {
			return c, started, state.ExitOK
		}
		if err == nil {
			// Stopped a moment ago and on its way out: attaching would only
			// see it end (exit 130). Its end is waited for, then a new
			// runner resumes the campaign.
			pid := c.PID()
			c.Close()
			fmt.Fprintf(stderr, "greenlight: the campaign's last runner (pid %d) is ending after a stop: waiting for it, then resuming\n", pid)
			for end := time.Now().Add(30 * time.Second); time.Now().Before(end) && syscall.Kill(pid, 0) == nil; {
				time.Sleep(50 * time.Millisecond)
			}
			continue
		}
		var refused *link.RefusedError
		if errors.As(err, &refused) {
			fmt.Fprintf(stderr, "greenlight: %s\n", refused.Why)
			return nil, false, state.ExitLocked
		}
		if !errors.Is(err, link.ErrNoRunner) {
			fmt.Fprintf(stderr, "greenlight: %v\n", err)
			return nil, false, state.ExitFailed
		}
		// One runner per results file: another state dir's runner writing
		// it is said before anything is made here (the runner checks again).
		if who := heldBy(plan, cfg); who != "" {
			fmt.Fprintf(stderr, "greenlight: %s is written by another runner (%s): one runner per results file; `greenlight stop` that campaign, or give this one another --report\n", reportOf(plan, cfg), who)
			return nil, false, state.ExitLocked
		}
		// Clients that find no runner at the same moment (two `run`, one
		// through a symlinked folder) take turns to start one: the second
		// finds the first's runner, and only one runner process starts.
		unlock := startTurn(stateDir)
		if c, err := link.Dial(stateDir); err == nil && !endingAfterStop(c) {
			unlock()
			return c, started, state.ExitOK
		} else if err == nil {
			c.Close()
		}
		c, done, code := attachOrStart(plan, cfg, stdout, stderr)
		unlock()
		if done {
			return c, c != nil && code == startedHere, exitOf(code)
		}
	}
	fmt.Fprintf(stderr, "greenlight: could not attach to this campaign's runner (%s); see %s\n", stateDir, RunnerLog(stateDir))
	return nil, false, state.ExitFailed
}

// reportOf is the results file a runner of cfg writes.
func reportOf(plan *campaign.Plan, cfg *link.Config) string {
	if cfg.Report != "" {
		return cfg.Report
	}
	return plan.Report
}

// heldBy is the runner of another state dir that writes the results file
// (heldAfterEnd), "" when none.
func heldBy(plan *campaign.Plan, cfg *link.Config) string {
	return heldAfterEnd(reportOf(plan, cfg), cfg.StateDir)
}

// startedHere is attachOrStart's word for a runner it started.
const startedHere = -4

func exitOf(code int) int {
	if code == startedHere {
		return state.ExitOK
	}
	return code
}

// startTurn takes the state dir's start lock (start.lock), waiting for
// another client's turn to end (up to runnerStart); it returns its
// release. Without the lock file, each goes on alone (the runners' own
// lock still lets one run).
func startTurn(stateDir string) func() {
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return func() {}
	}
	f, err := os.OpenFile(filepath.Join(stateDir, "start.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return func() {}
	}
	for end := time.Now().Add(runnerStart); syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil; {
		if time.Now().After(end) {
			f.Close()
			return func() {}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return func() { f.Close() }
}

// attachOrStart attaches to a runner starting up, or starts one; done is
// false where the caller should look again (another client's runner won
// the campaign's lock, or the one started here was killed before it
// answered).
func attachOrStart(plan *campaign.Plan, cfg *link.Config, stdout, stderr io.Writer) (c *link.Client, done bool, code int) {
	stateDir := cfg.StateDir
	{
		if pid, held := state.LockHolder(stateDir); held {
			// A runner starting up, or a greenlight from before runners.
			if c := waitSocket(stateDir, pid, 10*time.Second, nil); c != nil {
				return c, true, state.ExitOK
			}
			if syscall.Kill(pid, 0) != nil {
				return nil, false, 0 // it died meanwhile (killed as we looked): start a new one
			}
			fmt.Fprintf(stderr, "greenlight: pid %d holds this campaign (%s) but does not answer on its socket: an older greenlight's window? Quit it there, or wait for it\n",
				pid, stateDir)
			return nil, true, state.ExitLocked
		}
		c, code := startRunner(plan, cfg, stdout, stderr)
		if c != nil {
			return c, true, startedHere
		}
		if code != state.ExitLocked && code != runnerKilled {
			return nil, true, code
		}
		// Another client started one at the same moment: attach to it; or
		// the one we started was killed before we attached: start another.
		return nil, false, 0
	}
}

// endingAfterStop says the runner c reached has stopped the campaign
// and is ending.
func endingAfterStop(c *link.Client) bool {
	st := c.First.State
	return st != nil && st.Finished && st.Stopped()
}

// heldAfterEnd is the runner that holds the results file, "" when none.
// One of this same state dir, found when no runner of it answered, is
// the campaign's last runner on its way out (a run started again the
// moment the last one ended): it is given ten seconds to let go.
func heldAfterEnd(report, stateDir string) string {
	who := mdfile.ResultsHolder(report)
	if who == "" || !sameStateDir(who, stateDir) {
		return who
	}
	// This state dir's own runner: one ending after a stop (its lock is
	// let go), or one another client just started (its socket answers;
	// the start's turn then finds it).
	for end := time.Now().Add(10 * time.Second); who != "" && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
		if c, err := link.Dial(stateDir); err == nil {
			ending := endingAfterStop(c)
			c.Close()
			if !ending {
				return ""
			}
		}
		who = mdfile.ResultsHolder(report)
	}
	return who
}

// sameStateDir says the holder's words ("pid N, state dir D") name this
// state dir, whatever path leads to it (a symlinked campaign folder).
func sameStateDir(who, stateDir string) bool {
	i := strings.LastIndex(who, "state dir ")
	if i < 0 {
		return false
	}
	theirs := strings.TrimSpace(who[i+len("state dir "):])
	if abs, err := filepath.Abs(stateDir); theirs == stateDir || err == nil && theirs == abs {
		return true
	}
	a, err1 := os.Stat(theirs)
	b, err2 := os.Stat(stateDir)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// startRunner starts `greenlight __runner` for the campaign in a session
// of its own and waits for its socket. A runner that exits first (bad
// input, preflight) has its lines copied to stderr and its status
// returned.
func startRunner(plan *campaign.Plan, cfg *link.Config, stdout, stderr io.Writer) (*link.Client, int) {
	stateDir := cfg.StateDir
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "greenlight: %v\n", err)
		return nil, state.ExitFailed
	}
	cfg.Reuse(stdout)
	if cfg.Report != "" {
		plan.Report = cfg.Report
	}
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		fmt.Fprintf(stderr, "greenlight: cannot create the state dir: %v\n", err)
		return nil, state.ExitFailed
	}
	cfg.File = plan.File
	args := append([]string{link.Command}, cfg.Args()...)
	logPath := RunnerLog(stateDir)
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight: %v\n", err)
		return nil, state.ExitFailed
	}
	defer logf.Close()
	from, _ := logf.Seek(0, io.SeekEnd)
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "greenlight: cannot start the campaign's runner: %v\n", err)
		return nil, state.ExitFailed
	}
	exited := make(chan int, 1)
	go func() {
		cmd.Wait()
		exited <- cmd.ProcessState.ExitCode()
	}()
	c := waitSocket(stateDir, cmd.Process.Pid, runnerStart, exited)
	if c != nil {
		return c, state.ExitOK
	}
	code := state.ExitFailed
	select {
	case code = <-exited:
	default:
		fmt.Fprintf(stderr, "greenlight: the campaign's runner (pid %d) did not open its socket within %v; its lines are in %s\n", cmd.Process.Pid, runnerStart, logPath)
		return nil, state.ExitFailed
	}
	if code == runnerKilled {
		return nil, code // killed before we attached: the caller starts another
	}
	if code != state.ExitLocked {
		if b, err := os.ReadFile(logPath); err == nil && int64(len(b)) > from {
			stderr.Write(b[from:])
		}
		if code == state.ExitOK || code == state.ExitInterrupted {
			code = state.ExitFailed // it ended without a word to us: not a success
		}
	}
	return nil, code
}

// waitSocket dials until pid's socket answers, pid exits (exited, or the
// pid gone when exited is nil), or wait has passed.
func waitSocket(stateDir string, pid int, wait time.Duration, exited chan int) *link.Client {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if c, err := link.Dial(stateDir); err == nil {
			return c
		}
		if exited != nil {
			select {
			case code := <-exited:
				exited <- code
				return nil
			default:
			}
		} else if syscall.Kill(pid, 0) != nil {
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return nil
}
