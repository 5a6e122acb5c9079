package state

import (
	"strings"
	"time"
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

// Stamped is the run's stamp in one line ("" when nothing was wrong).
func (f *StepFacts) Stamped() string {
	if f == nil {
		return ""
	}
	return strings.Join(f.Stamp, "; ")
}
