package runner

// A step's facts: what the monitor saw of its GPUs while it ran (their
// power, energy and clock) and why its rows are doubtful (a GPU
// throttled, a process not of the campaign, an XID), judged once, as the
// step ends, and journaled by the runner with the step. Every view reads
// them from the state; none judges the step again, and nothing is sent
// back up to the runner: a search decides by them at once.

import (
	"fmt"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

// Meter reads the GPUs' energy counters now; nil where none can be read
// on demand. It runs on the runner's loop as a step starts: it must be
// quick (a driver call a GPU).
type Meter func() *Counters

// meter reads the counters, a panic said as a warning.
func (r *Runner) meter() (c *Counters) {
	if r.opts.Meter == nil {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			c = nil
			r.warn(fmt.Sprintf("reading the GPUs' energy counters failed (%v): steps' energy is read from the sampling rounds", p))
		}
	}()
	return r.opts.Meter()
}

// StepSeen is a run of a step that has just ended, as the runner shows it
// to its witness.
type StepSeen struct {
	Phase *campaign.Phase
	State PhaseState // the phase as it is at the step's end
	Step  StepState  // the step, its start and end set
	// Claimed are the files its run claimed as artifacts (claims.go).
	Claimed []string
}

// Witness tells the facts of a run that has just ended; nil facts when
// it has none to tell. It runs on the runner's loop, once a run: it must
// be quick (in-memory readings), and what it panics with is said, not
// the runner's end. The runner's process gives one over its GPU sampler
// (Options.Witness).
type Witness func(StepSeen) *StepFacts

// witnessed asks the witness for the facts of the run that just ended
// and journals them, before its end: a search reads its stamp at once,
// and a rebuild reads them from the journal.
func (sr *stepRun) witnessed() {
	r, pr := sr.r, sr.pr
	ss := &pr.state.Steps[sr.step.Index]
	if r.opts.Witness == nil || ss.Started.IsZero() {
		return
	}
	var claimed []string
	for _, c := range r.claims.byStep[sr.dir] {
		if c.Shared == "" && !c.Outside {
			claimed = append(claimed, c.Path)
		}
	}
	f, err := askWitness(r.opts.Witness, StepSeen{Phase: pr.ph, State: pr.state, Step: *ss, Claimed: claimed})
	if err != nil {
		r.warn(fmt.Sprintf("%s: step %d: the monitor could not tell what it saw of the step's GPUs (%v): its rows carry no stamp, power or clock", pr.ph.Label(), sr.step.Index+1, err))
		return
	}
	if f == nil {
		return
	}
	ss.Facts = f
	r.journal(record{Kind: recFacts, Phase: pr.ph.ID, Step: sr.step.Index, Attempt: sr.try, Facts: f})
	if why := f.Stamped(); why != "" {
		msg := fmt.Sprintf("%s: step %d was taken under bad conditions (%s)", pr.ph.Label(), sr.step.Index+1, why)
		if sw := pr.ph.Sweep; sw != nil && sw.Search != nil {
			msg = fmt.Sprintf("%s: the run at %s was taken under bad conditions (%s): the search runs it again and never decides by it", pr.ph.Label(), ss.Point, why)
		}
		r.emit(Event{Kind: Progress, Phase: pr.ph.ID, Step: sr.step.Index, Message: msg})
	}
}

// askWitness calls w, turning a panic into an error: a monitor's fault
// never ends the campaign.
func askWitness(w Witness, s StepSeen) (f *StepFacts, err error) {
	defer func() {
		if p := recover(); p != nil {
			f, err = nil, fmt.Errorf("it failed: %v", p)
		}
	}()
	return w(s), nil
}
