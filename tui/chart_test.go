package tui

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/link"
)

const sweepYAML = `
name: k25-gemm
phases:
  - id: gemm
    title: GEMM sweep
    sweep: {m: [1, 16, 256, 2048], shape: [up, down]}
    repeat: 2
    steps:
      - run: |
          true
  - id: decode
    title: decode benchmark
    gpus: [0, 1]
    steps:
      - run: |
          true
`

// sweepState: the GEMM sweep half measured (m up to 256 for up, m=1 for
// down), the decode phase done over the fake GPUs' five minutes.
func sweepState(t *testing.T, plan *campaign.Plan) *runner.State {
	ph := plan.Phase("gemm")
	gemm := runner.PhaseState{ID: "gemm", Title: "GEMM sweep", Status: runner.Running, Started: t0, Attempt: 1}
	for i, st := range ph.Steps {
		ss := runner.StepState{Index: i, Status: runner.Pending, Point: ph.Sweep.Key(*st.Unit)}
		m := []float64{1, 16, 256, 2048}[st.Unit.Values[0]]
		shape := st.Unit.Values[1]
		if m <= 256 && shape == 0 || m == 1 {
			ss.Status = runner.Done
			tf := m * 0.5 / float64(1+shape)
			if st.Unit.Repeat == 2 {
				tf *= 1.1
			}
			ss.Results = []runner.Row{{Cols: []string{"tflops", "time_ms"}, Values: []any{tf, 100 / (m + 1)}}}
		}
		if ss.Status == runner.Pending && gemm.Current == 0 {
			ss.Status, gemm.Current = runner.Running, i // the point running now
		}
		gemm.Steps = append(gemm.Steps, ss)
	}
	decode := runner.PhaseState{ID: "decode", Title: "decode benchmark", Status: runner.Done, Started: t0, Ended: t0.Add(5 * time.Minute), GPUs: []int{0, 1},
		Steps: []runner.StepState{{Name: "true", Status: runner.Done}}}
	return &runner.State{Name: "k25-gemm", Started: t0, Now: t0.Add(20 * time.Minute), Phases: []runner.PhaseState{gemm, decode}}
}

// TestChartScreen: c opens the selected phase's chart: the sweep's first
// metric along m (log scale over three decades), a line per shape, the
// points measured said; tab turns to the next metric; ↓ shows the next
// phase's GPUs over it; c closes it. Held to goldens at 80x24 and 200x60.
func TestChartScreen(t *testing.T) {
	for _, size := range []struct{ w, h int }{{80, 24}, {200, 60}} {
		plan, err := campaign.Parse("c.yaml", "/c/c.yaml", []byte(sweepYAML))
		if err != nil {
			t.Fatal(err)
		}
		s := newScreenTestOf(t, plan, size.w, size.h, 2)
		s.events <- runner.Event{Kind: runner.Progress, Phase: "gemm", State: sweepState(t, plan), Time: t0.Add(20 * time.Minute)}
		s.screen(t, "GEMM sweep")
		s.tm.Send(tea.KeyPressMsg{Code: 'c', Text: "c"})
		got := s.screen(t, "tflops by m")
		name := func(what string) string { return fmt.Sprintf("chart-%s-%dx%d.golden", what, size.w, size.h) }
		golden(t, name("sweep"), got)
		for _, want := range []string{"4 of 8 points measured", "shape=up", "shape=down", "(log scale)", "1", "16", "256", "2048", "⣿"} {
			if !strings.Contains(got, want) {
				t.Errorf("%dx%d: the sweep's chart lacks %q:\n%s", size.w, size.h, want, got)
			}
		}
		if n := strings.Count(got, "\n"); n > size.h {
			t.Errorf("%dx%d: the chart is %d lines", size.w, size.h, n)
		}
		s.tm.Send(tea.KeyPressMsg{Code: tea.KeyTab})
		s.screen(t, "time_ms by m")
		s.tm.Send(tea.KeyPressMsg{Code: tea.KeyDown})
		got = s.screen(t, "GPU utilization over the phase")
		golden(t, name("gpus"), got)
		for _, want := range []string{"GPU 0", "GPU 1", "time from the phase's start", "100", "5m"} {
			if !strings.Contains(got, want) {
				t.Errorf("%dx%d: the GPU chart lacks %q:\n%s", size.w, size.h, want, got)
			}
		}
		s.tm.Send(tea.KeyPressMsg{Code: 'c', Text: "c"})
		s.screen(t, "Phases")
	}
}

// TestSkipPointKey: x on a running sweep asks to skip the running point,
// naming it as the runner does (the phase line likewise), and y skips
// that point alone; on a phase without a sweep it says what it is for.
func TestSkipPointKey(t *testing.T) {
	plan, err := campaign.Parse("c.yaml", "/c/c.yaml", []byte(sweepYAML))
	if err != nil {
		t.Fatal(err)
	}
	s := newScreenTestOf(t, plan, 120, 40, 2)
	st := sweepState(t, plan)
	s.events <- runner.Event{Kind: runner.Progress, Phase: "gemm", State: st, Time: t0.Add(20 * time.Minute)}
	s.screen(t, "GEMM sweep")
	want := plan.Phase("gemm").Sweep.Key(*plan.Phase("gemm").Steps[st.Phases[0].Current].Unit)
	s.tm.Send(tea.KeyPressMsg{Code: 'x', Text: "x"})
	s.screen(t, "Skip point "+want+" of GEMM sweep")
	// The sweep moves on while the question is open: the question keeps
	// the point x was pressed on and says which runs now.
	moved := sweepState(t, plan)
	moved.Phases[0].Steps[moved.Phases[0].Current].Point = "m=2048,shape=up"
	s.events <- runner.Event{Kind: runner.Progress, Phase: "gemm", State: moved, Time: t0.Add(20 * time.Minute)}
	s.screen(t, "Skip point "+want+", its repeats left? y/n · x was pressed on it; m=2048,shape=up runs now")
	s.events <- runner.Event{Kind: runner.Progress, Phase: "gemm", State: sweepState(t, plan), Time: t0.Add(20 * time.Minute)}
	s.tm.Send(tea.KeyPressMsg{Code: 'y', Text: "y"})
	testutil.Within(5*time.Second, func() bool { return s.ctl.got() == "skip-point gemm "+want })
	if got := s.ctl.got(); got != "skip-point gemm "+want {
		t.Errorf("the runner was asked %q; want to skip point %s of gemm", got, want)
	}
	// The file edited since the runner read it: the window's plan has
	// another point at that step, and the window names the runner's.
	edited := sweepState(t, plan) // a new state: the window holds the one sent
	edited.Phases[0].Steps[edited.Phases[0].Current].Point = "m=2048,shape=down"
	s.events <- runner.Event{Kind: runner.Progress, Phase: "gemm", State: edited, Time: t0.Add(21 * time.Minute)}
	s.screen(t, "point m=2048,shape=down")
	s.tm.Send(tea.KeyPressMsg{Code: 'x', Text: "x"})
	s.screen(t, "Skip point m=2048,shape=down of GEMM sweep")
	s.tm.Send(tea.KeyPressMsg{Code: 'n', Text: "n"})
	s.tm.Send(tea.KeyPressMsg{Code: tea.KeyDown})
	s.tm.Send(tea.KeyPressMsg{Code: 'x', Text: "x"})
	s.screen(t, "x skips the running point of a sweep")
}

// TestServerLine: while a phase that uses a scraped service runs, the
// Phases header says what the server sees, with its tokens/s of the last
// scrapes; a series it does not export is left out.
func TestServerLine(t *testing.T) {
	m := func(v float64) *float64 { return &v }
	var hist []*float64
	for _, v := range []float64{1000, 2500, 4000, 4210} {
		hist = append(hist, m(v))
	}
	s := newScreenTest(t, 120, 40, 2, func(f *fakeGPUs) {
		f.servers = map[string]*link.ServerLine{"serve": {At: t0, Running: m(64), Waiting: m(12), KV: m(0.93), TokS: m(4210), Preemptions: m(3), History: hist}}
	})
	st := loadingState(filepath.Join(s.dir, "serve.log"))
	st.Phases[0].Status, st.Phases[0].Steps[0].Stage = runner.Ready, ""
	st.Phases[1].Status = runner.Running
	s.events <- runner.Event{Kind: runner.PhaseStarted, Phase: "macro", State: st, Time: t0.Add(21 * time.Minute)}
	got := s.screen(t, "4,210 tok/s")
	if !strings.Contains(got, "Phases serve: running 64 · waiting 12 · KV 93% · 4,210 tok/s · 3 preempted") {
		t.Errorf("the server's line:\n%s", got)
	}
}

// TestChartAsksForRows: a window attached to a runner gets events without
// results rows; its chart asks the runner for the phase's rows and draws
// them.
func TestChartAsksForRows(t *testing.T) {
	plan, err := campaign.Parse("c.yaml", "/c/c.yaml", []byte(sweepYAML))
	if err != nil {
		t.Fatal(err)
	}
	s := newScreenTestOf(t, plan, 120, 40, 2)
	st := sweepState(t, plan)
	s.ctl.mu.Lock()
	s.ctl.rows = map[string][]runner.StepState{"gemm": st.Phases[0].Steps}
	s.ctl.mu.Unlock()
	bare := *st
	bare.Phases = append([]runner.PhaseState(nil), st.Phases...)
	var steps []runner.StepState
	for _, ss := range st.Phases[0].Steps {
		ss.Results = nil // as the link sends them
		steps = append(steps, ss)
	}
	bare.Phases[0].Steps = steps
	s.events <- runner.Event{Kind: runner.Progress, Phase: "gemm", State: &bare, Time: t0.Add(20 * time.Minute)}
	s.screen(t, "GEMM sweep")
	s.tm.Send(tea.KeyPressMsg{Code: 'c', Text: "c"})
	s.screen(t, "4 of 8 points measured")
}
