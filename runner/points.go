package runner

import (
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

// A sweep's units, as the results count them: the one rule by which a
// point's runs are gathered, for the runner's decisions (a point precise
// enough, a probe judged, a point noisy) and for every view of the results
// (package results). A unit's outcome is one of the Unit* words below;
// its values are, per column, the mean of its rows' (a unit that prints
// one row per run, as benchmarks do, gives that row's); a run counts
// toward a point's n when its unit is done, and, in a search, was not
// taken under bad conditions (a search runs another in its place).

// Outcome is where a unit of a sweep stands, as the results count it.
type Outcome string

const (
	UnitPending   Outcome = "pending"
	UnitRunning   Outcome = "running"
	UnitDone      Outcome = "done"
	UnitStamped   Outcome = "stamped"    // done under bad conditions, in a search: another run takes its place
	UnitPrecise   Outcome = "precise"    // not run: its point was already precise (repeat: {until:})
	UnitSkipped   Outcome = "skipped"    // skipped by you (x, skip --point)
	UnitCut       Outcome = "cut"        // not run: until: failed cut it
	UnitNotProbed Outcome = "not-probed" // not run: the search did not ask for it
	UnitFailed    Outcome = "failed"
	UnitStopped   Outcome = "stopped" // cut by a stop of the campaign (or blocked)
)

// Open says a unit with this outcome has its run still to come: pending,
// running, or cut by a stop of the campaign (it runs when the campaign
// resumes). A point with an open unit is not complete.
func (o Outcome) Open() bool { return o == UnitPending || o == UnitRunning || o == UnitStopped }

// The reasons a unit of a sweep is skipped begin with these words; the
// runner writes them, the results read them back.
const (
	whyPrecise   = "precise after "
	whyByYou     = "skipped by you (point "
	whyUntil     = "until: failed: "
	whyNotProbed = "not probed: "
)

// UnitRun is one unit (one run of a point) of a sweep.
type UnitRun struct {
	Point, Repeat int
	Steps         []int // its steps' indices, in order
	Outcome       Outcome
	Reason        string    // why it was skipped, failed or stopped
	Ended         time.Time // when it ended, or was skipped
	Stamp         string    // why its rows were taken under bad conditions
	Cols          []string  // its numeric columns (the point's axes and repeat left out), first seen first
	Values        []float64 // the mean of its rows' values, per column of Cols
}

// Counts says the unit is a run of its point: done, and, in a search,
// not taken under bad conditions.
func (u UnitRun) Counts() bool { return u.Outcome == UnitDone }

// Value is the unit's value of column c, and whether it has one.
func (u UnitRun) Value(c string) (float64, bool) {
	for i, x := range u.Cols {
		if x == c {
			return u.Values[i], true
		}
	}
	return 0, false
}

// PointUnits are a sweep phase's units by point, each point's in repeat
// order, with their outcomes and values: O(steps + rows).
func PointUnits(ph *campaign.Phase, steps []StepState) map[int][]UnitRun {
	out := map[int][]UnitRun{}
	if ph.Sweep == nil {
		return out
	}
	skip := ph.PointColumns()
	for point, units := range unitsByPoint(ph) {
		out[point] = gather(ph, units, steps, skip)
	}
	return out
}

// gather is the outcome and values of each of a point's units.
func gather(ph *campaign.Phase, units []sweepUnit, steps []StepState, skip map[string]bool) []UnitRun {
	search := ph.Sweep != nil && ph.Sweep.Search != nil
	runs := make([]UnitRun, len(units))
	for k, u := range units {
		run := UnitRun{Point: u.point, Repeat: u.repeat, Steps: u.steps}
		st, at := u.state(steps)
		if at >= 0 && at < len(steps) {
			run.Reason, run.Ended = steps[at].Reason, steps[at].Ended
		} else if n := len(u.steps); n > 0 && u.steps[n-1] < len(steps) {
			run.Ended = steps[u.steps[n-1]].Ended
		}
		run.Outcome = outcomeOf(st, run.Reason)
		if run.Outcome == UnitDone {
			var counts []int // a unit has a few columns: a list, not a map
			for _, i := range u.steps {
				if why := steps[i].Facts.Stamped(); why != "" && run.Stamp == "" {
					run.Stamp = why
				}
				eachNumber(steps[i].Results, skip, func(c string, f float64) {
					k := slices.Index(run.Cols, c)
					if k < 0 {
						k = len(run.Cols)
						run.Cols, run.Values, counts = append(run.Cols, c), append(run.Values, 0), append(counts, 0)
					}
					run.Values[k] += f
					counts[k]++
				})
			}
			for k := range run.Values {
				run.Values[k] /= float64(counts[k])
			}
			if search && run.Stamp != "" {
				run.Outcome = UnitStamped
			}
		}
		runs[k] = run
	}
	return runs
}

// outcomeOf is a unit's outcome from its first step that is not done.
func outcomeOf(st Status, why string) Outcome {
	switch st {
	case Done:
		return UnitDone
	case Running, Ready:
		return UnitRunning
	case Failed:
		return UnitFailed
	case Stopped, Blocked:
		return UnitStopped
	case Skipped:
		switch {
		case strings.HasPrefix(why, whyPrecise):
			return UnitPrecise
		case strings.HasPrefix(why, whyUntil):
			return UnitCut
		case strings.HasPrefix(why, whyNotProbed):
			return UnitNotProbed
		}
		return UnitSkipped // by you, or the phase skipped whole
	}
	return UnitPending
}

// CV is the coefficient of variation of a point's runs: their sample
// standard deviation over the magnitude of their mean; 0 under two runs
// or at a zero mean.
func CV(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	mean, sd := stat.MeanStdDev(xs, nil)
	if mean == 0 {
		return 0
	}
	return math.Abs(sd / mean)
}

// Noisy is the one verdict of a noisy metric at a point: two runs or
// more whose coefficient of variation is over the phase's limit. Judge it
// only on a point whose runs are all in (PointComplete): a third run may
// settle the first two.
func Noisy(xs []float64, limit float64) bool { return len(xs) >= 2 && CV(xs) > limit }
