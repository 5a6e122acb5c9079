package runner

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/runner/campaign"

	"github.com/greenlight-run/greenlight/runner/supervise"
)

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func testBin(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func lines(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

func TestGPUSetsDisjointOverlapOthersQueue(t *testing.T) {
	t.Parallel()
	p := loadCampaign(t, `
name: gpus
phases:
  - id: a
    gpus: [0]
    steps: [{run: "sleep 0.6"}]
  - id: b
    gpus: [1]
    steps: [{run: "sleep 0.6"}]
  - id: c
    gpus: [1, 2]
    steps: [{run: "sleep 0.2"}]
  - id: all
    steps: [{run: "true"}]
`)
	st := start(t, p, testOptions(t)).finished(20 * time.Second)
	a, b, c, all := st.Phase("a"), st.Phase("b"), st.Phase("c"), st.Phase("all")
	overlap := func(x, y *PhaseState) bool { return x.Started.Before(y.Ended) && y.Started.Before(x.Ended) }
	if !overlap(a, b) {
		t.Errorf("a (GPU 0) and b (GPU 1) did not overlap: a %v-%v, b %v-%v", a.Started, a.Ended, b.Started, b.Ended)
	}
	if overlap(b, c) {
		t.Errorf("b and c share GPU 1 but overlapped")
	}
	for _, x := range []*PhaseState{a, b, c} {
		if overlap(x, all) {
			t.Errorf("%s overlapped the phase that uses every GPU", x.ID)
		}
	}
}

func TestServiceHTTPReadyThenStoppedWhenUnneeded(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	dir := t.TempDir()
	count := filepath.Join(dir, "starts")
	p := loadCampaign(t, fmt.Sprintf(`
name: svc
phases:
  - id: serve
    service:
      run: exec %s __test-http %d %s 300ms
      ready: {http: "http://127.0.0.1:%d/health", log: "startup complete", timeout: 20s}
  - id: use
    needs: [serve]
    steps: [{run: "curl -fsS http://127.0.0.1:%d/health || wget -qO- http://127.0.0.1:%d/health || true"}]
`, testBin(t), port, count, port, port, port))
	h := start(t, p, testOptions(t))
	h.kind(ServiceReady, "serve")
	st := h.finished(30 * time.Second)
	if s := st.Phase("serve"); s.Status != Done {
		t.Errorf("serve = %s %q; want done after it was stopped", s.Status, s.Reason)
	}
	if s := st.Phase("use"); s.Status != Done {
		t.Errorf("use = %s %q", s.Status, s.Reason)
	}
	if _, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond); err == nil {
		t.Error("the service still answers after the campaign finished")
	}
}

func TestServiceThatDiesFailsWithReason(t *testing.T) {
	t.Parallel()
	p := loadCampaign(t, `
name: svc-dies
phases:
  - id: serve
    service:
      run: echo loading; exit 4
      ready: {log: "never"}
  - id: use
    needs: [serve]
    steps: [{run: "true"}]
`)
	st := start(t, p, testOptions(t)).finished(20 * time.Second)
	if s := st.Phase("serve"); s.Status != Failed || !strings.Contains(s.Reason, "code 4") || !strings.Contains(s.Reason, "before it was ready") {
		t.Errorf("serve = %s %q", s.Status, s.Reason)
	}
	if s := st.Phase("use"); s.Status != Blocked {
		t.Errorf("use = %s; want blocked", s.Status)
	}
}

// TestSkipRunningStopsItsGroup: the step's children go too.
func TestSkipRunningStopsItsGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	p := loadCampaign(t, fmt.Sprintf(`
name: skip
phases:
  - id: long
    steps: [{run: "sleep 60 & echo $! > %s; wait"}]
  - id: after
    steps: [{run: "true"}]
`, pidFile))
	h := start(t, p, testOptions(t))
	h.kind(StepStarted, "long")
	testutil.Within(5*time.Second, func() bool { return len(lines(t, pidFile)) > 0 })
	child, _ := strconv.Atoi(strings.TrimSpace(string(must(os.ReadFile(pidFile)))))
	if err := h.r.Skip("long"); err != nil {
		t.Fatal(err)
	}
	st := h.finished(20 * time.Second)
	if s := st.Phase("long"); s.Status != Skipped {
		t.Errorf("long = %s; want skipped", s.Status)
	}
	if s := st.Phase("after"); s.Status != Done {
		t.Errorf("after = %s; want done", s.Status)
	}
	if state, _, ok := supervise.ProcStat(child); ok && state != 'Z' {
		t.Errorf("the step's child %d is still alive (%c) after skip", child, state)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestPauseHoldsQueueAndFreezeStops(t *testing.T) {
	t.Parallel() // waits on its steps, not a CPU: it overlaps Slurm's minute
	dir := t.TempDir()
	tick := filepath.Join(dir, "ticks")
	p := loadCampaign(t, fmt.Sprintf(`
name: pause
phases:
  - id: a
    steps:
      - run: "for i in $(seq 1 40); do echo $i >> %s; sleep 0.05; done"
      - run: "true"
  - id: b
    steps: [{run: "true"}]
`, tick))
	h := start(t, p, testOptions(t))
	h.kind(StepStarted, "a")
	// Its command runs (a freeze asked before it starts lands at the
	// runner's next look, and a line may come out before: not this test's).
	testutil.Eventually(t, 10*time.Second, "the step's first line", func() bool { return len(lines(t, tick)) > 0 })
	if err := h.r.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := h.r.Freeze(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	n1 := len(lines(t, tick))
	time.Sleep(400 * time.Millisecond)
	if n2 := len(lines(t, tick)); n2 != n1 {
		t.Errorf("frozen step went on writing: %d then %d lines", n1, n2)
	}
	if st := h.r.Snapshot(); !st.Frozen || !st.Paused || !st.Phase("a").Frozen {
		t.Errorf("snapshot: frozen %v paused %v phase frozen %v", st.Frozen, st.Paused, st.Phase("a").Frozen)
	}
	h.r.Thaw()
	// The running step finishes; paused, the next one does not start.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		st := h.r.Snapshot()
		if st.Phase("a").Steps[0].Status == Done {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	st := h.r.Snapshot()
	if st.Phase("a").Steps[1].Status != Pending || st.Phase("b").Status != Pending {
		t.Fatalf("paused, yet step 2 is %s and b is %s", st.Phase("a").Steps[1].Status, st.Phase("b").Status)
	}
	h.r.Resume()
	st = h.finished(20 * time.Second)
	if st.Phase("a").Status != Done || st.Phase("b").Status != Done || !st.Phase("a").WasFrozen {
		t.Errorf("after resume: a %s (was frozen %v), b %s", st.Phase("a").Status, st.Phase("a").WasFrozen, st.Phase("b").Status)
	}
}

func TestManualGateWaitsForGreenlight(t *testing.T) {
	t.Parallel()
	p := loadCampaign(t, `
name: gate
phases:
  - id: g
    gate: manual
    steps: [{run: "true"}]
`)
	h := start(t, p, testOptions(t))
	h.kind(GateWaiting, "g")
	if s := h.r.Snapshot().Phase("g").Status; s != Waiting {
		t.Fatalf("g = %s; want waiting", s)
	}
	if err := h.r.Greenlight("g"); err != nil {
		t.Fatal(err)
	}
	if st := h.finished(10 * time.Second); st.Phase("g").Status != Done {
		t.Errorf("g = %s after greenlight", st.Phase("g").Status)
	}
}

func TestRetryAfterFailureRunsAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flag := filepath.Join(dir, "ok")
	p := loadCampaign(t, fmt.Sprintf(`
name: retry
phases:
  - id: a
    steps: [{run: "test -f %s"}]
`, flag))
	h := start(t, p, testOptions(t))
	if st := h.finished(10 * time.Second); st.Phase("a").Status != Failed {
		t.Fatalf("a = %s; want failed", st.Phase("a").Status)
	}
	os.WriteFile(flag, nil, 0o644)
	if err := h.r.Retry("a"); err != nil {
		t.Fatal(err)
	}
	st := h.finished(10 * time.Second)
	if a := st.Phase("a"); a.Status != Done || a.Attempt != 2 {
		t.Errorf("a = %s attempt %d; want done at attempt 2", a.Status, a.Attempt)
	}
}

// killRunnerMidStep starts a runner in its own process, waits for want in
// the journal, and kills the process with SIGKILL.
func killRunnerMidStep(t *testing.T, campaignFile, stateDir, want string) {
	t.Helper()
	killRunnerWhen(t, campaignFile, stateDir, want, func() bool {
		b, _ := os.ReadFile(filepath.Join(stateDir, "journal.jsonl"))
		return strings.Contains(string(b), want)
	})
}

// killRunnerWhen runs a runner in a process of its own and kills it -9
// once cond holds (what: cond in words).
func killRunnerWhen(t *testing.T, campaignFile, stateDir, what string, cond func() bool) {
	t.Helper()
	cmd := exec.Command(testBin(t), "__test-runner", campaignFile, stateDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, _ := os.Create(filepath.Join(t.TempDir(), "runner.out"))
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			b, _ := os.ReadFile(filepath.Join(stateDir, "journal.jsonl"))
			t.Fatalf("never %s; the journal:\n%s", what, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
}

// startAgain starts a runner in this process on the state a killed one
// left, the gates of approve given.
func startAgain(t *testing.T, p *campaign.Plan, stateDir string, approve ...string) *harness {
	t.Helper()
	opts := testOptions(t)
	opts.StateDir = stateDir
	opts.Approve = approve
	return start(t, p, opts)
}

// readoptedOnce waits for the service serve to be ready again, re-adopted,
// and the campaign's end: the service's start count file says it started
// once.
func readoptedOnce(t *testing.T, h *harness, count string, timeout time.Duration) *State {
	t.Helper()
	e := h.kind(ServiceReady, "serve")
	if !strings.Contains(e.Message, "re-adopted") {
		t.Errorf("ServiceReady message %q; want it re-adopted", e.Message)
	}
	st := h.finished(timeout)
	if got := lines(t, count); len(got) != 1 {
		t.Errorf("the service started %d times (%v); want once", len(got), got)
	}
	return st
}

func TestResumeAfterKill9RunsStepOnce(t *testing.T) {
	t.Parallel() // waits on its steps, not a CPU: it overlaps Slurm's minute
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	body := fmt.Sprintf(`
name: crash
phases:
  - id: first
    steps: [{run: "echo ran >> %s"}]
  - id: long
    needs: [first]
    steps:
      - run: "echo start >> %s; sleep 1.5; echo '{\"v\": 7}' >> $GREENLIGHT_RESULTS"
  - id: last
    needs: [long]
    steps: [{run: "true"}]
`, count, count)
	p := loadCampaign(t, body)
	stateDir := filepath.Join(dir, "state")
	killRunnerMidStep(t, p.File, stateDir, `"kind":"step-pid","phase":"long"`)
	st := startAgain(t, p, stateDir).finished(20 * time.Second)
	for _, id := range []string{"first", "long", "last"} {
		if s := st.Phase(id); s.Status != Done {
			t.Errorf("%s = %s %q", id, s.Status, s.Reason)
		}
	}
	if got := lines(t, count); strings.Join(got, " ") != "ran start" {
		t.Errorf("steps ran %v; want each once: [ran start]", got)
	}
	if !st.Phase("long").Readopted {
		t.Error("long was not marked re-adopted")
	}
	if rows := st.Phase("long").Steps[0].Results; len(rows) != 1 || rows[0].Values[0] != 7.0 {
		t.Errorf("long's results after resume = %+v; want one row v=7", rows)
	}
}

func TestLiveServiceReadoptedNotRestarted(t *testing.T) {
	t.Parallel() // waits on its steps, not a CPU: it overlaps Slurm's minute
	port := freePort(t)
	dir := t.TempDir()
	count := filepath.Join(dir, "starts")
	p := loadCampaign(t, fmt.Sprintf(`
name: readopt
phases:
  - id: serve
    service:
      run: exec %s __test-http %d %s 200ms
      ready: {http: "http://127.0.0.1:%d/health"}
  - id: use
    needs: [serve]
    gate: manual
    steps: [{run: "true"}]
`, testBin(t), port, count, port))
	stateDir := filepath.Join(dir, "state")
	killRunnerMidStep(t, p.File, stateDir, `"kind":"service-ready"`)
	st := readoptedOnce(t, startAgain(t, p, stateDir, "use"), count, 20*time.Second)
	if st.Phase("use").Status != Done || st.Phase("serve").Status != Done {
		t.Errorf("use %s, serve %s", st.Phase("use").Status, st.Phase("serve").Status)
	}
}

func TestSecondMonitorIsRefused(t *testing.T) {
	t.Parallel()
	p := loadCampaign(t, "name: lock\nphases:\n  - id: a\n    steps: [{run: 'sleep 1'}]\n")
	opts := testOptions(t)
	opts.StateDir = t.TempDir()
	r1, err := New(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	if _, err := New(p, opts); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second New = %v; want refused as already running", err)
	}
}

func TestChangedPhaseRunsAgainUnchangedKept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	path := filepath.Join(dir, "c.yaml")
	write := func(bMsg string) *campaign.Plan {
		return writeCampaign(t, path, fmt.Sprintf("name: change\nphases:\n  - id: a\n    steps: [{run: 'echo a >> %s'}]\n  - id: b\n    steps: [{run: 'echo %s >> %s'}]\n", count, bMsg, count))
	}
	opts := testOptions(t)
	opts.StateDir = filepath.Join(dir, "state")
	h := start(t, write("b1"), opts)
	h.finished(10 * time.Second)
	h.r.Close()
	h2 := start(t, write("b2"), opts)
	st := h2.finished(10 * time.Second)
	if got := strings.Join(lines(t, count), " "); got != "a b1 b2" {
		t.Errorf("ran %q; want a once and b again after its change: \"a b1 b2\"", got)
	}
	if !st.Phase("b").Changed || st.Phase("a").Changed {
		t.Errorf("changed flags: a %v, b %v", st.Phase("a").Changed, st.Phase("b").Changed)
	}
}

// TestServiceChainStaysUp: vLLM over Ray needs the Ray worker, which needs
// the Ray head; all three hold every GPU. The phase using vLLM must run
// with the whole chain up, and the chain must come down after it, head
// last.
func TestServiceChainStaysUp(t *testing.T) {
	t.Parallel() // waits on its steps, not a CPU: it overlaps Slurm's minute
	p := loadCampaign(t, `
name: chain
phases:
  - id: head
    service: {run: "echo head up; exec sleep 60", ready: {log: "head up"}}
  - id: worker
    needs: [head]
    service: {run: "echo worker up; exec sleep 60", ready: {log: "worker up"}}
  - id: serve
    needs: [worker]
    service: {run: "echo serving; exec sleep 60", ready: {log: "serving"}}
  - id: bench
    needs: [serve]
    steps: [{run: "sleep 0.3"}]
  - id: after
    needs: [bench]
    steps: [{run: "true"}]
`)
	st := start(t, p, testOptions(t)).finished(40 * time.Second)
	for _, id := range []string{"head", "worker", "serve", "bench", "after"} {
		if s := st.Phase(id); s.Status != Done {
			t.Errorf("%s = %s %q; want done", id, s.Status, s.Reason)
		}
	}
	head, worker, serve := st.Phase("head"), st.Phase("worker"), st.Phase("serve")
	bench := st.Phase("bench")
	for _, svc := range []*PhaseState{head, worker, serve} {
		if svc.Ended.Before(bench.Ended) {
			t.Errorf("%s ended at %v, before bench ended at %v: the chain must stay up for it", svc.ID, svc.Ended, bench.Ended)
		}
	}
	if head.Ended.Before(serve.Ended) || head.Ended.Before(worker.Ended) {
		t.Errorf("head ended %v before the services on top of it (worker %v, serve %v)", head.Ended, worker.Ended, serve.Ended)
	}
	after := st.Phase("after")
	if after.Started.Before(serve.Ended) {
		t.Errorf("after started %v while serve (all GPUs) was up until %v: it does not use the service", after.Started, serve.Ended)
	}
}

// TestFreezeStopsTheTimeoutClock: a step frozen for longer than its
// timeout is not killed for it; thawed, it finishes.
func TestFreezeStopsTheTimeoutClock(t *testing.T) {
	t.Parallel() // waits on its steps, not a CPU: it overlaps Slurm's minute
	p := loadCampaign(t, `
name: freeze-timeout
phases:
  - id: a
    timeout: 3s
    steps: [{run: "sleep 0.3"}]
`)
	h := start(t, p, testOptions(t))
	h.kind(StepStarted, "a")
	if err := h.r.Freeze(); err != nil {
		t.Fatal(err)
	}
	// Frozen well past the timeout: the supervisor's clock and the
	// runner's phase clock must both be stopped.
	testutil.Within(10*time.Second, func() bool { return h.r.Snapshot().Phase("a").Frozen })
	// Frozen longer than the timeout, so a clock that counted it would
	// fail the phase; the step's own 0.3 s leaves 2.7 s for a busy box
	// to start it and see it end.
	time.Sleep(3500 * time.Millisecond)
	if st := h.r.Snapshot().Phase("a"); st.Status != Running {
		t.Fatalf("frozen past its timeout, a = %s %q; want it running (frozen)", st.Status, st.Reason)
	}
	h.r.Thaw()
	st := h.finished(20 * time.Second)
	if a := st.Phase("a"); a.Status != Done {
		t.Errorf("after thaw a = %s %q; want done: frozen time does not count against the timeout", a.Status, a.Reason)
	}
}

// TestPhaseEndsWhenItsStepEnded: the monitor was away when the step ended
// (killed mid-step, back three seconds later); the phase's end is the
// step's, from its supervisor's status file, not when the monitor looked.
func TestPhaseEndsWhenItsStepEnded(t *testing.T) {
	t.Parallel() // waits on its steps, not a CPU: it overlaps Slurm's minute
	dir := t.TempDir()
	p := loadCampaign(t, `
name: away
phases:
  - id: long
    steps:
      - run: "sleep 1"
`)
	stateDir := filepath.Join(dir, "state")
	killRunnerMidStep(t, p.File, stateDir, `"kind":"step-pid","phase":"long"`)
	// The monitor stays away until the step has ended, and a while more.
	var ended time.Time
	testutil.Eventually(t, 20*time.Second, "the step's end, while no runner ran", func() bool {
		m, _ := filepath.Glob(filepath.Join(stateDir, "steps", "long", "*", "status.json"))
		for _, f := range m {
			if st, err := supervise.ReadStatus(f); err == nil && st.State == "exited" {
				ended = st.Ended
				return time.Since(ended) > time.Second
			}
		}
		return false
	})
	back := time.Now()
	st := startAgain(t, p, stateDir).finished(20 * time.Second)
	ph := st.Phase("long")
	if d := ph.Ended.Sub(ph.Started); d < 900*time.Millisecond || d > 2500*time.Millisecond || !ph.Ended.Equal(ended) {
		t.Errorf("phase took %s by its record, ending %s; the step slept 1 s and ended %s, the monitor came back %s later",
			d, ph.Ended.Format("15:04:05.000"), ended.Format("15:04:05.000"), back.Sub(ended).Round(time.Millisecond))
	}
}

// TestJournalOfAnEarlierGreenlightIsResumed: a journal whose phases carry
// the hash earlier greenlights wrote (the whole phase as written) resumes
// with its finished phases kept, not run again.
func TestJournalOfAnEarlierGreenlightIsResumed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	p := loadCampaign(t, fmt.Sprintf("name: old\nphases:\n  - id: a\n    steps: [{run: 'echo ran >> %s'}]\n", count))
	opts := testOptions(t)
	opts.StateDir = filepath.Join(dir, "state")
	h := start(t, p, opts)
	h.finished(10 * time.Second)
	h.r.Close()
	journal := filepath.Join(opts.StateDir, "journal.jsonl")
	b, _ := os.ReadFile(journal)
	old := strings.ReplaceAll(string(b), p.Phases[0].Hash, p.Phases[0].LegacyHash)
	if old == string(b) {
		t.Fatal("no phase hash in the journal to rewrite")
	}
	os.WriteFile(journal, []byte(old), 0o644)
	h2 := start(t, p, opts)
	st := h2.finished(10 * time.Second)
	if st.Phase("a").Status != Done || st.Phase("a").Changed {
		t.Errorf("a = %s, changed %v; want kept done", st.Phase("a").Status, st.Phase("a").Changed)
	}
	if got := lines(t, count); len(got) != 1 {
		t.Errorf("the step ran %d times; want once", len(got))
	}
}

// TestStateDirRemovedAndMadeAgainIsSaid: the state dir removed and made
// again at once (the socket's own watch, a supervisor writing its status)
// before the runner looks is still said as the state dir removed, not the
// journal alone: the step logs of ended steps are gone too.
func TestStateDirRemovedAndMadeAgainIsSaid(t *testing.T) {
	t.Parallel() // waits on its steps, not a CPU: it overlaps Slurm's minute
	p := loadCampaign(t, `
name: remade
phases:
  - id: long
    steps:
      - run: sleep 3
`)
	opts := testOptions(t)
	opts.StateDir = filepath.Join(t.TempDir(), "state")
	h := start(t, p, opts)
	h.kind(StepStarted, "long")
	os.RemoveAll(opts.StateDir)
	os.MkdirAll(opts.StateDir, 0o755)
	e := h.until(20*time.Second, "the removal said", func(e Event) bool {
		return e.Kind == Warning && strings.Contains(e.Message, "was removed while the campaign ran")
	})
	if !strings.Contains(e.Message, "the state dir "+opts.StateDir+" was removed") {
		t.Errorf("said %q; want the state dir named as removed", e.Message)
	}
	h.finished(20 * time.Second)
}

// TestLockOfADeadRunnerIsWaitedFor: the pid the lock names is dead but
// its lock is held a moment more (a child it was starting, between fork
// and exec, shares the lock's file): New waits for it instead of saying
// another greenlight runs the campaign.
func TestLockOfADeadRunnerIsWaitedFor(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("needs flock(1), from util-linux")
	}
	p := loadCampaign(t, "name: lock\nphases:\n  - id: a\n    steps: [{run: 'true'}]\n")
	opts := testOptions(t)
	opts.StateDir = t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	lock := Layout(opts.StateDir).Lock()
	os.WriteFile(lock, []byte(strconv.Itoa(dead.Process.Pid)), 0o644)
	holder := exec.Command("flock", "-x", lock, "sleep", "0.5")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer holder.Wait()
	time.Sleep(100 * time.Millisecond) // flock has it
	r, err := New(p, opts)
	if err != nil {
		t.Fatalf("New while a dead runner's lock lingers: %v", err)
	}
	r.Close()
}
