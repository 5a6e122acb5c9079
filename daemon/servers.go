package daemon

import (
	"context"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/greenlight-run/greenlight/measure"
	"github.com/greenlight-run/greenlight/metrics"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/link"
)

// startScrapers reads each service's metrics: (off the runner's loop, one
// request at a time) while the service is up, until ctx ends. A service
// on Slurm names its node ${GREENLIGHT_NODE}: it is scraped at the node
// its job runs on, once Slurm has said which.
func startScrapers(ctx context.Context, plan *campaign.Plan, stateDir string, events <-chan runner.Event) map[string]*metrics.Scraper {
	var mu sync.Mutex
	up := map[string]bool{}
	serving := map[string]bool{} // a phase that uses the service runs
	node := map[string]string{}  // a Slurm service's job's node address
	out := map[string]*metrics.Scraper{}
	for _, ph := range plan.Phases {
		sv := ph.Service
		if sv == nil || sv.MetricsURL == "" {
			continue
		}
		id := ph.ID
		// The scrapes of earlier runners first: the record's Server tables
		// of the phases they saw stay whole.
		s, _ := metrics.Load(runner.Layout(stateDir).Metrics(id))
		s.URL, s.Extra, s.Interval, s.FastInterval = sv.MetricsURL, sv.MetricsSeries, measure.ScrapeEvery, measure.ScrapeServing
		s.Fast = func() bool {
			mu.Lock()
			defer mu.Unlock()
			return serving[id]
		}
		onNode := strings.Contains(sv.MetricsURL, campaign.NodeVar)
		if onNode {
			s.Where = func() string {
				mu.Lock()
				defer mu.Unlock()
				return strings.ReplaceAll(sv.MetricsURL, campaign.NodeVar, node[id])
			}
		}
		s.Active = func() bool {
			mu.Lock()
			defer mu.Unlock()
			return up[id] && (!onNode || node[id] != "")
		}
		out[id] = s
		go func() {
			s.Run(ctx)
			s.Close()
		}()
	}
	go func() {
		for e := range events {
			if e.State == nil || len(out) == 0 {
				continue
			}
			mu.Lock()
			clear(serving)
			for _, p := range e.State.Phases {
				if p.Status != runner.Running {
					continue
				}
				for id := range out {
					if id != p.ID && plan.Uses(p.ID, id) {
						serving[id] = true
					}
				}
			}
			for _, p := range e.State.Phases {
				if _, ok := out[p.ID]; ok {
					up[p.ID] = p.Status == runner.Ready
					if p.Slurm != nil {
						node[p.ID] = p.Slurm.Node
					}
				}
			}
			mu.Unlock()
		}
	}()
	return out
}

// views are the scrapers as the results file reads them.
func views(s map[string]*metrics.Scraper) map[string]measure.ServerView {
	out := map[string]measure.ServerView{}
	for id, sc := range s {
		out[id] = sc
	}
	return out
}

// serverLinesKept is how many scrapes of tokens/s a window's line shows.
const serverLinesKept = 60

// serverLines are the services' lines for the window, those scraped in
// the last minute (a service that went down is not shown as it was).
func serverLines(s map[string]*metrics.Scraper, now time.Time) map[string]*link.ServerLine {
	var out map[string]*link.ServerLine
	for id, sc := range s {
		l := sc.Line(serverLinesKept)
		if l.At.IsZero() || now.Sub(l.At) > time.Minute {
			continue
		}
		num := func(v float64) *float64 {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil
			}
			return &v
		}
		w := &link.ServerLine{At: l.At, Running: num(l.Running), Waiting: num(l.Waiting), KV: num(l.KV), TokS: num(l.TokS), Preemptions: num(l.Preemptions), Err: l.Err}
		for _, h := range l.History {
			w.History = append(w.History, num(h))
		}
		if out == nil {
			out = map[string]*link.ServerLine{}
		}
		out[id] = w
	}
	return out
}

// KeptServers are the services' scrapes kept in the state dir, as the
// results file reads them: `greenlight report` rebuilds the Server tables
// from them.
func KeptServers(plan *campaign.Plan, stateDir string) map[string]measure.ServerView {
	out := map[string]measure.ServerView{}
	for _, ph := range plan.Phases {
		if sv := ph.Service; sv != nil && sv.MetricsURL != "" {
			s, _ := metrics.Load(runner.Layout(stateDir).Metrics(ph.ID))
			out[ph.ID] = s
		}
	}
	return out
}
