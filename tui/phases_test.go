package tui

import (
	tea "charm.land/bubbletea/v2"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// TestFitTitleKeepsThePoint: a phase copied per point of a swept service
// keeps its point's values when its title is cut, so its copies stay told
// apart at 80 columns; any other title is cut at its end.
func TestFitTitleKeepsThePoint(t *testing.T) {
	point := func(title string, vals ...string) *campaign.ServicePoint {
		pt := &campaign.ServicePoint{Title: title}
		for i, v := range vals {
			pt.Values = append(pt.Values, campaign.Setting{Axis: fmt.Sprint("a", i), Value: v})
		}
		return pt
	}
	for _, tt := range []struct {
		title string
		pt    *campaign.ServicePoint
		w     int
		want  string
	}{
		{"Decode throughput · max_num_seqs=64,max_batched=2048", point("Decode throughput", "64", "2048"), 20, "Decode th… · 64,2048"},
		{"vLLM server · max_num_seqs=256,max_batched=8192", point("vLLM server", "256", "8192"), 20, "vLLM ser… · 256,8192"},
		{"serve · tp=8", point("serve", "8"), 20, "serve · tp=8"},
		{"a very long title · with a dot but no point", nil, 16, "a very long tit…"},
		{"x · a=100000000,b=200000000", point("x", "100000000", "200000000"), 12, "100000000,2…"},
	} {
		if got := fitTitle(tt.title, tt.pt, tt.w); got != tt.want {
			t.Errorf("fitTitle(%q, %d) = %q; want %q", tt.title, tt.w, got, tt.want)
		}
	}
}

// TestPendingUnderASecond: a pending phase whose measured time rounds to
// nothing says "under 1s", never "about 0s".
func TestPendingUnderASecond(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	m := newModel(Options{Runner: &fakeRunner{}, Sampler: newFakeGPUs(0), Now: func() time.Time { return t0 }, Output: io.Discard})
	p := runner.PhaseState{ID: "bench", Title: "bench", Status: runner.Pending, ETA: runner.ETA{Known: true, Remaining: 300 * time.Millisecond}}
	m.state = &runner.State{Phases: []runner.PhaseState{p}}
	if row := m.phaseRow(0, p, 120); strings.Contains(row, "about 0s") || !strings.Contains(row, "under 1s") {
		t.Errorf("row %q", row)
	}
	p.ETA.Remaining = 90 * time.Second
	if row := m.phaseRow(0, p, 120); !strings.Contains(row, "about 1m30s") {
		t.Errorf("row %q", row)
	}
}

// TestStoppedReadsStopped: a campaign stopped with one phase of five done
// says "1/5 phases done · stopped", and its bar is a fifth full, not full.
func TestStoppedReadsStopped(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	m := newModel(Options{Runner: &fakeRunner{}, Sampler: newFakeGPUs(0), Now: func() time.Time { return t0 }, Output: io.Discard})
	m.w = 200
	st := &runner.State{Started: t0.Add(-time.Hour), Ended: t0, Finished: true}
	for i, s := range []runner.Status{runner.Done, runner.Stopped, runner.Stopped, runner.Stopped, runner.Stopped} {
		st.Phases = append(st.Phases, runner.PhaseState{ID: fmt.Sprint("p", i), Status: s})
	}
	m.state = st
	line := m.headerView()
	if !strings.Contains(line, "1/5 phases done · stopped") {
		t.Errorf("header %q; want 1/5 phases done · stopped", line)
	}
	if full := strings.Count(line, "█"); full == 0 || full > 24/5+1 {
		t.Errorf("header %q: the bar has %d full cells; want about a fifth of 24", line, full)
	}
}

// TestNoteKey: N opens a line to type a note; enter gives it to the
// runner, esc drops it; keys typed meanwhile are the note's, not commands.
func TestNoteKey(t *testing.T) {
	s := newScreenTest(t, 120, 40, 2)
	s.screen(t, "k25-profile")
	s.tm.Send(tea.KeyPressMsg{Code: 'N', Text: "N"})
	for _, r := range "skip s? q" {
		s.tm.Send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	s.screen(t, "note: skip s? q")
	s.tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	testutil.Within(5*time.Second, func() bool { return s.ctl.got() != "" })
	if got := s.ctl.got(); got != "note skip s? q" {
		t.Errorf("the runner was asked %q; want the note alone (no skip, no quit)", got)
	}
}

// TestWarningsStayUntilRead: a warning stays on the status line though
// events follow it, until W lists it; any key then closes the list and
// the line goes back to the newest event.
func TestWarningsStayUntilRead(t *testing.T) {
	s := newScreenTest(t, 120, 40, 2)
	s.screen(t, "k25-profile")
	st := loadingState(filepath.Join(s.dir, "serve.log"))
	s.events <- runner.Event{Kind: runner.Warning, State: st, Time: t0.Add(20 * time.Minute), Message: "the campaign's runner (pid 41) went away; a new one resumed it"}
	s.events <- runner.Event{Kind: runner.StepStarted, State: st, Time: t0.Add(20 * time.Minute), Phase: "serve", Message: "re-adopted step 1 still running"}
	s.screen(t, "went away; a new one resumed it · W: read")
	s.tm.Send(tea.KeyPressMsg{Code: 'W', Text: "W"})
	s.screen(t, "greenlight warnings")
	s.tm.Send(tea.KeyPressMsg{Code: 'x', Text: "x"})
	got := s.screen(t, "re-adopted step 1 still running")
	if strings.Contains(got, "W: read") {
		t.Errorf("the warning is still on the status line after it was read:\n%s", got)
	}
}

// TestHoldOnTheStatusLine: while an editor holds the results file, the
// status line says so, whatever events follow, with the warnings not yet
// read beside it; once it lets go, the line goes back to the events.
func TestHoldOnTheStatusLine(t *testing.T) {
	s := newScreenTest(t, 120, 40, 2)
	s.screen(t, "k25-profile")
	st := loadingState(filepath.Join(s.dir, "serve.log"))
	held := *st
	held.ReportHeld = "r.md is open in vim (pid 77): written when you leave it"
	s.events <- runner.Event{Kind: runner.Warning, State: &held, Time: t0.Add(20 * time.Minute), Message: "noise: gemm m=64 disagrees"}
	s.events <- runner.Event{Kind: runner.StepStarted, State: &held, Time: t0.Add(20 * time.Minute), Phase: "serve", Message: "step 2 started"}
	s.screen(t, "✎ r.md is open in vim (pid 77): written when you leave it · ⚠ 1 unread (W)")
	s.events <- runner.Event{Kind: runner.Progress, State: st, Time: t0.Add(21 * time.Minute)}
	got := s.screen(t, "noise: gemm m=64 disagrees · W: read")
	if strings.Contains(got, "open in vim") {
		t.Errorf("the hold is still on the status line after the editor let go:\n%s", got)
	}
}

// TestAServiceServingIsNotDone: a service up and serving is not a phase
// done: "1/3 phases done · 1 serving".
func TestAServiceServingIsNotDone(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	m := newModel(Options{Runner: &fakeRunner{}, Sampler: newFakeGPUs(0), Now: func() time.Time { return t0 }, Output: io.Discard})
	m.w = 200
	st := &runner.State{Started: t0.Add(-time.Hour)}
	for i, s := range []runner.Status{runner.Ready, runner.Done, runner.Running} {
		st.Phases = append(st.Phases, runner.PhaseState{ID: fmt.Sprint("p", i), Status: s})
	}
	m.state = st
	if line := m.headerView(); !strings.Contains(line, "1/3 phases done · 1 serving") {
		t.Errorf("header %q; want 1/3 phases done · 1 serving", line)
	}
}

// TestLogStepOfAFinishedPhase: a phase that ended on a unit it never ran
// (stopped as precise) shows the log of the last step that ran, not "no
// log yet" of the one it stopped at.
func TestLogStepOfAFinishedPhase(t *testing.T) {
	ps := &runner.PhaseState{Status: runner.Done, Current: 3, Steps: []runner.StepState{
		{Log: "a1-s1-t1.log", Status: runner.Done}, {Log: "a1-s2-t1.log", Status: runner.Done},
		{Status: runner.Skipped}, {Status: runner.Skipped},
	}}
	if got := logStep(ps); got != 1 {
		t.Errorf("logStep = %d; want 1, the last step that ran", got)
	}
	ps.Status, ps.Current = runner.Running, 2
	if got := logStep(ps); got != 2 {
		t.Errorf("running: logStep = %d; want the current step, 2", got)
	}
}

// TestSmallWindowFollowsTheRunningPhase: at 80x24 the window shows six
// phase rows; with ten phases the running one (the eighth, then the
// ninth) is among them and selected, until the person picks another;
// back on the running phase, it follows again.
func TestSmallWindowFollowsTheRunningPhase(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	m := newModel(Options{Runner: &fakeRunner{}, Sampler: newFakeGPUs(0), Now: func() time.Time { return t0 }, Output: io.Discard})
	m.w, m.h = 80, 24
	stateAt := func(running int) *runner.State {
		st := &runner.State{Started: t0.Add(-time.Hour), Now: t0}
		for i := range 10 {
			p := runner.PhaseState{ID: fmt.Sprint("p", i), Title: fmt.Sprintf("phase number %d", i), Status: runner.Pending}
			switch {
			case i < running:
				p.Status = runner.Done
			case i == running:
				p.Status, p.Started = runner.Running, t0.Add(-time.Minute)
				p.Steps = []runner.StepState{{Name: "bench", Status: runner.Running, Progress: -1, Started: p.Started}}
			}
			st.Phases = append(st.Phases, p)
		}
		return st
	}
	shown := func() string { return strings.Join(m.phasesView(m.w, m.phaseRows()), "\n") }
	m.onEvent(runner.Event{State: stateAt(7)})
	if m.phaseRows() >= 10 || !strings.Contains(shown(), "phase number 7") || m.sel != 7 {
		t.Errorf("%d rows, selected %d, the running phase 7 not shown:\n%s", m.phaseRows(), m.sel, shown())
	}
	m.onEvent(runner.Event{State: stateAt(8)})
	if m.sel != 8 || !strings.Contains(shown(), "phase number 8") {
		t.Errorf("selected %d after phase 8 started:\n%s", m.sel, shown())
	}
	m.onKey(tea.KeyPressMsg{Code: tea.KeyUp})
	m.onEvent(runner.Event{State: stateAt(9)})
	if m.sel != 7 {
		t.Errorf("selected %d; the person picked phase 7, and it stays", m.sel)
	}
	m.onKey(tea.KeyPressMsg{Code: tea.KeyDown})
	m.onKey(tea.KeyPressMsg{Code: tea.KeyDown})
	m.onEvent(runner.Event{State: stateAt(9)})
	if m.sel != 9 || m.picked {
		t.Errorf("selected %d (picked %v); back on the running phase it follows again", m.sel, m.picked)
	}
}

// TestHeaderWaitsOnAKeptServer: with only a kept server left, the header
// says it waits for you, and no end time (it ends when you say).
func TestHeaderWaitsOnAKeptServer(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	m := newModel(Options{Runner: &fakeRunner{}, Sampler: newFakeGPUs(0), Now: func() time.Time { return t0 }, Output: io.Discard})
	m.w = 200
	m.state = &runner.State{Started: t0.Add(-time.Minute), ETA: runner.ETA{Known: true}, Phases: []runner.PhaseState{
		{ID: "serve", Status: runner.Ready, Kept: "kept for decode (failed): r on decode runs it again on this server, s on it lets the server go"},
		{ID: "decode", Status: runner.Failed}}}
	if line := m.headerView(); !strings.Contains(line, "waits for you: serve kept") || strings.Contains(line, "ends ") {
		t.Errorf("header %q; want it waiting for you, no end time", line)
	}
}
