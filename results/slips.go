package results

import (
	"fmt"
	"slices"
	"strings"

	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/state"
)

// ResultColumns are the numeric columns the phase's done steps wrote, in
// their order: its results, not its inputs (the axes and the repeat a
// sweep's rows carry, a service point's values).
func ResultColumns(ph *campaign.Phase, steps []state.StepState) []string {
	inputs := ph.PointColumns()
	inputs["repeat"] = true
	var out []string
	for _, s := range steps {
		if s.Status != state.Done {
			continue
		}
		EachNumber(s.Results, nil, func(c string, _ float64) {
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

// MissingWords says the names no row wrote, with what the rows have:
// "no run wrote p99_tpot (did you mean p99_tpot_ms?); the rows have
// p99_tpot_ms, p99_ttft_ms".
func MissingWords(missing, cols []string) string {
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
func SearchSlip(ph *campaign.Phase, steps []state.StepState) string {
	sw := ph.Sweep
	if sw == nil || sw.Search == nil {
		return ""
	}
	anyDone := slices.ContainsFunc(steps, func(s state.StepState) bool { return s.Status == state.Done })
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
		MissingWords(missing, cols), ph.ID)
}
