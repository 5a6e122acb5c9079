package report

import (
	"math"
	"strings"
	"testing"

	"github.com/greenlight-run/greenlight/results"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/state"
)

// TestStatIsStudentsT: the interval is t(0.975, n-1)·s/√n, checked
// against values computed by hand (t tables), and one run shows its
// value alone.
func TestStatIsStudentsT(t *testing.T) {
	s := results.StatOf("", []float64{10, 12, 14}) // mean 12, s = 2, t(0.975, 2) = 4.302653
	if s.N != 3 || s.Mean != 12 || math.Abs(s.Half-4.302653*2/math.Sqrt(3)) > 1e-5 || math.Abs(s.CV-2.0/12) > 1e-12 {
		t.Errorf("StatOf = %+v; want mean 12, half-width 4.96828, CV 0.1667", s)
	}
	s = results.StatOf("", []float64{100, 101, 99, 100, 100}) // s = 0.70711, t(0.975, 4) = 2.776445
	if math.Abs(s.Half-2.776445*0.7071068/math.Sqrt(5)) > 1e-5 {
		t.Errorf("n=5 half-width %v", s.Half)
	}
	if one := results.StatOf("", []float64{7}); one.N != 1 || one.Mean != 7 || one.Half != 0 {
		t.Errorf("one run = %+v", one)
	}
	if got := statCell(results.StatOf("", []float64{10, 12, 14}), true); !strings.Contains(got, "12 ± 5 (n=3)") || !strings.Contains(got, "⚠") {
		t.Errorf("a noisy cell = %q", got)
	}
	if got := statCell(results.StatOf("", []float64{100, 101, 99, 100, 100}), false); strings.Contains(got, "⚠") {
		t.Errorf("a quiet cell is marked: %q", got)
	}
}

// TestSweepTable: the first axis down, the others across, one table per
// metric; a point cut by until: says so.
func TestSweepTable(t *testing.T) {
	p := parsePlan(t, "/c/c.yaml", `name: t
phases:
  - id: g
    sweep: {m: [1, 8], shape: [up, down]}
    repeat: 2
    steps:
      - run: |
          true
`)
	ph := p.Phases[0]
	ps := runner.PhaseState{ID: "g", Title: "g", Status: runner.Done}
	for i, st := range ph.Steps {
		ss := runner.StepState{Index: i, Status: runner.Done}
		m := []float64{1, 1, 8, 8}[st.Unit.Point]
		if st.Unit.Point != 3 {
			ss.Results = []runner.Row{{Cols: []string{"m", "repeat", "tflops"}, Values: []any{m, float64(st.Unit.Repeat), m * 10 * float64(st.Unit.Repeat)}}}
		} else {
			ss.Status, ss.Reason, ss.Skip = runner.Skipped, "until: failed: m=1,shape=down missed its expectation", state.SkipCut
		}
		ps.Steps = append(ps.Steps, ss)
	}
	got := sweepTables(ph, ps, nil)
	for _, want := range []string{"#### tflops", "| m | shape=up | shape=down |", "| 1 | 15 ± 64 (n=2) ⚠ CV 47.1% | 15 ± 64 (n=2) ⚠ CV 47.1% |", "| 8 | 120 ± 508 (n=2) ⚠ CV 47.1% | cut (until: failed) |"} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "#### repeat") || strings.Contains(got, "#### m\n") {
		t.Errorf("axis columns are tables of their own:\n%s", got)
	}
}

// TestTinyIntervalSaidAsBound: an interval narrower than the mean's last
// digit is said as a bound, never as ± 0.
func TestTinyIntervalSaidAsBound(t *testing.T) {
	if got := statCell(results.Stat{N: 3, Mean: 0.0111, Half: 0.00001}, false); got != "0.0111 ± <0.0001 (n=3)" {
		t.Errorf("%q", got)
	}
	if got := statCell(results.Stat{N: 3, Mean: 681, Half: 0}, false); got != "681 ± 0 (n=3)" {
		t.Errorf("no spread at all: %q", got)
	}
}
