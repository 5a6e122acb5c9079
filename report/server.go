package report

// The server's own view of a phase that used it (vLLM's /metrics): the
// gauges' mean and peak, the counters' growth, the tokens it generated
// per second. (A result whose throughput the server's does not bear out
// is stamped "client-bound?" by the monitor's witness, as its step ends.)

import (
	"fmt"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/measure"
	"github.com/greenlight-run/greenlight/metrics"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// ServerView is a service's scraped metrics over a window: *metrics.Scraper.
type ServerView = measure.ServerView

// SetServers gives the writer each service's scraped metrics, by the
// service phase's id.
func (w *Writer) SetServers(s map[string]ServerView) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.servers = s
}

// serversOf are the scraped services a phase uses.
func (w *Writer) serversOf(phase string) []string { return measure.ServersOf(w.plan, w.servers, phase) }

// serverSection is the "Server" table of a phase that used a scraped
// service.
func (w *Writer) serverSection(ph *campaign.Phase, p runner.PhaseState, _ *runner.State) string {
	if p.Started.IsZero() {
		return ""
	}
	end := p.Ended
	if end.IsZero() {
		end = time.Now()
	}
	var b strings.Builder
	for _, svc := range w.serversOf(p.ID) {
		sum := w.servers[svc].Window(p.Started, end)
		fmt.Fprintf(&b, "\n### Server: %s, as its /metrics saw the phase\n\n", cell(svc))
		if sum.Scrapes == 0 {
			if f := sum.FailedSaid(); f != "" {
				fmt.Fprintf(&b, "No scrape of its metrics answered within the phase: %s.\n", cell(f))
			} else {
				b.WriteString("No scrape of its metrics fell within the phase.\n")
			}
			continue
		}
		b.WriteString("| Series | Mean | Peak | Over the phase |\n|---|---:|---:|---:|\n")
		gauge := func(name, label string, scale float64, unit string) {
			if st, ok := sum.Series[name]; ok {
				fmt.Fprintf(&b, "| %s | %s%s | %s%s | |\n", label, FormatNumber(st.Mean*scale), unit, FormatNumber(st.Peak*scale), unit)
			}
		}
		counter := func(name, label string) {
			if st, ok := sum.Series[name]; ok {
				fmt.Fprintf(&b, "| %s | | | %s |\n", label, FormatNumber(st.Delta))
			}
		}
		gauge(metrics.Running, "requests running", 1, "")
		gauge(metrics.Waiting, "requests waiting", 1, "")
		gauge(metrics.KVUsage, "KV cache used", 100, " %")
		counter(metrics.Preemptions, "preemptions")
		counter(metrics.PromptTok, "prompt tokens")
		counter(metrics.GenTok, "generated tokens")
		if rate, ok := sum.GenRate(); ok {
			fmt.Fprintf(&b, "| generation | | | %s tok/s |\n", FormatNumber(rate))
		}
		if h, q := sum.Series[metrics.PrefixHits], sum.Series[metrics.PrefixQuery]; q.Delta > 0 {
			fmt.Fprintf(&b, "| prefix cache hit rate | | | %s %% |\n", FormatNumber(100*h.Delta/q.Delta))
		}
		fmt.Fprintf(&b, "\n%d scrapes from %s to %s", sum.Scrapes, sum.From.Format("15:04:05"), sum.To.Format("15:04:05"))
		if sum.Every > 0 {
			fmt.Fprintf(&b, ", one every %s s (the median)", FormatNumber(sum.Every.Seconds()))
		}
		b.WriteString(".")
		if f := sum.FailedSaid(); f != "" {
			fmt.Fprintf(&b, " Failed: %s.", cell(f))
		}
		b.WriteString("\n")
	}
	return b.String()
}
