package runner

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/greenlight-run/greenlight/runner/campaign"
	"gonum.org/v1/gonum/stat"
)

// A sweep's units run as the phase's steps (campaign.Sweep); what the
// runner adds: rows that carry their point, and until: failed.

// nextStep is the first step from idx on that a sweep's until: failed
// has not cut; the cut ones are marked skipped, with the point that cut
// them. It is decided from the rows alone, so a runner started again
// decides the same.
func (pr *phaseRun) nextStep(idx int) int {
	steps := pr.ph.AllSteps()
	for ; idx < len(steps); idx++ {
		if pr.state.Steps[idx].Status == Done {
			continue // a unit an edited grid kept
		}
		by := pr.cutBy(idx)
		if by == "" {
			return idx
		}
		ss := &pr.state.Steps[idx]
		ss.Status, ss.Reason = Skipped, "until: failed: "+by+" missed its expectation"
	}
	return idx
}

// cutBy is the point whose failed expectation stops step idx (the same
// values on every axis but the last, a smaller one on the last), or "".
func (pr *phaseRun) cutBy(idx int) string {
	sw := pr.ph.Sweep
	steps := pr.ph.AllSteps()
	if sw == nil || sw.Until != "failed" || len(sw.Axes) == 0 || steps[idx].Unit == nil {
		return ""
	}
	u, last := steps[idx].Unit, len(sw.Axes)-1
	for j := 0; j < idx; j++ {
		v := steps[j].Unit
		if v == nil || v.Values[last] >= u.Values[last] || !slices.Equal(v.Values[:last], u.Values[:last]) {
			continue
		}
		for _, row := range pr.state.Steps[j].Results {
			for _, c := range row.Checks {
				if !c.Pass {
					return sw.Key(*v)
				}
			}
		}
	}
	return ""
}

// withPoint puts the step's point (each axis's value, and the repeat)
// before the row's own columns; a column the step wrote itself is kept.
func (sr *stepRun) withPoint(row Row) Row {
	sw, u := sr.pr.ph.Sweep, sr.step.Unit
	if sw == nil || u == nil {
		return row
	}
	var cols []string
	var vals []any
	add := func(c string, v any) {
		if !slices.Contains(row.Cols, c) {
			cols, vals = append(cols, c), append(vals, v)
		}
	}
	for i, a := range sw.Axes {
		name := a.Values[u.Values[i]].Name
		if f, err := strconv.ParseFloat(name, 64); err == nil {
			add(a.Name, f)
		} else {
			add(a.Name, name)
		}
	}
	add("repeat", float64(u.Repeat))
	row.Cols = append(cols, row.Cols...)
	row.Values = append(vals, row.Values...)
	return row
}

// PointValues are a sweep phase's numeric results by metric and point:
// each point's repeats in run order, metrics in the order they first
// appear (the axes' columns and repeat are not metrics). The record's
// tables and charts and the noise said as it happens read them.
func PointValues(ph *campaign.Phase, steps []StepState) (metrics []string, vals map[string]map[int][]float64) {
	vals = map[string]map[int][]float64{}
	if ph.Sweep == nil {
		return nil, vals
	}
	skip := map[string]bool{"repeat": true}
	for _, a := range ph.Sweep.Axes {
		skip[a.Name] = true
	}
	all := ph.AllSteps()
	for i, s := range steps {
		if i >= len(all) || all[i].Unit == nil {
			continue
		}
		pt := all[i].Unit.Point
		for _, row := range s.Results {
			for j, c := range row.Cols {
				f, ok := row.Values[j].(float64)
				if !ok || skip[c] {
					continue
				}
				if vals[c] == nil {
					vals[c] = map[int][]float64{}
					metrics = append(metrics, c)
				}
				vals[c][pt] = append(vals[c][pt], f)
			}
		}
	}
	return metrics, vals
}

// sayNoisy tells, as it happens, of a point whose repeats so far disagree
// beyond the phase's noise limit (their coefficient of variation), once
// per point and metric.
func (sr *stepRun) sayNoisy() {
	pr, sw, u := sr.pr, sr.pr.ph.Sweep, sr.step.Unit
	if sw == nil || u == nil || sw.Repeat < 2 {
		return
	}
	metrics, vals := PointValues(pr.ph, pr.state.Steps)
	for _, c := range metrics {
		xs := vals[c][u.Point]
		if len(xs) < 2 {
			continue
		}
		mean, sd := stat.MeanStdDev(xs, nil)
		if mean == 0 || math.Abs(sd/mean) <= sw.Noise {
			continue
		}
		key := sw.Key(*u) + " " + c
		if pr.noisySaid == nil {
			pr.noisySaid = map[string]bool{}
		}
		if pr.noisySaid[key] {
			continue
		}
		pr.noisySaid[key] = true
		sr.r.warn(fmt.Sprintf("%s: point %s is noisy: %d repeats of %s disagree by %.1f%% (coefficient of variation; the limit is %s%%)",
			pr.ph.Label(), sw.Key(*u), len(xs), c, math.Abs(sd/mean)*100, strconv.FormatFloat(sw.Noise*100, 'f', -1, 64)))
	}
}
