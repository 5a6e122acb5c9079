package tui

import (
	"testing"

	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// TestSearchPlace: a search phase's line says its probe (the values run
// so far, this one among them), the value and the run, never the grid's
// point count; the window's state carries no rows.
func TestSearchPlace(t *testing.T) {
	plan, err := campaign.Parse("c.yaml", "/c/c.yaml", []byte(`name: s
phases:
  - id: limit
    search: {axis: concurrency, range: [1, 512], slo: {p99: "<= 50"}}
    steps: [{run: "echo ${concurrency}"}]
`))
	if err != nil {
		t.Fatal(err)
	}
	ph := plan.Phase("limit")
	steps := make([]runner.StepState, len(ph.Steps))
	at := func(v, rep int) int { // the step of value v's run rep
		for i, st := range ph.Steps {
			if ph.Sweep.Search.Values[st.Unit.Point] == v && st.Unit.Repeat == rep {
				return i
			}
		}
		t.Fatalf("no unit of %d run %d", v, rep)
		return -1
	}
	for i, st := range ph.Steps {
		steps[i] = runner.StepState{Index: i, Point: ph.Sweep.Key(*st.Unit), Status: runner.Pending}
	}
	for _, v := range []int{1, 2} {
		for rep := 1; rep <= 3; rep++ {
			steps[at(v, rep)].Status = runner.Done
		}
	}
	cur := at(4, 2)
	steps[at(4, 1)].Status, steps[cur].Status = runner.Done, runner.Running
	m := newModel(Options{Runner: &fakeRunner{}, Sampler: newFakeGPUs(0), Plan: plan})
	got := m.pointWords(runner.PhaseState{ID: "limit", Status: runner.Running, Current: cur, Steps: steps})
	if want := "probe 3 (≤13) concurrency=4 · run 2"; got != want {
		t.Errorf("said %q; want %q", got, want)
	}
}
