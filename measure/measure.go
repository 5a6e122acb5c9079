// Package measure holds the rules by which a window of a campaign is
// measured: which GPUs a phase's summary covers (its gpus:, and on Slurm
// the nodes its job ran on), which scraped services a phase used, and a
// service's view of a window as a run's facts. The monitor's witness
// judges each run by them as it ends, and the record's sections read the
// same rules: one definition below both.
package measure

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/metrics"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/state"
)

// GPUHistory summarises GPU readings over a window; *gpu.Sampler is one.
type GPUHistory interface {
	Summarize(from, to time.Time, devices []int) []gpu.Summary
}

// ServerView is a service's scraped metrics over a window: *metrics.Scraper.
type ServerView interface {
	Window(from, to time.Time) metrics.Summary
}

// PhaseGPUsOver are a phase's GPUs summarised over [from, to]: those its
// gpus: names here, and on Slurm those of the nodes its job ran on. The
// phase's summary in the record and the monitor's facts of each of its
// steps are both this.
func PhaseGPUsOver(h GPUHistory, ph *campaign.Phase, p state.PhaseState, from, to time.Time) []gpu.Summary {
	return onItsNodes(h.Summarize(from, to, PhaseGPUs(ph)), p)
}

// onItsNodes keeps, for a phase on Slurm, the GPUs of the nodes its job
// ran on (other jobs of the campaign may run on other nodes at the same
// time); a phase that runs here keeps them all.
func onItsNodes(sums []gpu.Summary, p state.PhaseState) []gpu.Summary {
	nodes := p.Slurm.NodeNames()
	if len(nodes) == 0 {
		return sums
	}
	short := func(h string) string { s, _, _ := strings.Cut(h, "."); return s }
	var out []gpu.Summary
	for _, s := range sums {
		if slices.ContainsFunc(nodes, func(n string) bool { return short(n) == short(s.Device.Host) }) {
			out = append(out, s)
		}
	}
	return out
}

// PhaseGPUs are the GPUs of this machine a phase's summary covers: its
// gpus: (nil, all), or none for a phase on Slurm, whose jobs ran on the
// cluster's nodes (whose GPUs, read through dcgm:slurm-nodes, are remote
// and always covered).
func PhaseGPUs(ph *campaign.Phase) []int {
	if ph.Slurm != nil {
		return []int{}
	}
	return ph.GPUs
}

// ServersOf are the services of servers (scraped, by phase id) that
// phase uses, in plan order: the record's Server tables, the monitor's
// client-bound stamp and a run's server facts read the same ones.
func ServersOf(plan *campaign.Plan, servers map[string]ServerView, phase string) []string {
	var out []string
	for _, ph := range plan.Phases {
		if _, ok := servers[ph.ID]; ok && plan.Uses(phase, ph.ID) {
			out = append(out, ph.ID)
		}
	}
	return out
}

// A service's /metrics is read every ScrapeEvery while it is up, and
// every ScrapeServing while a phase that uses it runs (a serving row: its
// running and waiting requests held against the row's load). A run's
// first scrape may so come up to ScrapeEvery, and some, after its start.
const (
	ScrapeEvery     = 2 * time.Second
	ScrapeServing   = 500 * time.Millisecond
	firstScrapeWait = ScrapeEvery + ScrapeServing
	scrapeGapMax    = 4 * ScrapeServing // a busy server's slow answer, but not a hole
)

// ServerFacts is service svc's view of [from, to]: its running and
// waiting requests (mean and peak), its KV cache's peak, and what its
// counters grew by; a series it does not expose is nil; the scrapes that
// read nothing (it stopped answering) counted and said; scrapes that do
// not cover the run give no figure, and say so (Unseen). ok is false
// when no scrape fell in the window.
func ServerFacts(svc string, v ServerView, from, to time.Time) (f state.ServerFacts, ok bool) {
	win := v.Window(from, to)
	failed := 0
	for _, n := range win.Failed {
		failed += n
	}
	if win.Scrapes == 0 && failed == 0 {
		return f, false
	}
	f = state.ServerFacts{Service: svc, Scrapes: win.Scrapes, EveryS: win.Every.Seconds(), Failed: failed, FailedWhy: win.FailedSaid()}
	// The scrapes must cover the run: the last within two of the serving
	// cadence of its end, none further than scrapeGapMax from each other
	// (its own cadence is not the rule: a
	// runner killed mid-run leaves one long gap, which would be taken for
	// the cadence). Its start may wait longer for the first: the scraper
	// reads every ScrapeEvery until a serving run begins. A run a runner
	// started again saw from one scrape at its start, or across the hole
	// its kill left, is not the run's load as the server saw it.
	if win.Scrapes > 0 && (win.From.Sub(from) > firstScrapeWait || to.Sub(win.To) > 2*ScrapeServing || win.MaxGap > scrapeGapMax) {
		f.Unseen = fmt.Sprintf("its scrapes cover %s to %s of the run's %s to %s, with a gap of %.1f s at most between them: the server's view of the run is not told",
			win.From.Format("15:04:05.0"), win.To.Format("15:04:05.0"), from.Format("15:04:05.0"), to.Format("15:04:05.0"), max(win.From.Sub(from), to.Sub(win.To), win.MaxGap).Seconds())
		return f, true
	}
	gauge := func(name string) *state.Gauge {
		if st, ok := win.Series[name]; ok && st.N > 0 {
			return &state.Gauge{Mean: st.Mean, Peak: st.Peak}
		}
		return nil
	}
	grew := func(name string) *float64 {
		if st, ok := win.Series[name]; ok && st.N > 0 {
			d := st.Delta
			return &d
		}
		return nil
	}
	f.Running, f.Waiting, f.WaitingForRoom, f.KV = gauge(metrics.Running), gauge(metrics.Waiting), gauge(metrics.WaitingForRoom), gauge(metrics.KVUsage)
	f.Finished, f.Rejected, f.Aborted, f.Preempted = grew(metrics.Success), grew(metrics.Rejected), grew(metrics.Aborted), grew(metrics.Preemptions)
	return f, true
}
