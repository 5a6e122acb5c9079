package runner

// A step's facts: what the monitor saw of its GPUs while it ran (their
// power, energy and clock) and why its rows are doubtful (a GPU
// throttled, a process not of the campaign, an XID), judged once, as the
// step ends, and journaled by the runner with the step. Every view reads
// them from the state; none judges the step again, and nothing is sent
// back up to the runner: a search decides by them at once.

import (
	"fmt"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

// StepFacts are what the monitor saw of one run of a step, fixed at its
// end. The zero value is a run the monitor saw no reading of.
type StepFacts struct {
	// Readings is how many GPU readings fell in the run's span, over all
	// its GPUs: 0 when the monitor read none (the figures below are then
	// unknown, not zero).
	Readings int `json:"readings,omitempty"`
	// PowerW is the summed mean power of its GPUs while it ran, W, over
	// PowerGPUs GPUs that had a power reading.
	PowerW    float64 `json:"power_w,omitempty"`
	PowerGPUs int     `json:"power_gpus,omitempty"`
	// EnergyWh is the energy its GPUs drew while it ran, Wh; 0 when the
	// readings cover only part of the run (ReadFrom).
	EnergyWh float64 `json:"energy_wh,omitempty"`
	// EnergyFrom is what EnergyWh rests on: EnergyCounter, the GPUs'
	// energy counters read at the run's start and end; EnergyInterpolated,
	// their counters as read at each sampling round, interpolated at the
	// run's edges; EnergyPower, power readings integrated over the
	// sampling interval (a GPU without a counter).
	EnergyFrom string `json:"energy_from,omitempty"`
	// ReadFrom, when set, is the first reading of a run the monitor saw
	// only from part-way (a runner started again while it ran, which
	// re-adopted it; a GPU source that answered only after it began): its
	// figures and stamp are of the run from then.
	ReadFrom time.Time `json:"read_from,omitzero"`
	// SMClockMHz is the mean SM clock its GPUs' work ran at, MHz.
	SMClockMHz float64 `json:"sm_mhz,omitempty"`
	// SMClockSamples is how many of the driver's own clock samples, over
	// the span its kernels ran, SMClockMHz is the mean of; 0 when it is
	// the mean of the sampler's rounds (a source without them).
	SMClockSamples int `json:"sm_samples,omitempty"`
	// Stamp is why its rows were taken under bad conditions, one reason a
	// line; nil when nothing was wrong. A search never decides by a
	// stamped run.
	Stamp []string `json:"stamp,omitempty"`
}

// What a run's energy rests on (StepFacts.EnergyFrom), strongest first.
const (
	EnergyCounter      = "counter"
	EnergyInterpolated = "counter-interpolated"
	EnergyPower        = "power"
)

// EnergyBasis says in words what a run's energy rests on.
func EnergyBasis(from string) string {
	switch from {
	case EnergyCounter:
		return "the GPUs' energy counters read at the step's start and end"
	case EnergyInterpolated:
		return "the GPUs' energy counters at each reading, interpolated at the step's edges"
	case EnergyPower:
		return "power readings integrated over the sampling interval (no energy counter)"
	}
	return "power readings"
}

// Counters are GPUs' energy counters read at one moment: mJ since each
// driver loaded, by GPU label ("3", "node2:3").
type Counters struct {
	At time.Time          `json:"at"`
	MJ map[string]float64 `json:"mj"`
}

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

// Stamped is the run's stamp in one line ("" when nothing was wrong).
func (f *StepFacts) Stamped() string {
	if f == nil {
		return ""
	}
	return strings.Join(f.Stamp, "; ")
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
