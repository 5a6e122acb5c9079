package runner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

// Slips said as slips, not as results: a search's SLO on a column no run
// wrote stops the search at its first run rather than concluding "no
// value meets the SLO"; a metrics: name no row has is said at the phase's
// first rows, with the name the rows have that is nearest.

// ResultColumns are the numeric columns the phase's done steps wrote, in
// their order: its results, not its inputs (the axes and the repeat a
// sweep's rows carry, a service point's values).
func ResultColumns(ph *campaign.Phase, steps []StepState) []string {
	inputs := ph.PointColumns()
	inputs["repeat"] = true
	var out []string
	for _, s := range steps {
		if s.Status != Done {
			continue
		}
		eachNumber(s.Results, nil, func(c string, _ float64) {
			if !inputs[c] && !slices.Contains(out, c) {
				out = append(out, c)
			}
		})
	}
	return out
}

// didYouMean is the column nearest a name: one or two slips from it, or
// the name with a suffix or prefix (p99_tpot: p99_tpot_ms); "" for none.
func didYouMean(name string, cols []string) string {
	if n := campaign.Nearest(name, cols); n != "" {
		return n
	}
	for _, c := range cols {
		if strings.HasPrefix(c, name+"_") || strings.HasSuffix(c, "_"+name) {
			return c
		}
	}
	return ""
}

// missingWords says the names no row wrote, with what the rows have:
// "no run wrote p99_tpot (did you mean p99_tpot_ms?); the rows have
// p99_tpot_ms, p99_ttft_ms".
func missingWords(missing, cols []string) string {
	var parts []string
	for _, m := range missing {
		w := m
		if near := didYouMean(m, cols); near != "" {
			w += " (did you mean " + near + "?)"
		}
		parts = append(parts, w)
	}
	have := "no numbers"
	if len(cols) > 0 {
		shown := cols
		if len(shown) > 8 {
			shown = append(slices.Clone(shown[:8]), fmt.Sprintf("and %d more", len(cols)-8))
		}
		have = strings.Join(shown, ", ")
	}
	return fmt.Sprintf("no run wrote %s; the rows have %s", strings.Join(parts, ", "), have)
}

// SearchSlip is why a search must stop at once: an SLO metric no run it
// has done wrote. "" while every one was written, or no run ended done.
// The runner stops the search on it; the record, status and the window
// say it in place of a limit.
func SearchSlip(ph *campaign.Phase, steps []StepState) string {
	sw := ph.Sweep
	if sw == nil || sw.Search == nil {
		return ""
	}
	anyDone := slices.ContainsFunc(steps, func(s StepState) bool { return s.Status == Done })
	if !anyDone {
		return ""
	}
	cols := ResultColumns(ph, steps)
	var missing []string
	for _, t := range sw.Search.SLO {
		if !slices.Contains(cols, t.Metric) && !slices.Contains(missing, t.Metric) {
			missing = append(missing, t.Metric)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("the search's SLO names a column no run wrote: %s; the search stops rather than judge without it (fix slo: in the campaign file, then retry %s)",
		missingWords(missing, cols), ph.ID)
}

// sayMetricsSlip warns, once per phase, of a metrics: name that no row of
// its first finished step has.
func (sr *stepRun) sayMetricsSlip() {
	pr := sr.pr
	if pr.metricsSaid || pr.ph.MetricsByDefault || len(pr.ph.Metrics) == 0 {
		return
	}
	cols := ResultColumns(pr.ph, pr.state.Steps)
	if len(cols) == 0 {
		return // no numbers yet: the phase's first rows say
	}
	pr.metricsSaid = true
	var missing []string
	for _, m := range pr.ph.Metrics {
		if !slices.Contains(cols, m.Name) {
			missing = append(missing, m.Name)
		}
	}
	if len(missing) > 0 {
		sr.r.warn(fmt.Sprintf("%s: metrics: names a column its first rows do not have: %s (a metric no row has is left out of its tables and charts)",
			pr.ph.Label(), missingWords(missing, cols)))
	}
}
