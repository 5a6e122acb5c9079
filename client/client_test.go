package client

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/daemon"
	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/link"
	"github.com/greenlight-run/greenlight/runner/state"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

// TestMain lets the test binary be the runner process and the step
// supervisor, as greenlight is: a client test starts real runners
// without building greenlight.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case supervise.Command:
			os.Exit(supervise.Main(os.Args[2:]))
		case link.Command:
			os.Exit(daemon.Main("test", os.Args[2:], os.Stdout, os.Stderr))
		}
	}
	os.Exit(m.Run())
}

func load(t *testing.T, dir, body string) *campaign.Plan {
	t.Helper()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := campaign.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSessionWatchesAndControls: Attach starts the campaign's runner; a
// second Attach finds it (not started again); the session's controls
// reach it (a gate opened by Approve, a pause seen in the state); its
// events end with the campaign's end, and its GPU side mirrors the
// runner's fleet.
func TestSessionWatchesAndControls(t *testing.T) {
	dir := t.TempDir()
	plan := load(t, dir, `name: cl
phases:
  - id: a
    steps:
      - run: |
          while [ ! -e go ]; do sleep 0.05; done
  - id: b
    needs: [a]
    gate: manual
    steps:
      - run: |
          echo '{"x": 1}' >> "$GREENLIGHT_RESULTS"
`)
	cfg := &link.Config{StateDir: filepath.Join(dir, ".greenlight", "cl"), GPU: []string{"fake:3"}, Interval: 200 * time.Millisecond}
	c, started, code := Attach(plan, cfg, io.Discard, io.Discard)
	if c == nil || !started {
		t.Fatalf("Attach = %v started %v, exit %d; see %s", c, started, code, RunnerLog(cfg.StateDir))
	}
	t.Cleanup(func() { c.Close() })
	c2, started2, _ := Attach(plan, cfg, io.Discard, io.Discard)
	if c2 == nil || started2 || c2.PID() != c.PID() {
		t.Fatalf("second Attach: %v started %v; want the same runner", c2, started2)
	}
	c2.Close()
	s := NewSession(runner.Journal{}, plan, cfg, c, io.Discard)
	go s.Run()
	if n := len(s.Inventory().Devices); n != 3 {
		t.Errorf("the session's fleet has %d GPUs; the runner's has 3", n)
	}
	if err := s.Approve([]string{"b"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	var last *runner.State
	next := func(what string, cond func(*runner.State) bool) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case e, ok := <-s.Events():
				if !ok {
					t.Fatalf("events ended before %s", what)
				}
				last = e.State
				if last != nil && cond(last) {
					return
				}
			case <-timeout:
				t.Fatalf("no %s", what)
			}
		}
	}
	next("pause", func(st *runner.State) bool { return st.Paused })
	if s.Resume() != nil {
		t.Fatal("resume")
	}
	next("resume", func(st *runner.State) bool { return !st.Paused })
	os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
	next("the campaign's end", func(st *runner.State) bool { return st.Finished })
	if last.Headline() != runner.HeadFinished || last.Phase("b").Status != runner.Done {
		t.Errorf("end: %s, b %s", last.Headline(), last.Phase("b").Status)
	}
	for range s.Events() {
	}
	testutil.Eventually(t, 40*time.Second, "the runner's end", func() bool { _, held := state.LockHolder(cfg.StateDir); return !held })
	// The window's chart asks for a phase's rows after the runner has
	// gone: they come from the state dir, as report reads them.
	if steps, err := s.PhaseRows("b"); err != nil || len(steps) != 1 || len(steps[0].Results) != 1 {
		t.Errorf("PhaseRows after the runner's end: %v, %v; want b's one row from the state dir", steps, err)
	}
}

// TestReachRefusesWhatNeverRan: a verb on a campaign that never ran
// here is bad input, said with how to start it; on one that finished,
// it is said finished; LiveState without a runner is nothing.
func TestReachRefusesWhatNeverRan(t *testing.T) {
	dir := t.TempDir()
	plan := load(t, dir, "name: nr\nphases:\n  - id: a\n    steps:\n      - run: |\n          true\n")
	state := filepath.Join(dir, ".greenlight", "nr")
	var errw bytes.Buffer
	if c, code := Reach(runner.Journal{}, "pause", plan, state, io.Discard, &errw); c != nil || code != runner.ExitUsage || !strings.Contains(errw.String(), "has not run here") {
		t.Errorf("Reach on a campaign never run: %v %d %q", c, code, errw.String())
	}
	if st, pid, err := LiveState(state); st != nil || pid != 0 || err != nil {
		t.Errorf("LiveState with no runner = %v %d %v", st, pid, err)
	}
	if HasJournal(state) {
		t.Error("HasJournal on nothing")
	}
}
