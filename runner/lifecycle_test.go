package runner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

// TestStopThenRunFinishes: the campaign stopped while a phase that needs a
// service runs; run again, the service is started again first and the
// stopped phase runs to its end, with no key pressed. The stopped
// campaign's headline is "stopped", not "finished".
func TestStopThenRunFinishes(t *testing.T) {
	t.Parallel() // waits on its steps, not a CPU: it overlaps Slurm's minute
	dir := t.TempDir()
	starts, ran := filepath.Join(dir, "starts"), filepath.Join(dir, "ran")
	p := loadCampaign(t, fmt.Sprintf(`
name: stopthenrun
phases:
  - id: serve
    service:
      run: |
        echo up >> %s; echo ready; sleep 600
      ready: {log: ready, timeout: 30s}
  - id: bench
    needs: [serve]
    steps:
      - run: |
          sleep 1; echo bench >> %s
`, starts, ran))
	opts := testOptions(t)
	opts.StateDir = filepath.Join(dir, "state")
	h := start(t, p, opts)
	h.kind(StepStarted, "bench")
	h.r.Stop()
	st := h.finished(20 * time.Second)
	if got := st.Headline(); got != HeadStopped {
		t.Errorf("after a stop the campaign reads %q; want %q", got, HeadStopped)
	}
	h.r.Close()

	h2 := start(t, p, opts)
	st = h2.finished(20 * time.Second)
	if s := st.Phase("bench").Status; s != Done {
		t.Fatalf("bench after run again: %s (%s)", s, st.Phase("bench").Reason)
	}
	if got := st.Headline(); got != HeadFinished {
		t.Errorf("headline %q; want %q", got, HeadFinished)
	}
	if n := len(lines(t, starts)); n != 2 {
		t.Errorf("the service started %d times; want 2 (once, then again for the stopped phase)", n)
	}
	said := false
	for _, e := range h2.seen {
		if e.Kind == Warning && e.Phase == "serve" && strings.Contains(e.Message, "needed again by bench") {
			said = true
		}
	}
	if !said {
		t.Error("the restart of the service is not said")
	}
}

// TestEditedPhaseAsksItsGateAgain: a greenlight was given for the work as
// it was; the phase edited, it waits for a greenlight again.
func TestEditedPhaseAsksItsGateAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	write := func(msg string) *campaign.Plan {
		return writeCampaign(t, path, fmt.Sprintf("name: regate\nphases:\n  - id: a\n    gate: manual\n    steps:\n      - run: |\n          echo %s\n", msg))
	}
	opts := testOptions(t)
	opts.StateDir = filepath.Join(dir, "state")
	opts.Approve = []string{"a"}
	h := start(t, write("one"), opts)
	h.finished(10 * time.Second)
	h.r.Close()
	opts.Approve = nil
	h2 := start(t, write("two"), opts)
	h2.kind(GateWaiting, "a")
}

// TestFailureQuotesItsLastWords: a service that exits before it is ready,
// and a step that fails, are recorded with the lines of their log that say
// why (escaped), not only the log's path.
func TestFailureQuotesItsLastWords(t *testing.T) {
	t.Parallel()
	p := loadCampaign(t, `
name: words
phases:
  - id: serve
    service:
      run: |
        echo loading; echo "python3: can't open file '/x/fake_vllm.py': [Errno 2] No such file or directory" >&2; exit 2
      ready: {log: ready, timeout: 30s}
  - id: step
    steps:
      - run: |
          echo fine; printf 'Traceback (most recent call last):\n  File "b.py"\nValueError: bad \033[31mshape\033[0m\n'; exit 1
`)
	st := start(t, p, testOptions(t)).finished(20 * time.Second)
	if r := st.Phase("serve").Reason; !strings.Contains(r, "can't open file '/x/fake_vllm.py'") {
		t.Errorf("the service's failure does not quote why: %q", r)
	}
	r := st.Phase("step").Reason
	if !strings.Contains(r, "ValueError: bad") || !strings.Contains(r, "Traceback") || strings.Contains(r, "\x1b") || strings.Contains(r, `"fine"`) {
		t.Errorf("the step's failure does not quote its error lines, escaped: %q", r)
	}
}

// TestRecordedKeptAcrossRestarts: a row's recorded time is when it was
// first read, not when a runner started again read it anew.
func TestRecordedKeptAcrossRestarts(t *testing.T) {
	t.Parallel() // waits on its steps, not a CPU: it overlaps Slurm's minute
	dir := t.TempDir()
	p := loadCampaign(t, `
name: rec
phases:
  - id: a
    steps:
      - run: |
          echo '{"x": 1}' >> "$GREENLIGHT_RESULTS"; echo 'tok/s: 5' ; sleep 1
        results: {regex: 'tok/s:\s+(?P<tok_s>[\d.]+)'}
  - id: b
    needs: [a]
    gate: manual
    steps:
      - run: |
          true
`)
	opts := testOptions(t)
	opts.StateDir = filepath.Join(dir, "state")
	h := start(t, p, opts)
	first := h.kind(GateWaiting, "b").State.Phase("a").Steps[0].Results
	h.r.Close()
	time.Sleep(50 * time.Millisecond) // the restart's clock is later than any row's
	h2 := start(t, p, opts)
	again := h2.kind(CampaignStarted, "").State.Phase("a").Steps[0].Results
	if len(first) != 2 || len(again) != 2 {
		t.Fatalf("rows %d then %d; want 2 and 2", len(first), len(again))
	}
	for i := range first {
		if !again[i].Time.Equal(first[i].Time) {
			t.Errorf("row %d recorded %v, then %v after a restart", i, first[i].Time, again[i].Time)
		}
	}
	// status with no runner counts from the journal what the file holds:
	// both rows, the results file's and the one read from the log.
	h2.r.Close()
	st, err := Replay(p, opts.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if rows := st.Phase("a").Steps[0].Results; len(rows) != 2 {
		t.Errorf("the journal's replay counts %d rows; the step wrote 2", len(rows))
	}
}

// TestNotify: the notify command runs for a gate that waits, a phase that
// fails and the campaign's end, with the event, phase and text in its
// environment; one that hangs is stopped within its limit, said once, and
// holds nothing.
func TestNotify(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "told")
	p := loadCampaign(t, fmt.Sprintf(`
name: tell
notify: |
  echo "$GREENLIGHT_EVENT $GREENLIGHT_PHASE $GREENLIGHT_TEXT" >> %s
phases:
  - id: bad
    steps:
      - run: |
          exit 3
  - id: gated
    gate: manual
    steps:
      - run: |
          true
`, log))
	r, err := New(p, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, r: r, events: r.Subscribe()}
	events := r.Subscribe() // before the start: no notice missed
	r.Start()
	said := make(chan string, 4)
	done := make(chan struct{})
	go func() { Notify(p, events, func(s string) { said <- s }); close(done) }()
	h.kind(GateWaiting, "gated")
	h.r.Greenlight("gated")
	h.finished(20 * time.Second)
	h.r.Close()
	<-done
	b, _ := os.ReadFile(log)
	got := string(b)
	for _, want := range []string{"gate gated", "failed bad", "finished  failed: "} {
		if !strings.Contains(got, want) {
			t.Errorf("not told %q; told:\n%s", want, got)
		}
	}
	if len(said) != 0 {
		t.Errorf("a working notify said: %q", <-said)
	}

	// A command that hangs: stopped after the limit, said once.
	limit := 300 * time.Millisecond
	p.Notify = "sleep 600"
	ev := make(chan Event, 2)
	ev <- Event{Kind: CampaignFinished, State: &State{Finished: true}}
	ev <- Event{Kind: CampaignFinished, State: &State{Finished: true}}
	close(ev)
	start := time.Now()
	var told []string
	notifyWithin(p, ev, func(s string) { told = append(told, s) }, limit)
	if len(told) != 1 || !strings.Contains(told[0], "did not end within") {
		t.Errorf("a hanging notify: said %q", told)
	}
	if d := time.Since(start); d > 3*limit {
		t.Errorf("two hanging notices took %v", d)
	}
}

// TestOneFailureOneNotice: a phase that fails, with two phases that need
// it (one through the other): one notice, naming what it blocks; the
// blocked phases are no failures of their own to be told of.
func TestOneFailureOneNotice(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "told")
	p := loadCampaign(t, fmt.Sprintf(`
name: tell
notify: |
  echo "$GREENLIGHT_EVENT $GREENLIGHT_PHASE $GREENLIGHT_TEXT" >> %s
phases:
  - id: bad
    steps:
      - run: |
          exit 3
  - id: profile
    needs: [bad]
    steps:
      - run: |
          true
  - id: nsys
    needs: [profile]
    steps:
      - run: |
          true
`, log))
	h, done := startNotified(t, p)
	h.finished(20 * time.Second)
	h.r.Close()
	<-done
	b, _ := os.ReadFile(log)
	var failed []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "failed ") {
			failed = append(failed, l)
		}
	}
	if len(failed) != 1 || !strings.HasPrefix(failed[0], "failed bad ") || !strings.Contains(failed[0], "it blocks profile, nsys") {
		t.Errorf("failure notices %q; want one, for bad, naming profile and nsys", failed)
	}
}

// TestStopAtAGateReadsStoppedFromTheJournal: stopped while a phase waits
// at its gate, the campaign reads "stopped" from its journal alone (status
// with no runner), as the window and the record say; run again, the gate
// asks again.
func TestStopAtAGateReadsStoppedFromTheJournal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadCampaign(t, `
name: gatestop
phases:
  - id: a
    steps:
      - run: |
          true
  - id: b
    needs: [a]
    gate: manual
    steps:
      - run: |
          true
`)
	opts := testOptions(t)
	opts.StateDir = filepath.Join(dir, "state")
	h := start(t, p, opts)
	h.kind(GateWaiting, "b")
	h.r.Stop()
	if got := h.finished(10 * time.Second).Headline(); got != HeadStopped {
		t.Errorf("the runner says %q", got)
	}
	h.r.Close()
	st, err := Replay(p, opts.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Headline(); got != HeadStopped {
		t.Errorf("from the journal: %q (b %s); want %q", got, st.Phase("b").Status, HeadStopped)
	}
	h2 := start(t, p, opts)
	h2.kind(GateWaiting, "b")
}

// TestLeftoversStoppedAndSaid: a step that setsids a helper and exits:
// the helper is stopped with the step and the runner says which it was.
func TestLeftoversStoppedAndSaid(t *testing.T) {
	t.Parallel() // waits on its steps, not a CPU: it overlaps Slurm's minute
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	p := loadCampaign(t, fmt.Sprintf(`
name: leak
phases:
  - id: leak
    steps:
      - run: |
          setsid sh -c 'echo $$ > %[1]s; exec sleep 300' &
          while [ ! -s %[1]s ]; do sleep 0.02; done
  - id: next
    needs: [leak]
    steps:
      - run: |
          true
`, pids))
	h := start(t, p, testOptions(t))
	e := h.until(30*time.Second, "the leftover said", func(e Event) bool {
		return e.Kind == Warning && strings.Contains(e.Message, "left 1 process(es) running")
	})
	if !strings.Contains(e.Message, "sleep") || !strings.Contains(e.Message, "stopped with the step") {
		t.Errorf("said %q", e.Message)
	}
	h.finished(30 * time.Second)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(must(os.ReadFile(pids)))))
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(b), ") Z") {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the setsid'd helper %d outlived its step: %s", pid, b)
	}
}

// TestLeaveRunningKeptUntilTheEnd: a step with leave_running: true keeps
// the daemon it starts: the next phase finds it alive, the record says
// it was kept, and the campaign's end stops it, said too; a runner
// started again after that has nothing left to stop.
func TestLeaveRunningKeptUntilTheEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	p := loadCampaign(t, fmt.Sprintf(`
name: keep
phases:
  - id: daemon
    steps:
      - leave_running: true
        run: |
          setsid sh -c 'echo $$ > %[1]s; exec sleep 300' &
          while [ ! -s %[1]s ]; do sleep 0.02; done
  - id: next
    needs: [daemon]
    steps:
      - run: |
          kill -0 $(cat %[1]s) && echo '{"daemon_alive": 1}' >> "$GREENLIGHT_RESULTS"
`, pids))
	h := start(t, p, testOptions(t))
	e := h.until(30*time.Second, "the kept process said", func(e Event) bool {
		return e.Kind == Warning && strings.Contains(e.Message, "left 1 process(es) running")
	})
	if !strings.Contains(e.Message, "kept, as its leave_running asks") {
		t.Errorf("said %q", e.Message)
	}
	// It is the campaign's: on a GPU it is never "not of this campaign".
	kept, _ := strconv.Atoi(strings.TrimSpace(string(must(os.ReadFile(pids)))))
	if !slices.Contains(h.r.Snapshot().Sessions, kept) {
		t.Errorf("the kept daemon %d is not among the campaign's processes %v", kept, h.r.Snapshot().Sessions)
	}
	st := h.finished(30 * time.Second)
	if rows := st.Phase("next").Steps[0].Results; len(rows) != 1 {
		t.Errorf("the next phase did not find the kept daemon alive: %v", rows)
	}
	if !slices.ContainsFunc(st.Warnings, func(w string) bool { return strings.Contains(w, "stopped 1 process(es) steps kept running") }) {
		t.Errorf("the campaign's end did not say it stopped the kept daemon: %q", st.Warnings)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(must(os.ReadFile(pids)))))
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(b), ") Z") {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the kept daemon %d outlived the campaign: %s", pid, b)
	}
}

// TestLeftoverOnAGPUWaitsAndIsStopped: a process an earlier run of phase
// leak left on GPU 0 (its environment names the campaign and the phase,
// as the GPU source reports it) makes the phase wait, saying for whom,
// and the runner stops it; then every phase runs.
func TestLeftoverOnAGPUWaitsAndIsStopped(t *testing.T) {
	t.Parallel()
	p := loadCampaign(t, `
name: leftover
phases:
  - id: leak
    steps:
      - run: |
          true
  - id: next
    needs: [leak]
    steps:
      - run: |
          true
`)
	r, err := New(p, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	left := leakOf(r, "sleep", "300")
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	gone := make(chan struct{})
	go func() { left.Wait(); close(gone) }()
	t.Cleanup(func() { left.Process.Kill() })
	held := []Holder{{GPU: 0, PID: left.Process.Pid, Name: "python3", Mem: 2600 << 20, Phase: "leak"}}
	r.SetHolders(held)
	// The GPU source: the process is listed on GPU 0 while it lives.
	go func() {
		<-gone
		r.SetHolders(nil)
	}()
	h := launch(t, r)
	e := h.until(30*time.Second, "the leftover said", func(e Event) bool {
		return e.Kind == Warning && strings.Contains(e.Message, "left running by phase leak")
	})
	// It is phase leak's own, from an earlier run: leak waits for it too.
	want := fmt.Sprintf("waits for GPU 0 held by pid %d python3 (2.5 GiB), left by phase leak", left.Process.Pid)
	if got := e.State.Phase("leak").WaitReason; got != want {
		t.Errorf("leak waits: %q\nwant %q", got, want)
	}
	if s := e.State.Phase("leak").Status; s == Running || s == Done {
		t.Errorf("leak ran beside its earlier run's leftover (%s)", s)
	}
	select {
	case <-gone:
	case <-time.After(20 * time.Second):
		t.Fatal("the leftover was not stopped")
	}
	st := h.finished(30 * time.Second)
	if a, b := st.Phase("leak").Status, st.Phase("next").Status; a != Done || b != Done {
		t.Errorf("leak %s, next %s after the leftover was stopped", a, b)
	}
}

// leakOf is a command as a step of phase leak of r's campaign would have
// started it: its environment names the campaign's state dir and phase.
func leakOf(r *Runner, name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Env = append(os.Environ(), supervise.EnvState+"="+r.StateDir(), "GREENLIGHT_PHASE=leak")
	return c
}

// TestAGoneHolderIsNoLeftover: a GPU listing a moment old still names a
// process that has exited since (a service the runner just stopped):
// that is no leftover; nothing waits for it and nothing is said.
func TestAGoneHolderIsNoLeftover(t *testing.T) {
	t.Parallel()
	p := loadCampaign(t, `
name: gone
phases:
  - id: leak
    steps:
      - run: |
          true
`)
	r, err := New(p, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	was := leakOf(r, "true")
	if err := was.Run(); err != nil {
		t.Fatal(err)
	}
	r.SetHolders([]Holder{{GPU: 0, PID: was.Process.Pid, Name: "python3", Mem: 2600 << 20, Phase: "leak"}})
	h := launch(t, r)
	st := h.finished(30 * time.Second)
	if s := st.Phase("leak").Status; s != Done {
		t.Errorf("leak = %s", s)
	}
	for _, e := range h.seen {
		if strings.Contains(e.Message, "left running") {
			t.Errorf("said of a process that is gone: %q", e.Message)
		}
	}
}

// TestGuardedCapture: a capture of 3 ranks whose flush writes 2 traces
// shows them as they come ("flushing traces: 1 of 3 ranks"), and when
// nothing grows for its stall it says so and ends the wait: the phase is
// done, never hung. When all 3 come, the wait ends once they are quiet,
// with nothing said.
func TestGuardedCapture(t *testing.T) {
	t.Parallel()
	for _, ranks := range []int{2, 3} {
		dir := t.TempDir()
		p := loadCampaign(t, fmt.Sprintf(`
name: capture
phases:
  - id: prof
    artifacts: ['%[1]s/*.pt.trace.json.gz']
    capture: {ranks: 3, stall: 2s}
    steps:
      - run: |
          true
      - name: stop profiler
        wait_quiet: 300ms
        leave_running: true # the flush goes on after it, as a server's does
        run: |
          ( for r in $(seq 0 %[2]d); do sleep 0.3; head -c 1000 /dev/zero > %[1]s/rank$r.pt.trace.json.gz; done ) &
`, dir, ranks-1))
		h := start(t, p, testOptions(t))
		h.until(20*time.Second, "the flush's progress", func(e Event) bool {
			return e.State != nil && e.State.Phase("prof") != nil && len(e.State.Phase("prof").Steps) == 2 &&
				strings.Contains(e.State.Phase("prof").Steps[1].Stage, "flushing traces: 1 of 3 ranks")
		})
		st := h.finished(30 * time.Second)
		if s := st.Phase("prof").Status; s != Done {
			t.Errorf("%d ranks: the phase is %s", ranks, s)
		}
		stalled := slices.ContainsFunc(st.Warnings, func(w string) bool { return strings.Contains(w, "flush grew no trace for 2s: 2 of 3 ranks") })
		if stalled != (ranks == 2) {
			t.Errorf("%d ranks written: stall said %v; warnings %q", ranks, stalled, st.Warnings)
		}
	}
}
