package daemon

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/greenlight-run/greenlight/metrics"
	"github.com/greenlight-run/greenlight/report"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// scrapeEvery is how often a service's /metrics is read while it is up.
const scrapeEvery = 2 * time.Second

// startScrapers reads each service's metrics: (off the runner's loop, one
// request at a time) while the service is up, until ctx ends. A service
// on Slurm, whose node is known only once its job runs, is not scraped
// yet.
func startScrapers(ctx context.Context, plan *campaign.Plan, events <-chan runner.Event) map[string]report.ServerView {
	var mu sync.Mutex
	up := map[string]bool{}
	out := map[string]report.ServerView{}
	for _, ph := range plan.Phases {
		sv := ph.Service
		if sv == nil || sv.MetricsURL == "" || strings.Contains(sv.MetricsURL, campaign.NodeVar) {
			continue
		}
		id := ph.ID
		s := &metrics.Scraper{URL: sv.MetricsURL, Extra: sv.MetricsSeries, Interval: scrapeEvery, Active: func() bool {
			mu.Lock()
			defer mu.Unlock()
			return up[id]
		}}
		out[id] = s
		go s.Run(ctx)
	}
	go func() {
		for e := range events {
			if e.State == nil || len(out) == 0 {
				continue
			}
			mu.Lock()
			for _, p := range e.State.Phases {
				if _, ok := out[p.ID]; ok {
					up[p.ID] = p.Status == runner.Ready
				}
			}
			mu.Unlock()
		}
	}()
	return out
}
