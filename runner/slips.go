package runner

import (
	"fmt"
	"slices"

	"github.com/greenlight-run/greenlight/results"
)

// Slips said as slips, not as results: a search's SLO on a column no run
// wrote stops the search at its first run rather than concluding "no
// value meets the SLO"; a metrics: name no row has is said at the phase's
// first rows, with the name the rows have that is nearest.

// sayMetricsSlip warns, once per phase, of a metrics: name that no row of
// its first finished step has.
func (sr *stepRun) sayMetricsSlip() {
	pr := sr.pr
	if pr.metricsSaid || pr.ph.MetricsByDefault || len(pr.ph.Metrics) == 0 {
		return
	}
	cols := results.ResultColumns(pr.ph, pr.state.Steps)
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
			pr.ph.Label(), results.MissingWords(missing, cols)))
	}
}
