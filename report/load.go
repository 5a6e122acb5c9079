package report

// The Load table of a service that names its model: each start's page-cache
// warmth, any prewarm, the time to ready, and the stages the server timed
// (and the stages: marks), as seconds and shares of the load, one row per
// load across restarts and attempts, from STATE/loads.jsonl alone.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/modelload"
)

func (w *Writer) loadSection(ph *campaign.Phase, _ runner.PhaseState, _ *runner.State) string {
	if ph.Service == nil || ph.Service.Model == "" || w.stateDir == "" {
		return ""
	}
	all, err := runner.ReadLoads(w.stateDir)
	if err != nil {
		return fmt.Sprintf("\nThe model's loads cannot be read: %s.\n", cell(err.Error()))
	}
	// A swept service's points compare in one table, in each point's block.
	var loads []runner.Load
	for _, l := range all {
		if l.Phase == ph.ID || ph.Point != nil && l.Service == ph.Point.Service {
			loads = append(loads, l)
		}
	}
	if len(loads) == 0 {
		return ""
	}
	return loadTable(loads)
}

// loadTable is the table itself: a column per stage any load had.
func loadTable(loads []runner.Load) string {
	var stages []string
	for _, l := range loads {
		for _, s := range append(slices.Clone(l.Marks), l.Server...) {
			if !slices.Contains(stages, s.Name) {
				stages = append(stages, s.Name)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n### Load: the model's %s\n\n", plural(len(loads), "load"))
	points := slices.ContainsFunc(loads, func(l runner.Load) bool { return l.Point != "" })
	head, rule := "| Ready at |", "\n|---|"
	if points {
		head, rule = head+" Point |", rule+"---|"
	}
	b.WriteString(head + " Load | Page cache at start | Prewarm | To ready |")
	for _, s := range stages {
		fmt.Fprintf(&b, " %s |", cell(s))
	}
	b.WriteString(rule + "---|---|---|---:|" + strings.Repeat("---:|", len(stages)) + "\n")
	for _, l := range loads {
		cache := "not counted"
		if c := l.Cache; c != nil {
			cache = fmt.Sprintf("%s: %.0f %% of %s", c.Word(), 100*c.Share(), modelload.Size(c.Bytes))
			if c.Cut {
				cache += " (counted in part)"
			}
		}
		pre := "—"
		if p := l.Prewarm; p != nil {
			switch {
			case p.Skipped:
				pre = "skipped: warm already"
			case p.Read > 0:
				pre = fmt.Sprintf("%s in %s s (%.2f GB/s), the folder %s before", modelload.Size(p.Read), FormatNumber(p.Took.Seconds()), p.Rate()/1e9, p.Before.Word())
			default:
				pre = "none read"
			}
		}
		warmth := l.Warmth()
		if warmth == "" {
			warmth = "—"
		}
		fmt.Fprintf(&b, "| %s |", l.T.Format("Jan 2 15:04"))
		if points {
			fmt.Fprintf(&b, " %s |", cell(l.Point))
		}
		fmt.Fprintf(&b, " %s | %s | %s | %s s |", warmth, cell(cache), cell(pre), FormatNumber(l.ReadyS))
		timed := append(slices.Clone(l.Marks), l.Server...)
		for _, name := range stages {
			i := slices.IndexFunc(timed, func(s modelload.StageTime) bool { return s.Name == name })
			if i < 0 {
				b.WriteString(" |")
				continue
			}
			s := timed[i]
			share := ""
			if l.ReadyS > 0 && s.Seconds <= l.ReadyS { // a server's clock past the load seen: no share
				share = fmt.Sprintf(" (%.0f %%)", 100*s.Seconds/l.ReadyS)
			}
			fmt.Fprintf(&b, " %s s%s |", FormatNumber(s.Seconds), share)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nStages are the server's own timing lines (vLLM's; they overlap: model loading holds loading weights, engine init holds memory profiling and graph capture) and the campaign's stages: marks; a share is of the time to ready.\n")
	return b.String()
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
