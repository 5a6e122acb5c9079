package state

import (
	"time"

	"github.com/greenlight-run/greenlight/internal/format"
)

// ETA is a time-to-finish and where it came from.
type ETA struct {
	Source    string        `json:",omitzero"` // SourceProgress, SourceHistory, SourceEstimate, or "" when nothing is known
	Remaining time.Duration `json:",omitzero"` // meaningful when Known
	Known     bool          `json:",omitzero"`
	Over      time.Duration `json:",omitzero"` // running past its history or estimate by this much
	Partial   bool          `json:",omitzero"` // a lower bound: some remaining work has no estimate
	Waiting   bool          `json:",omitzero"` // a gate waits for a person on the remaining path
	Rate      string        `json:",omitzero"` // "11.4 s/it", when progress gives one
	Done      float64       `json:",omitzero"` // n of n/total, when known
	Total     float64       `json:",omitzero"`
	Fraction  float64       `json:",omitzero"` // 0..1; -1 when unknown
	// Queued: the step waits in Slurm's queue; StartsAt is when Slurm
	// expects it to start (zero when Slurm has no expectation yet), and
	// Remaining counts the wait until then.
	Queued   bool      `json:",omitzero"`
	StartsAt time.Time `json:",omitzero"`
}

// Text is the remaining time as a person reads it: "14m", "≥ 14m" when
// some remaining work has no estimate, "over by 4m", or "no estimate";
// never a negative time and never "0s" for unknown.
func (e ETA) Text() string {
	if e.Queued {
		if e.StartsAt.IsZero() {
			return "no start time from Slurm yet"
		}
		s := "starts ~" + e.StartsAt.Format("15:04") + " (Slurm)"
		rest := e
		rest.Queued = false
		if rest.Known || rest.Over > 0 {
			s += ", then " + rest.Text()
		}
		return s
	}
	switch {
	case e.Over > 0:
		return "over by " + format.Duration(e.Over)
	case !e.Known, e.Partial && e.Remaining < time.Second:
		return "no estimate" // "≥ 0s" says nothing
	case e.Partial:
		return "≥ " + format.Duration(e.Remaining)
	}
	return format.Duration(e.Remaining)
}

const (
	SourceProgress = "log progress"
	SourceHistory  = "history"
	SourceEstimate = "estimate"
	// SourceNeighbours: a sweep's point not run yet takes the time its
	// measured neighbours took in this attempt.
	SourceNeighbours = "measured points"
	// SourceProbes: a search's probes still to come, at most, each run
	// its least number of times at the pace its runs have had.
	SourceProbes = "probes left"
)
