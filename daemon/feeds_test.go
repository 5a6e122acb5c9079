package daemon

import (
	"fmt"
	"slices"
	"testing"

	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

type stamps struct{ said []string }

func (s *stamps) StampOf(p runner.PhaseState, i int) []string {
	if p.Steps[i].Name == "" || i%2 == 1 { // odd units ran on a throttled GPU
		return []string{"GPU 0 throttled (HW slowdown)", "GPU 1 reported XID 79"}
	}
	return nil
}

func (s *stamps) Stamp(id string, step, attempt int, why string) error {
	s.said = append(s.said, fmt.Sprintf("%s/%d/%d: %s", id, step, attempt, why))
	return nil
}

// TestStampSearches: each finished unit of a search phase that the
// record stamps is stamped in the runner, with every reason; a unit that
// failed, a phase that is no search, and a clean unit are not.
func TestStampSearches(t *testing.T) {
	p, err := campaign.Parse("c.yaml", "/c/c.yaml", []byte(`name: s
phases:
  - id: limit
    search: {axis: c, range: [1, 8], slo: {p99: "<= 50"}}
    steps: [{run: "echo ${c}"}]
  - id: grid
    sweep: {m: [1, 2]}
    steps: [{run: "echo ${m}"}]
`))
	if err != nil {
		t.Fatal(err)
	}
	steps := make([]runner.StepState, 4)
	for i := range steps {
		steps[i] = runner.StepState{Index: i, Name: "u", Status: runner.Done, Attempt: 1}
	}
	steps[3].Status = runner.Failed
	st := &runner.State{Phases: []runner.PhaseState{{ID: "limit", Steps: steps}, {ID: "grid", Steps: steps}}}
	events := make(chan runner.Event, 8)
	for _, e := range []runner.Event{
		{Kind: runner.StepFinished, Phase: "limit", Step: 0, State: st},
		{Kind: runner.StepFinished, Phase: "limit", Step: 1, State: st},
		{Kind: runner.Progress, Phase: "limit", Step: 1, State: st},
		{Kind: runner.StepFinished, Phase: "limit", Step: 3, State: st},
		{Kind: runner.StepFinished, Phase: "grid", Step: 1, State: st},
	} {
		events <- e
	}
	close(events)
	s := &stamps{}
	stampSearches(s, s, p, events)
	want := []string{"limit/1/1: GPU 0 throttled (HW slowdown); GPU 1 reported XID 79"}
	if !slices.Equal(s.said, want) {
		t.Errorf("stamped %q; want %q", s.said, want)
	}
}
