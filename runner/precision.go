package runner

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/greenlight-run/greenlight/results"
	"github.com/greenlight-run/greenlight/runner/search"
)

// repeat: {until: 2%, max: 10}: a point runs at least min times, then
// stops once every one of its metrics' 95% intervals is within until of
// its mean; the units left of it are skipped, saying so. One that never
// gets there stops at max, and that is said. Decided from the rows alone,
// when each unit comes up, so a runner started again decides the same.

// pointUnits are the phase's units by point, made once.
func (pr *phaseRun) pointUnits() map[int][]results.Unit {
	if pr.byPoint == nil {
		pr.byPoint = results.UnitsByPoint(pr.ph)
	}
	return pr.byPoint
}

// pointRuns are a point's metrics over its units done, each value its
// rows gave, by metric (the phase's metrics where it names them, as the
// record's tables choose them), and how many units they are.
func (pr *phaseRun) pointRuns(point int) (map[string][]float64, int) {
	runs, n := map[string][]float64{}, 0
	var cols []string
	for _, u := range results.Gather(pr.ph, pr.pointUnits()[point], pr.state.Steps, pr.ph.PointColumns()) {
		if !u.Counts() {
			continue
		}
		n++
		for i, c := range u.Cols {
			if runs[c] == nil {
				cols = append(cols, c)
			}
			runs[c] = append(runs[c], u.Values[i])
		}
	}
	metrics := results.PhaseMetrics(pr.ph, cols)
	for c := range runs {
		if !slices.Contains(metrics, c) {
			delete(runs, c)
		}
	}
	return runs, n
}

// imprecise lists the metrics whose 95% interval is wider than share of
// their mean over runs, each with its width ("tflops ±3.1%"); nil when
// every one is within it.
func imprecise(runs map[string][]float64, share float64) []string {
	var out []string
	for _, c := range slices.Sorted(maps.Keys(runs)) {
		xs := runs[c]
		if len(xs) < 2 {
			out = append(out, c+" (one run)")
			continue
		}
		mean, _, half := search.Interval(xs)
		switch {
		case mean == 0 && half == 0:
		case mean == 0, half/math.Abs(mean) > share:
			out = append(out, fmt.Sprintf("%s ±%.1f%%", c, 100*half/math.Abs(mean)))
		}
	}
	return out
}

// preciseAlready says why the unit step idx begins need not run: its
// point is measured as tightly as repeat: until: asks, after at least min
// runs ("" when it must run). A unit is decided at its first step, and
// runs or is skipped whole.
func (pr *phaseRun) preciseAlready(idx int) (results.Unit, string) {
	sw := pr.ph.Sweep
	u := pr.ph.AllSteps()[idx].Unit
	if sw == nil || u == nil || sw.Repeats.Precision == 0 || u.Repeat <= sw.Repeats.Min {
		return results.Unit{}, ""
	}
	var unit results.Unit
	for _, x := range pr.pointUnits()[u.Point] {
		if x.Repeat == u.Repeat {
			unit = x
		}
	}
	if len(unit.Steps) == 0 || unit.Steps[0] != idx {
		return results.Unit{}, ""
	}
	runs, n := pr.pointRuns(u.Point)
	if n < sw.Repeats.Min || len(runs) == 0 || len(imprecise(runs, sw.Repeats.Precision)) > 0 {
		return results.Unit{}, ""
	}
	return unit, fmt.Sprintf(whyPrecise+"%d runs: %s", n, sw.Repeats.Rule())
}

// sayImprecise warns, once a point has run its max, that its metrics are
// still not as tight as asked.
func (sr *stepRun) sayImprecise() {
	pr, sw, u := sr.pr, sr.pr.ph.Sweep, sr.step.Unit
	if sw == nil || u == nil || sw.Repeats.Precision == 0 || u.Repeat != sw.Repeats.Max {
		return
	}
	runs, n := pr.pointRuns(u.Point)
	if wide := imprecise(runs, sw.Repeats.Precision); len(wide) > 0 {
		sr.r.warn(fmt.Sprintf("%s: point %s ran its %d runs (max) and is still not within %s: %s", pr.ph.Label(), sw.Key(*u), n, sw.Repeats.Share(), strings.Join(wide, ", ")))
	}
}

// expectedRuns is how many runs a point of a repeat: until: sweep is
// expected to take: the mean, rounded up, of the runs of the points this
// attempt settled by the rule (precise after N runs, or all max run),
// as the results count a unit's outcome (results.PointUnits); max before any has.
// A point you skipped, or one with a failed or stopped unit, says nothing
// of how many runs a point takes.
func (pr *phaseRun) expectedRuns() int {
	sw := pr.ph.Sweep
	total, points := 0, 0
	for _, units := range results.PointUnits(pr.ph, pr.state.Steps) {
		ran, precise, other := 0, false, false
		for _, u := range units {
			switch u.Outcome {
			case results.UnitDone:
				ran++
			case results.UnitPrecise:
				precise = true
			default:
				other = true
			}
		}
		if ran > 0 && (precise || !other) {
			total, points = total+ran, points+1
		}
	}
	if points == 0 {
		return sw.Repeats.Max
	}
	return min(sw.Repeats.Max, max(sw.Repeats.Min, (total+points-1)/points))
}
