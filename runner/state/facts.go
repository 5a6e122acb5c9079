package state

import (
	"fmt"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/internal/format"
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
	// Server is each service the run used, as its /metrics saw the run:
	// the load at the server, over the run's own window.
	Server []ServerFacts `json:"server,omitempty"`
}

// ServerFacts are a service's /metrics over one run: its running and
// waiting requests' mean and peak, its KV cache's peak, and what its
// counters grew by. A series the server does not expose is nil: not
// known, never zero.
type ServerFacts struct {
	Service string  `json:"service"`
	Scrapes int     `json:"scrapes"`
	EveryS  float64 `json:"every_s,omitempty"` // the median gap between its scrapes
	// Failed is how many scrapes in the window read nothing (the server
	// stopped answering mid-run): the figures rest on the others, and
	// FailedWhy says why ("no answer in 2s (12)").
	Failed    int    `json:"failed,omitempty"`
	FailedWhy string `json:"failed_why,omitempty"`
	// Unseen, when set, says why the scrapes do not cover the run (the
	// monitor was away for part of it): its figures are then not told.
	Unseen string `json:"unseen,omitempty"`
	// Requests running and waiting: their mean over the scrapes and peak.
	Running *Gauge `json:"running,omitempty"`
	Waiting *Gauge `json:"waiting,omitempty"`
	// WaitingForRoom: waiting for a slot or KV cache (vLLM's by-reason
	// gauge, capacity), where the server says it.
	WaitingForRoom *Gauge `json:"waiting_for_room,omitempty"`
	KV             *Gauge `json:"kv,omitempty"` // KV cache used, 0..1
	// What its counters grew by over the run: requests finished, turned
	// away at admission, aborted, preempted.
	Finished  *float64 `json:"finished,omitempty"`
	Rejected  *float64 `json:"rejected,omitempty"`
	Aborted   *float64 `json:"aborted,omitempty"`
	Preempted *float64 `json:"preempted,omitempty"`
}

// Gauge is a gauge over a window: its mean over the scrapes and its peak.
type Gauge struct {
	Mean float64 `json:"mean"`
	Peak float64 `json:"peak"`
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

// Stamped is the run's stamp in one line ("" when nothing was wrong).
func (f *StepFacts) Stamped() string {
	if f == nil {
		return ""
	}
	return strings.Join(f.Stamp, "; ")
}

// Capped says the server held the run below the requested requests in
// flight (LoadVerdicts says it in words): a property of the server's
// setup, not of the moment, so that running the same load again is not
// worth its time.
func (f ServerFacts) Capped(requested float64) bool {
	run, wait := f.Running, f.Waiting
	return requested > 0 && run != nil && wait != nil && f.Scrapes >= 2 && run.Peak < requested-0.5 && wait.Mean >= 0.5
}

// Requested is the most requests in flight rows asked for: their
// max_concurrency, the column every serving format names it by; 0 when
// none says.
func Requested(rows []Row) float64 {
	most := 0.0
	for _, row := range rows {
		for i, c := range row.Cols {
			if f, ok := row.Values[i].(float64); ok && c == "max_concurrency" && f > most {
				most = f
			}
		}
	}
	return most
}

// ServerCapped says a server a run used held it below what its rows
// asked for (ServerFacts.Capped).
func (s StepState) ServerCapped() bool {
	if s.Facts == nil {
		return false
	}
	for _, sf := range s.Facts.Server {
		if sf.Capped(Requested(s.Results)) {
			return true
		}
	}
	return false
}

// LoadVerdicts are what a server's view of a run says against a row that
// asked for requested requests in flight (0: it did not say), each a
// stamp ("load not applied: ..."): capped by the server, when its running
// requests never reached the request while requests waited, half a
// request or more on the mean (a closed-loop client keeps its requests in
// flight: what the server does not run, waits; one request short is
// capped, so that a search never claims 25 of a server that runs 24),
// said with its cause where /metrics tell it (the KV cache full, else
// max_num_seqs); admission-limited, when the server turned requests away.
func (f ServerFacts) LoadVerdicts(requested float64) []string {
	var out []string
	run, wait := f.Running, f.Waiting
	if f.Capped(requested) {
		by := "max_num_seqs"
		switch {
		case f.KV != nil && f.KV.Peak >= 0.95:
			by = fmt.Sprintf("its KV cache (%.0f%% used at peak)", 100*f.KV.Peak)
		case f.KV != nil:
			by += fmt.Sprintf(" (its KV cache %.0f%% used at peak)", 100*f.KV.Peak)
		}
		if room := f.WaitingForRoom; room != nil {
			by += fmt.Sprintf("; %s waited for room at peak", format.Number(room.Peak))
		}
		out = append(out, fmt.Sprintf("load not applied: capped by the server %s: %s requests running at most of the %.0f requested, while up to %s waited (%s; %d scrapes)",
			f.Service, format.Number(run.Peak), requested, format.Number(wait.Peak), by, f.Scrapes))
	}
	if r := f.Rejected; r != nil && *r > 0 {
		out = append(out, fmt.Sprintf("load not applied: admission-limited: the server %s turned away %s requests at admission during the run", f.Service, format.Number(*r)))
	}
	return out
}
