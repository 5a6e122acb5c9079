package runner

import (
	"slices"
	"strconv"
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
