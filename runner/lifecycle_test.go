package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStopThenRunFinishes: the campaign stopped while a phase that needs a
// service runs; run again, the service is started again first and the
// stopped phase runs to its end, with no key pressed. The stopped
// campaign's headline is "stopped", not "finished".
func TestStopThenRunFinishes(t *testing.T) {
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
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	write := func(msg string) *Plan {
		os.WriteFile(path, []byte(fmt.Sprintf("name: regate\nphases:\n  - id: a\n    gate: manual\n    steps:\n      - run: |\n          echo %s\n", msg)), 0o644)
		p, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		return p
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
}
