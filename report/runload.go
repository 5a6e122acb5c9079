package report

// The load by run: each serving run's concurrency as asked, as achieved
// at the client (from its requests: runner.ColAchieved and Little's law
// beside it), and as the server saw it over the run's own window (its
// /metrics: state.ServerFacts, journaled with the run), with the verdict
// the run was stamped with, or "applied". From the rows and the
// journaled facts alone: nothing is judged again here.

import (
	"fmt"
	"strings"

	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/state"
)

func (w *Writer) runLoadSection(ph *campaign.Phase, p runner.PhaseState, _ *runner.State) string {
	type run struct {
		label  string
		row    map[string]float64
		rows   []runner.Row
		server []runner.ServerFacts
	}
	var runs []run
	scraped := false
	for i, s := range p.Steps {
		f := w.factsOf(p, s)
		r := run{label: stepLabel(ph, i), row: map[string]float64{}, rows: s.Results}
		for _, row := range s.Results {
			for k, c := range row.Cols {
				if v, ok := row.Values[k].(float64); ok {
					r.row[c] = v
				}
			}
		}
		if asked := state.Requested(s.Results); asked > 0 {
			r.row["max_concurrency"] = asked
		}
		if f != nil {
			r.server = f.Server
		}
		// A serving run: its row asked for a concurrency or says what it
		// achieved. Another step that used the server (a capture's) is in
		// the phase's Server table.
		_, achieved := r.row[runner.ColAchieved]
		if _, asked := r.row["max_concurrency"]; achieved || asked {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return ""
	}
	for _, r := range runs {
		scraped = scraped || len(r.server) > 0
	}
	num := func(v float64, ok bool) string {
		if !ok {
			return "—"
		}
		return FormatNumber(v)
	}
	gauge := func(g *runner.Gauge) string {
		if g == nil {
			return "—"
		}
		return FormatNumber(g.Mean) + " / " + FormatNumber(g.Peak)
	}
	grew := func(v *float64) string {
		if v == nil {
			return "—"
		}
		return FormatNumber(*v)
	}
	var b strings.Builder
	b.WriteString("\n### Load by run: asked, achieved, and as the server saw it\n\n")
	b.WriteString("| Run | Asked | Achieved | Little's law |")
	if scraped {
		b.WriteString(" Server | Running (mean / peak) | Waiting (mean / peak) | KV cache used (peak) | Finished | Preempted | Turned away |")
	}
	b.WriteString(" Verdict |\n|---|---:|---:|---:|")
	if scraped {
		b.WriteString("---|---:|---:|---:|---:|---:|---:|")
	}
	b.WriteString("---|\n")
	var services []string          // the services scraped, first seen first
	cadence := map[string]string{} // each one's cadence, as its last run had it
	for _, r := range runs {
		asked, hasAsked := r.row["max_concurrency"]
		achieved, hasAchieved := r.row[runner.ColAchieved]
		little, hasLittle := r.row[runner.ColLittle]
		verdict := loadVerdict(r.rows, r.server, asked, achieved, hasAsked && hasAchieved)
		servers := r.server
		if len(servers) == 0 {
			servers = []runner.ServerFacts{{}}
		}
		for k, sf := range servers {
			lead := fmt.Sprintf("| %s | %s | %s | %s |", cell(r.label), num(asked, hasAsked), num(achieved, hasAchieved), num(little, hasLittle))
			if k > 0 {
				lead = "| | | | |"
			}
			b.WriteString(lead)
			if scraped {
				if sf.Service == "" {
					b.WriteString(" not scraped | — | — | — | — | — | — |")
				} else {
					kv := "—"
					if sf.KV != nil {
						kv = FormatNumber(100*sf.KV.Peak) + " %"
					}
					name := sf.Service
					if sf.Unseen != "" {
						name += " (" + sf.Unseen + ")"
					}
					if sf.Failed > 0 {
						name += fmt.Sprintf(" (%d of %d scrapes read nothing: %s)", sf.Failed, sf.Failed+sf.Scrapes, sf.FailedWhy)
					}
					fmt.Fprintf(&b, " %s | %s | %s | %s | %s | %s | %s |", cell(name), gauge(sf.Running), gauge(sf.Waiting), kv, grew(sf.Finished), grew(sf.Preempted), grew(sf.Rejected))
					if _, seen := cadence[sf.Service]; !seen {
						services = append(services, sf.Service)
					}
					cadence[sf.Service] = fmt.Sprintf("%s: one scrape every %s s (the median, %d over the last run)", sf.Service, FormatNumber(sf.EveryS), sf.Scrapes)
				}
			}
			if k == 0 {
				fmt.Fprintf(&b, " %s |\n", cell(verdict))
			} else {
				b.WriteString(" |\n")
			}
		}
	}
	b.WriteString("\nAsked: the row's `max_concurrency`. Achieved: its requests in flight, time-weighted over the run (from the client's per-request export); Little's law: the client's request rate × its mean latency, beside it.")
	if scraped {
		said := make([]string, len(services))
		for k, svc := range services {
			said[k] = cadence[svc]
		}
		b.WriteString(" The server's figures are its /metrics over the run's own window, journaled as the run ended (" + strings.Join(said, "; "))
		b.WriteString("); — where it does not expose the series.")
	}
	b.WriteString(" A run whose load was not applied is stamped, and a search never decides by it.\n")
	return b.String()
}

// loadVerdict is a run's load in words, by the verdicts' own
// definitions over its row and its journaled server figures
// (runner.LoadStamps, state.ServerFacts.LoadVerdicts: the stamps the run
// was given), else "applied" where its achieved concurrency is known
// against what it asked for, else "—".
func loadVerdict(rows []runner.Row, servers []runner.ServerFacts, asked, achieved float64, known bool) string {
	var said []string
	for _, row := range rows {
		said = append(said, runner.LoadStamps(row)...)
	}
	for _, sf := range servers {
		said = append(said, sf.LoadVerdicts(asked)...)
	}
	switch {
	case len(said) > 0:
		return strings.Join(said, "; ")
	case known && asked > 0:
		return fmt.Sprintf("applied: %s of the %s asked", share(achieved/asked), FormatNumber(asked))
	}
	return "—"
}
