package client

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/link"
	"github.com/greenlight-run/greenlight/runner/state"
)

// HasJournal reports whether the campaign has run here.
func HasJournal(stateDir string) bool {
	_, err := os.Stat(state.Layout(stateDir).Journal())
	return err == nil
}

// Reach is a verb's way to the runner: the running one, or a new one
// when the campaign ran here and is not finished (said on stderr). A
// campaign that never ran, or has finished, has none: code says so.
func Reach(j Journal, name string, plan *campaign.Plan, stateDir string, stdout, stderr io.Writer) (*link.Client, int) {
	c, _, code := ReachFor(j, name, "", "", plan, stateDir, stdout, stderr)
	return c, code
}

// ReachFor is Reach for verb v said for target: a verb whose row says so
// (retry, of a phase or a point) on a finished campaign starts a runner
// that runs it again (and what it needs) and ends; retried says so, and
// the verb is not asked again.
func ReachFor(j Journal, name string, v state.Verb, phase string, plan *campaign.Plan, stateDir string, stdout, stderr io.Writer) (c *link.Client, retried bool, code int) {
	c, err := link.Dial(stateDir)
	if err == nil {
		return c, false, state.ExitOK
	}
	var refused *link.RefusedError
	if errors.As(err, &refused) {
		fmt.Fprintf(stderr, "greenlight %s: %s\n", name, refused.Why)
		return nil, false, state.ExitLocked
	}
	if !errors.Is(err, link.ErrNoRunner) {
		fmt.Fprintf(stderr, "greenlight %s: %v\n", name, err)
		return nil, false, state.ExitFailed
	}
	if !HasJournal(stateDir) {
		fmt.Fprintf(stderr, "greenlight %s: %s has not run here (no journal in %s): `greenlight run %s` starts it\n", name, plan.Name, stateDir, plan.File)
		return nil, false, state.ExitUsage
	}
	cfg := &link.Config{StateDir: stateDir, Interval: time.Second}
	st, err := j.Replay(plan, stateDir)
	switch {
	case err == nil && st.Finished && v.RunsFinished() && phase != "":
		fmt.Fprintf(stderr, "greenlight %s: %s has finished: starting its runner to run %s again (and what it needs); it ends after\n", name, plan.Name, phase)
		cfg.Retry = phase
	case err == nil && st.Finished:
		fmt.Fprintf(stderr, "greenlight %s: %s has finished (%s); nothing runs it now; `greenlight run --fresh %s` starts it over\n",
			name, plan.Name, st.Ended.Format("2006-01-02 15:04:05"), plan.File)
		return nil, false, state.ExitUsage
	default:
		fmt.Fprintf(stderr, "greenlight %s: no runner runs %s: starting one, which resumes it from its journal\n", name, plan.Name)
	}
	c, _, code = Attach(plan, cfg, stdout, stderr)
	return c, cfg.Retry != "" && c != nil, code
}

// LiveState is the runner's own state (results included), when a runner
// answers for the campaign.
// problem is set when a runner holds the campaign but did not answer.
func LiveState(dir string) (st *state.State, pid int, problem error) {
	c, err := link.Dial(dir)
	if err != nil {
		if errors.Is(err, link.ErrNoRunner) {
			return nil, 0, nil
		}
		return nil, 0, err
	}
	defer c.Close()
	m, err := c.Request(link.OpState, "")
	if err != nil {
		return nil, 0, err
	}
	return m.State, c.PID(), nil
}

// TakeIfStopped takes verb v (one a stopped campaign takes: approve,
// skip, a point's skip) said for targets of a campaign that was stopped
// and that no runner runs now: it is journaled, to act when the campaign
// runs again, rather than starting a runner the person did not ask for.
// taken is false when the campaign is not so (a runner runs it, or it
// never ran, or it finished): the verb goes on its usual way.
func TakeIfStopped(j Journal, name string, v state.Verb, targets []string, plan *campaign.Plan, stateDir string, stdout, stderr io.Writer) (taken bool, code int) {
	if !v.TakenStopped() || !HasJournal(stateDir) {
		return false, 0
	}
	if c, err := link.Dial(stateDir); err == nil {
		c.Close()
		return false, 0
	} else if !errors.Is(err, link.ErrNoRunner) {
		return false, 0
	}
	st, err := j.Replay(plan, stateDir)
	if err != nil || !st.Stopped() {
		return false, 0
	}
	for _, p := range st.Phases {
		if !p.Status.Finished() {
			return false, 0 // its runner died mid-phase: a new one resumes it
		}
	}
	for _, target := range targets {
		said, err := j.TakeWhileStopped(plan, stateDir, v, target)
		if err != nil {
			fmt.Fprintf(stderr, "greenlight %s: %v\n", name, err)
			return true, state.ExitUsage
		}
		fmt.Fprintf(stdout, "greenlight: %s (the campaign is stopped; `greenlight run %s` continues it)\n", said, plan.File)
	}
	return true, state.ExitOK
}

// RequestExit is the exit status of a request a runner did not take: bad
// input (2) where the runner refused it (a verb its phase is past, as on
// a stopped campaign), else a failure (1): the runner could not be
// reached or did not answer.
func RequestExit(err error) int {
	if refused := (*link.Refused)(nil); errors.As(err, &refused) {
		return state.ExitUsage
	}
	return state.ExitFailed
}
