package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

// journalRecords reads the journal of a state dir.
func journalRecords(t *testing.T, stateDir string) []record {
	t.Helper()
	recs, err := readJournal(Layout(stateDir).Journal())
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestStopThenRunKeepsFinishedUnits: an 8-point sweep stopped after some
// units, run again, runs each unit once (the ledger reads 1..8 once each,
// the cut one twice at most), in the same attempt, and says what it kept.
func TestStopThenRunKeepsFinishedUnits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger")
	p := loadCampaign(t, fmt.Sprintf(`
name: keep
phases:
  - id: g
    gpus: none
    sweep: {m: [1, 2, 3, 4, 5, 6, 7, 8]}
    steps:
      - run: |
          echo "{\"t_ms\": ${m}}" >> "$GREENLIGHT_RESULTS"
          echo ${m} >> %s
          sleep 0.3
`, ledger))
	opts := testOptions(t)
	opts.StateDir = filepath.Join(dir, "state")
	h := start(t, p, opts)
	h.until(20*time.Second, "unit 5 started", func(e Event) bool {
		return e.Kind == StepStarted && e.Phase == "g" && e.Step == 4
	})
	h.r.Stop()
	h.finished(20 * time.Second)
	h.r.Close()
	before := lines(t, ledger)

	h2 := start(t, p, opts)
	st := h2.finished(30 * time.Second)
	got := lines(t, ledger)
	seen := map[string]int{}
	for _, l := range got {
		seen[l]++
	}
	for m := 1; m <= 8; m++ {
		k := fmt.Sprint(m)
		want := 1
		if slices.Contains(before, k) && m == len(before) {
			want = 2 // the unit the stop cut: its end unseen, it runs again
		}
		if seen[k] > want || seen[k] == 0 {
			t.Errorf("unit m=%d ran %d times; ledger %v (before the stop: %v)", m, seen[k], got, before)
		}
	}
	g := st.Phase("g")
	if g.Status != Done || g.Attempt != 1 {
		t.Errorf("g = %s, attempt %d; want done in attempt 1 (a stop and run continues it)", g.Status, g.Attempt)
	}
	rows := 0
	for _, s := range g.Steps {
		rows += len(s.Results)
	}
	if rows != 8 {
		t.Errorf("g has %d rows; want 8, one a unit", rows)
	}
	said := false
	for _, e := range h2.seen {
		if e.Kind == Progress && strings.Contains(e.Message, "units were done and are kept") {
			said = true
		}
	}
	if !said {
		t.Errorf("the units kept are not said as an event")
	}
	// Its duration is both runs' (8 units of 0.3 s, 4 of them before the
	// stop), and says so: before, only the run after the stop counted.
	if d, n := g.RunTime(st.Now); n != 2 || d < 8*300*time.Millisecond {
		t.Errorf("g ran %s over %d runs; want at least 2.4s over 2", d, n)
	}
	if !slices.ContainsFunc(h2.seen, func(e Event) bool { return e.Kind == PhaseFinished && strings.Contains(e.Message, "over 2 runs") }) {
		t.Error("g's end does not say its time over 2 runs")
	}
	if back, err := Replay(p, opts.StateDir); err == nil {
		if d, n := back.Phase("g").RunTime(back.Now); n != 2 || d != func() time.Duration { x, _ := g.RunTime(st.Now); return x }() {
			t.Errorf("read back: %s over %d runs; want the runner's", d, n)
		}
	}
	if slices.ContainsFunc(st.Warnings, func(w string) bool { return strings.Contains(w, "units were done and are kept") }) {
		t.Errorf("the units kept are said as a warning, an informational line: %q", st.Warnings)
	}
	// Every warning is a fact of the journal: the state read back from it
	// alone says the same, the first runner's included.
	h2.r.Close()
	rs, err := Replay(p, opts.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rs.Warnings, st.Warnings) || !slices.ContainsFunc(st.Warnings, func(w string) bool { return strings.Contains(w, "stopped by you") && strings.Contains(w, "m=5") }) {
		t.Errorf("warnings read back from the journal:\n%q\nthe runner's:\n%q\n(want the same, the first runner's stop included)", rs.Warnings, st.Warnings)
	}
}

// TestASkippedPointStaysSkippedAcrossAStop: skip --point, then a stop
// and a run: the point does not run, and it reads skipped.
func TestASkippedPointStaysSkippedAcrossAStop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger")
	p := loadCampaign(t, fmt.Sprintf(`
name: keepskip
phases:
  - id: g
    gpus: none
    sweep: {m: [1, 2, 3, 4, 5, 6]}
    steps:
      - run: |
          echo ${m} >> %s
          sleep 0.3
`, ledger))
	opts := testOptions(t)
	opts.StateDir = filepath.Join(dir, "state")
	h := start(t, p, opts)
	h.until(20*time.Second, "unit 2 started", func(e Event) bool {
		return e.Kind == StepStarted && e.Phase == "g" && e.Step == 1
	})
	if err := h.r.SkipPoint("g", "m=5"); err != nil {
		t.Fatal(err)
	}
	h.r.Stop()
	h.finished(20 * time.Second)
	h.r.Close()

	st := start(t, p, opts).finished(30 * time.Second)
	if got := lines(t, ledger); slices.Contains(got, "5") {
		t.Errorf("the skipped point m=5 ran after a stop and a run: ledger %v", got)
	}
	if s := st.Phase("g").Steps[4]; s.Status != Skipped {
		t.Errorf("point m=5 reads %s; want skipped", s.Status)
	}
}

// TestAKilledSupervisorRunsItsUnitAlone: a sweep unit's supervisor killed
// -9 while its step (and a setsid child that ignores SIGTERM) runs: that
// unit alone runs again, after what its tree left is stopped; the grid
// goes on, and the phase is done.
func TestAKilledSupervisorRunsItsUnitAlone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger")
	p := loadCampaign(t, fmt.Sprintf(`
name: lost
phases:
  - id: g
    gpus: none
    sweep: {m: [1, 2, 3, 4]}
    steps:
      - run: |
          echo ${m} >> %s
          echo "{\"t_ms\": ${m}}" >> "$GREENLIGHT_RESULTS"
          if [ ${m} = 2 ] && [ ! -e %s/once ]; then
            touch %s/once
            setsid sh -c 'trap "" TERM INT; echo $$ > %s/orphan; exec sleep 600' &
            sleep 600
          fi
`, ledger, dir, dir, dir))
	opts := testOptions(t)
	opts.StateDir = filepath.Join(dir, "state")
	h := start(t, p, opts)
	var sup int
	testutil.Eventually(t, 20*time.Second, "unit 2's supervisor and its orphan", func() bool {
		for _, rec := range journalRecords(t, opts.StateDir) {
			if rec.Kind == recStepPID && rec.Phase == "g" && rec.Step == 1 {
				sup = rec.PID
			}
		}
		_, err := os.Stat(filepath.Join(dir, "orphan"))
		return sup > 0 && err == nil
	})
	b, _ := os.ReadFile(filepath.Join(dir, "orphan"))
	orphan, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	syscall.Kill(sup, syscall.SIGKILL)
	st := h.finished(60 * time.Second)
	if g := st.Phase("g"); g.Status != Done {
		t.Fatalf("g = %s (%s); want done: a lost unit runs again, it does not fail the phase", g.Status, g.Reason)
	}
	got := lines(t, ledger)
	if want := []string{"1", "2", "2", "3", "4"}; !slices.Equal(got, want) {
		t.Errorf("ledger %v; want %v (unit 2 again, alone)", got, want)
	}
	if orphan > 0 && syscall.Kill(orphan, 0) == nil {
		if state, _, ok := supervise.ProcStat(orphan); ok && state != 'Z' {
			syscall.Kill(orphan, syscall.SIGKILL)
			t.Errorf("the lost step's setsid child (pid %d) still runs", orphan)
		}
	}
	said := false
	for _, e := range h.seen {
		if e.Kind == Warning && strings.Contains(e.Message, "it runs again") && strings.Contains(e.Message, "stopped first") {
			said = true
		}
	}
	if !said {
		t.Error("the lost unit's rerun and the stop of its leftovers are not said")
	}
}

// TestAStopRightAfterASkipKeepsTheSkip: a skip said, and a stop before the
// skipped step has ended: the phase ends skipped, not stopped (the stop
// took the skip back, and the next run ran the phase again).
func TestAStopRightAfterASkipKeepsTheSkip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := loadCampaign(t, `
name: skipstop
phases:
  - id: g
    gpus: none
    sweep: {m: [1, 2, 3]}
    steps:
      - run: |
          trap 'sleep 0.5; exit 1' INT TERM
          sleep 30 & wait
`)
	opts := testOptions(t)
	opts.StateDir = filepath.Join(dir, "state")
	h := start(t, p, opts)
	h.kind(StepStarted, "g")
	if err := h.r.Skip("g"); err != nil {
		t.Fatal(err)
	}
	h.r.Stop()
	st := h.finished(20 * time.Second)
	if g := st.Phase("g"); g.Status != Skipped {
		t.Errorf("g = %s (%s); want skipped: the stop came after the skip", g.Status, g.Reason)
	}
}

// TestTwoStopsKeepTheUnits: stopped part-way, then stopped again before the
// phase started again (its needs not met), then run: the units done in
// the first run are still kept.
func TestTwoStopsKeepTheUnits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger")
	p := loadCampaign(t, fmt.Sprintf(`
name: twostops
phases:
  - id: first
    gpus: none
    steps:
      - run: |
          sleep 0.5
  - id: g
    gpus: none
    sweep: {m: [1, 2, 3, 4]}
    steps:
      - run: |
          echo ${m} >> %s
          sleep 0.3
`, ledger))
	opts := testOptions(t)
	opts.StateDir = filepath.Join(dir, "state")
	h := start(t, p, opts)
	h.until(20*time.Second, "unit 3 started", func(e Event) bool { return e.Kind == StepStarted && e.Phase == "g" && e.Step == 2 })
	h.r.Stop()
	h.finished(20 * time.Second)
	h.r.Close()
	// Stopped again at once: g has not started again.
	h2 := start(t, p, opts)
	h2.r.Stop()
	h2.finished(20 * time.Second)
	h2.r.Close()
	start(t, p, opts).finished(30 * time.Second)
	seen := map[string]int{}
	for _, l := range lines(t, ledger) {
		seen[l]++
	}
	for _, m := range []string{"1", "2"} {
		if seen[m] != 1 {
			t.Errorf("unit m=%s ran %d times (%v); want once, kept across two stops", m, seen[m], lines(t, ledger))
		}
	}
}

// TestAServiceThatDiesFailsItsPhaseBeforeTheNextStep: the queue paused
// between two steps of a phase that needs a service, the service dies,
// the queue goes on: the next step never starts against no server; the
// phase fails with the service's last words.
func TestAServiceThatDiesFailsItsPhaseBeforeTheNextStep(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	p := loadCampaign(t, fmt.Sprintf(`
name: svcdies
phases:
  - id: serve
    gpus: none
    service:
      run: |
        echo ready; while [ ! -e %[1]s/die ]; do sleep 0.05; done; echo "CUDA error: an illegal memory access"; exit 3
      ready: {log: ready, timeout: 30s}
  - id: bench
    gpus: none
    needs: [serve]
    steps:
      - run: |
          echo one >> %[2]s; while [ ! -e %[1]s/go ]; do sleep 0.05; done
      - run: |
          echo two >> %[2]s
`, dir, ran))
	h := start(t, p, testOptions(t))
	h.kind(StepStarted, "bench")
	h.r.Pause()
	os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
	h.until(20*time.Second, "step 1's end", func(e Event) bool { return e.Kind == StepFinished && e.Phase == "bench" })
	os.WriteFile(filepath.Join(dir, "die"), nil, 0o644)
	h.until(20*time.Second, "the service's end", func(e Event) bool { return e.Kind == PhaseFinished && e.Phase == "serve" })
	h.r.Resume()
	st := h.finished(30 * time.Second)
	if got := lines(t, ran); !slices.Equal(got, []string{"one"}) {
		t.Errorf("steps run %v; want only the first: the second would have met no server", got)
	}
	b := st.Phase("bench")
	if b.Status != Failed || !strings.Contains(b.Reason, "illegal memory access") || b.Steps[0].Status != Done {
		t.Errorf("bench = %s (%s), step 1 %s; want failed with the service's last words, step 1 done", b.Status, b.Reason, b.Steps[0].Status)
	}
}

// TestRunnerAndSupervisorBothKilled: the runner and a step's supervisor
// both killed -9 while the step has a setsid daemon, a double-forked one
// and a process that ignores SIGTERM and SIGINT: the next runner stops
// what is left of the step's tree (said) and only then runs the step
// again; nothing of the campaign is left at its end.
func TestRunnerAndSupervisorBothKilled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger")
	path := filepath.Join(dir, "c.yaml")
	p := writeCampaign(t, path, fmt.Sprintf(`
name: bothkilled
phases:
  - id: g
    gpus: none
    steps:
      - run: |
          for f in %[1]s/pid.*; do [ -e "$f" ] || continue; s=$(cut -d' ' -f3 /proc/$(cat $f)/stat 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ] && echo "left alive: $f" >> %[2]s; done
          echo start >> %[2]s
          if [ ! -e %[1]s/once ]; then
            touch %[1]s/once
            setsid sh -c 'echo $$ > %[1]s/pid.setsid; exec sleep 600' &
            ( ( sh -c 'echo $$ > %[1]s/pid.double; exec sleep 600' & ) & )
            sh -c 'trap "" TERM INT; echo $$ > %[1]s/pid.deaf; while :; do sleep 1; done' &
            sleep 600
          fi
`, dir, ledger))
	state := filepath.Join(dir, "state")
	killRunnerMidStep(t, p.File, state, `"kind":"step-pid","phase":"g"`)
	var sup int
	for _, rec := range journalRecords(t, state) {
		if rec.Kind == recStepPID && rec.Phase == "g" {
			sup = rec.PID
		}
	}
	testutil.Eventually(t, 10*time.Second, "the step's three processes", func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, "pid.*"))
		return len(m) == 3
	})
	if sup <= 0 {
		t.Fatal("no supervisor pid journaled")
	}
	syscall.Kill(sup, syscall.SIGKILL)
	st := startAgain(t, p, state).finished(60 * time.Second)
	if g := st.Phase("g"); g.Status != Done {
		t.Errorf("g = %s (%s)", g.Status, g.Reason)
	}
	got := lines(t, ledger)
	for _, l := range got {
		if strings.HasPrefix(l, "left") {
			t.Errorf("the step ran again beside what its first run left: %v; warnings %q", got, st.Warnings)
			break
		}
	}
	m, _ := filepath.Glob(filepath.Join(dir, "pid.*"))
	for _, f := range m {
		b, _ := os.ReadFile(f)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if state, _, ok := supervise.ProcStat(pid); ok && state != 'Z' {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("%s (pid %d) outlived its step's supervisor and the campaign", filepath.Base(f), pid)
		}
	}
	said := slices.ContainsFunc(st.Warnings, func(w string) bool { return strings.Contains(w, "stopped first what its tree left running") })
	if !said {
		t.Errorf("the stop of what the tree left is not said: %q", st.Warnings)
	}
}

// TestATryStartedAgainIsReadoptedAfterTheRunnerDies: a step's supervisor
// killed -9, the runner starts its try 2, and the runner is then killed
// -9 too: the next runner re-adopts try 2 (the end journaled for try 1 is
// not its end), which ends done; the step ran twice, not three times, and
// the phase is done, not failed.
func TestATryStartedAgainIsReadoptedAfterTheRunnerDies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger")
	path := filepath.Join(dir, "c.yaml")
	p := writeCampaign(t, path, fmt.Sprintf(`
name: retried
phases:
  - id: g
    gpus: none
    steps:
      - run: |
          echo start >> %[2]s
          if [ ! -e %[1]s/once ]; then touch %[1]s/once; sleep 600; fi
          sleep 2
          echo end >> %[2]s
`, dir, ledger))
	state := filepath.Join(dir, "state")
	killed := false
	killRunnerWhen(t, p.File, state, "try 2 started", func() bool {
		for _, rec := range journalRecords(t, state) {
			switch {
			case rec.Kind == recStepPID && rec.Attempt == 1 && !killed:
				if _, err := os.Stat(filepath.Join(dir, "once")); err != nil {
					return false // try 1's command has not begun
				}
				syscall.Kill(rec.PID, syscall.SIGKILL) // try 1's supervisor
				killed = true
			case rec.Kind == recStepPID && rec.Attempt == 2:
				return true
			}
		}
		return false
	})
	h := startAgain(t, p, state)
	st := h.finished(60 * time.Second)
	if g := st.Phase("g"); g.Status != Done {
		t.Errorf("g = %s (%s); want done: try 2 was running when the runner died", g.Status, g.Reason)
	}
	if got := lines(t, ledger); !slices.Equal(got, []string{"start", "start", "end"}) {
		t.Errorf("ledger %v; want try 1 cut, try 2 re-adopted to its end", got)
	}
	// The re-adoption is an event, not a warning: a window's status line
	// keeps the runner's death, not this informational line.
	if slices.ContainsFunc(st.Warnings, func(w string) bool { return strings.Contains(w, "re-adopted") }) {
		t.Errorf("the re-adoption is said as a warning: %q", st.Warnings)
	}
	if !slices.ContainsFunc(h.seen, func(e Event) bool {
		return e.Kind == Progress && strings.Contains(e.Message, "re-adopted step 1 still running")
	}) {
		t.Errorf("the re-adoption is not said as an event")
	}
}

// TestACommandThatEndedIsNotRunAgain: the runner killed -9, then the
// step's supervisor killed after the step's command ended (its exit
// status written) while it stopped what the command left: the step's
// outcome is known, so the next runner records it done from its status
// file, stops what is left, and never runs it again.
func TestACommandThatEndedIsNotRunAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger")
	path := filepath.Join(dir, "c.yaml")
	p := writeCampaign(t, path, fmt.Sprintf(`
name: ended
phases:
  - id: g
    gpus: none
    steps:
      - run: |
          echo start >> %[2]s
          setsid sh -c 'trap "" TERM INT; echo $$ > %[1]s/pid.deaf; while :; do sleep 1; done' &
          echo '{"tok_s": 42}' >> "$GREENLIGHT_RESULTS"
          echo end >> %[2]s
`, dir, ledger))
	state := filepath.Join(dir, "state")
	statuses := filepath.Join(state, "steps", "g", "*", "status.json")
	killRunnerWhen(t, p.File, state, "the command ended, its leftovers being stopped", func() bool {
		m, _ := filepath.Glob(statuses)
		for _, f := range m {
			st, err := supervise.ReadStatus(f)
			if err == nil && st.State == supervise.StateEnded {
				syscall.Kill(st.Supervisor, syscall.SIGKILL)
				return true
			}
		}
		return false
	})
	st := startAgain(t, p, state).finished(60 * time.Second)
	if g := st.Phase("g"); g.Status != Done {
		t.Errorf("g = %s (%s); want done from its status file", g.Status, g.Reason)
	}
	if got := lines(t, ledger); !slices.Equal(got, []string{"start", "end"}) {
		t.Errorf("ledger %v; want the step run once", got)
	}
	var tries []string
	m, _ := filepath.Glob(filepath.Join(state, "steps", "g", "*"))
	for _, f := range m {
		if fi, err := os.Stat(f); err == nil && fi.IsDir() {
			tries = append(tries, filepath.Base(f))
		}
	}
	if len(tries) != 1 {
		t.Errorf("step folders %v; want the one try", tries)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "pid.deaf"))
	if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 {
		if s, _, ok := supervise.ProcStat(pid); ok && s != 'Z' {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("what the step left (pid %d) still runs", pid)
		}
	}
}
