package runner

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/search"
)

// repeat: {until: 2%, max: 10}: a point runs at least min times, then
// stops once every one of its metrics' 95% intervals is within until of
// its mean; the units left of it are skipped, saying so. One that never
// gets there stops at max, and that is said. Decided from the rows alone,
// when each unit comes up, so a runner started again decides the same.

// pointSteps are the step indices of each point of a sweep phase, in run
// order, made once.
func (pr *phaseRun) pointSteps() map[int][]int {
	if pr.byPoint == nil {
		pr.byPoint = map[int][]int{}
		for i, st := range pr.ph.AllSteps() {
			if u := st.Unit; u != nil {
				pr.byPoint[u.Point] = append(pr.byPoint[u.Point], i)
			}
		}
	}
	return pr.byPoint
}

// pointRuns are a point's metrics over its units done: each value its
// rows gave, by metric (the phase's metrics where it names them).
func (pr *phaseRun) pointRuns(point int) (map[string][]float64, int) {
	skip := pr.ph.PointColumns()
	named := pr.ph.MetricNames()
	runs, units := map[string][]float64{}, map[int]bool{}
	for _, i := range pr.pointSteps()[point] {
		ss := pr.state.Steps[i]
		if ss.Status != Done {
			continue
		}
		u := pr.ph.AllSteps()[i].Unit
		for _, row := range ss.Results {
			for k, c := range row.Cols {
				f, ok := row.Values[k].(float64)
				if !ok || skip[c] || len(named) > 0 && !slices.Contains(named, c) {
					continue
				}
				runs[c] = append(runs[c], f)
				units[u.Repeat] = true
			}
		}
	}
	return runs, len(units)
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

// sameUnit says two steps are of one unit (a point's run).
func sameUnit(a, b *campaign.Unit) bool {
	return a != nil && b != nil && a.Point == b.Point && a.Repeat == b.Repeat
}

// preciseAlready says why step idx need not run: its point is measured
// as tightly as repeat: until: asks, after at least min runs ("" when it
// must run).
func (pr *phaseRun) preciseAlready(idx int) string {
	sw := pr.ph.Sweep
	steps := pr.ph.AllSteps()
	u := steps[idx].Unit
	if sw == nil || u == nil || sw.Repeats.Precision == 0 || u.Repeat <= sw.Repeats.Min {
		return ""
	}
	if idx > 0 && sameUnit(steps[idx-1].Unit, u) {
		return "" // a unit is decided at its first step, and runs whole
	}
	runs, n := pr.pointRuns(u.Point)
	if n < sw.Repeats.Min || len(runs) == 0 || len(imprecise(runs, sw.Repeats.Precision)) > 0 {
		return ""
	}
	return fmt.Sprintf("precise after %d runs: every metric's 95%% interval within %s of its mean", n, percent(sw.Repeats.Precision))
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
		sr.r.warn(fmt.Sprintf("%s: point %s ran its %d runs (max) and is still not within %s: %s", pr.ph.Label(), sw.Key(*u), n, percent(sw.Repeats.Precision), strings.Join(wide, ", ")))
	}
}

func percent(f float64) string { return fmt.Sprintf("%g%%", math.Round(f*1e4)/100) }

// expectedRuns is how many runs a point of a repeat: until: sweep is
// expected to take: the mean of the points settled in this attempt
// (rounded up), max before any has.
func (pr *phaseRun) expectedRuns() int {
	sw := pr.ph.Sweep
	steps := pr.ph.AllSteps()
	total, points := 0, 0
	for _, idxs := range pr.pointSteps() {
		ran, settled := map[int]bool{}, true
		for _, i := range idxs {
			switch pr.state.Steps[i].Status {
			case Done:
				ran[steps[i].Unit.Repeat] = true
			case Skipped, Failed:
			default:
				settled = false
			}
		}
		if settled && len(ran) > 0 {
			total, points = total+len(ran), points+1
		}
	}
	if points == 0 {
		return sw.Repeats.Max
	}
	return min(sw.Repeats.Max, max(sw.Repeats.Min, (total+points-1)/points))
}
