package results

import (
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/state"
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

// UnitRun is one unit (one run of a point) of a sweep.
type UnitRun struct {
	Point, Repeat int
	Steps         []int // its steps' indices, in order
	Outcome       Outcome
	Reason        string    // why it was skipped, failed or stopped
	Ended         time.Time // when it ended, or was skipped
	Stamp         string    // why its rows were taken under bad conditions
	// Capped: a server it used held it below the load its rows asked for
	// (state.ServerFacts.Capped): running it again would be held so too.
	Capped bool
	Cols   []string  // its numeric columns (the point's axes and repeat left out), first seen first
	Values []float64 // the mean of its rows' values, per column of Cols
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
func PointUnits(ph *campaign.Phase, steps []state.StepState) map[int][]UnitRun {
	out := map[int][]UnitRun{}
	if ph.Sweep == nil {
		return out
	}
	skip := ph.PointColumns()
	for point, units := range UnitsByPoint(ph) {
		out[point] = Gather(ph, units, steps, skip)
	}
	return out
}

// Gather is the outcome and values of each of a point's units.
func Gather(ph *campaign.Phase, units []Unit, steps []state.StepState, skip map[string]bool) []UnitRun {
	search := ph.Sweep != nil && ph.Sweep.Search != nil
	runs := make([]UnitRun, len(units))
	for k, u := range units {
		run := UnitRun{Point: u.Point, Repeat: u.Repeat, Steps: u.Steps}
		st, at := u.State(steps)
		var by state.SkipBy
		if at >= 0 && at < len(steps) {
			run.Reason, run.Ended, by = steps[at].Reason, steps[at].Ended, steps[at].Skip
		} else if n := len(u.Steps); n > 0 && u.Steps[n-1] < len(steps) {
			run.Ended = steps[u.Steps[n-1]].Ended
		}
		run.Outcome = outcomeOf(st, by)
		if run.Outcome == UnitDone {
			var counts []int // a unit has a few columns: a list, not a map
			for _, i := range u.Steps {
				if why := steps[i].Facts.Stamped(); why != "" && run.Stamp == "" {
					run.Stamp = why
				}
				run.Capped = run.Capped || steps[i].ServerCapped()
				EachNumber(steps[i].Results, skip, func(c string, f float64) {
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

// outcomeOf is a unit's outcome from its first step that is not done:
// its status, and for a skipped one, the typed reason the runner gave.
func outcomeOf(st state.Status, by state.SkipBy) Outcome {
	switch st {
	case state.Done:
		return UnitDone
	case state.Running, state.Ready:
		return UnitRunning
	case state.Failed:
		return UnitFailed
	case state.Stopped, state.Blocked:
		return UnitStopped
	case state.Skipped:
		switch by {
		case state.SkipPrecise:
			return UnitPrecise
		case state.SkipCut:
			return UnitCut
		case state.SkipNotProbed:
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

// Unit is one run of a sweep's point: its steps' indices, run in
// order.
type Unit struct {
	Point, Repeat int
	Steps         []int
}

// UnitsByPoint are a sweep phase's units by point, each point's in
// repeat order.
func UnitsByPoint(ph *campaign.Phase) map[int][]Unit {
	out := map[int][]Unit{}
	for i, st := range ph.AllSteps() {
		u := st.Unit
		if u == nil {
			continue
		}
		us := out[u.Point]
		if n := len(us); n > 0 && us[n-1].Repeat == u.Repeat {
			us[n-1].Steps = append(us[n-1].Steps, i)
		} else {
			us = append(us, Unit{Point: u.Point, Repeat: u.Repeat, Steps: []int{i}})
		}
		out[u.Point] = us
	}
	return out
}

// state is where the unit stands: state.Done when each of its steps is, else
// its first other step's status, with that step.
func (u Unit) State(steps []state.StepState) (state.Status, int) {
	for _, i := range u.Steps {
		st := state.Pending
		if i < len(steps) {
			st = steps[i].Status
		}
		if st != state.Done {
			return st, i
		}
	}
	return state.Done, -1
}

// EachNumber calls fn with each numeric value of rows whose column is not
// in skip (a sweep's axes and repeat: where a row was measured, not what).
func EachNumber(rows []state.Row, skip map[string]bool, fn func(col string, v float64)) {
	for _, row := range rows {
		for j, c := range row.Cols {
			if f, ok := row.Values[j].(float64); ok && !skip[c] {
				fn(c, f)
			}
		}
	}
}

// PointValues are a sweep phase's numeric results by metric and point:
// each point's runs (its units that count, PointUnits) in repeat order,
// metrics in the order they first appear (the axes' columns and repeat
// are not metrics).
func PointValues(ph *campaign.Phase, steps []state.StepState) (metrics []string, vals map[string]map[int][]float64) {
	return ValuesOf(ph, PointUnits(ph, steps))
}

// ValuesOf is PointValues of units already gathered.
func ValuesOf(ph *campaign.Phase, units map[int][]UnitRun) (metrics []string, vals map[string]map[int][]float64) {
	vals = map[string]map[int][]float64{}
	if ph.Sweep == nil {
		return nil, vals
	}
	for _, u := range ph.Sweep.Units { // points in plan order: metrics first seen first
		if u.Repeat != 1 {
			continue
		}
		for _, run := range units[u.Point] {
			if !run.Counts() {
				continue
			}
			for i, c := range run.Cols {
				if vals[c] == nil {
					vals[c] = map[int][]float64{}
					metrics = append(metrics, c)
				}
				vals[c][run.Point] = append(vals[c][run.Point], run.Values[i])
			}
		}
	}
	return PhaseMetrics(ph, metrics), vals
}

// PhaseMetrics are, of the numeric columns cols, the phase's metrics in
// the order its metrics: lists them (a --save-result name finds the
// column the printed block names: output_throughput is
// output_token_throughput_tok_s); every column where it lists none, or
// none of them came.
func PhaseMetrics(ph *campaign.Phase, cols []string) []string {
	if len(ph.Metrics) == 0 {
		return cols
	}
	var out []string
	for _, m := range ph.Metrics {
		for _, c := range cols {
			if slices.Contains(m.Names(), c) && !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	if len(out) == 0 {
		return cols
	}
	return out
}

// PointComplete says a sweep point's runs are all in: none of its units
// is open (Outcome.Open: to run, running, or cut by a stop and to run
// when the campaign resumes). The model's Point.Complete by the same
// rule.
func PointComplete(ph *campaign.Phase, steps []state.StepState, point int) bool {
	all := ph.AllSteps()
	seen := false
	for i, s := range steps {
		if i >= len(all) || all[i].Unit == nil || all[i].Unit.Point != point {
			continue
		}
		seen = true
		if outcomeOf(s.Status, s.Skip).Open() {
			return false
		}
	}
	return seen
}
