package runner

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/greenlight-run/greenlight/internal/format"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

// probe polls a URL in the background so the loop never waits on a
// network call; ok holds the latest answer.
type probe struct {
	ok     atomic.Bool
	code   atomic.Int32
	seen   atomic.Bool
	cancel context.CancelFunc
}

func startProbe(url string, every time.Duration) *probe {
	ctx, cancel := context.WithCancel(context.Background())
	p := &probe{cancel: cancel}
	client := &http.Client{Timeout: 3 * time.Second}
	go func() {
		for {
			code := httpStatus(ctx, client, url)
			p.code.Store(int32(code))
			p.ok.Store(code >= 200 && code < 300)
			p.seen.Store(true)
			// Once up, a health check every 5 s is enough and costs less.
			wait := every
			if p.ok.Load() {
				wait = 5 * time.Second
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
	}()
	return p
}

func httpStatus(ctx context.Context, c *http.Client, url string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// checkService marks a starting service ready once its probes pass, and
// watches a ready one: a /health that keeps failing means a dead engine.
func (sr *stepRun) checkService(now time.Time) {
	r := sr.r
	pr, svc := sr.pr, sr.pr.ph.Service
	url := sr.readyURL()
	if url != "" && sr.health.probe == nil {
		sr.health.probe = startProbe(url, 500*time.Millisecond)
	}
	httpOK := svc.ReadyHTTP == "" || sr.health.probe != nil && sr.health.probe.ok.Load()
	logOK := svc.ReadyLog == nil || sr.readyLog
	switch pr.state.Status {
	case Running:
		if httpOK && logOK {
			pr.state.Status = Ready
			ss := &pr.state.Steps[0]
			ss.Stage, ss.Progress = "ready", 1
			took := now.Sub(sr.started)
			if !sr.adopted {
				r.store.hist.add(sr.step.Key, took)
				sr.learnStages(now)
			}
			sr.recordLoad(now) // an adopted load has its watch only if it was not ready yet
			r.journal(record{Kind: recReady, Phase: pr.ph.ID, Attempt: pr.state.Attempt})
			msg := fmt.Sprintf("%s ready after %s", pr.ph.Label(), format.Duration(took))
			if sr.adopted {
				msg = fmt.Sprintf("%s re-adopted and ready: no reload", pr.ph.Label())
			}
			r.emit(Event{Kind: ServiceReady, Phase: pr.ph.ID, Message: msg})
			return
		}
		if svc.ReadyTimeout > 0 && now.Sub(sr.started) > svc.ReadyTimeout && sr.proc.stopFor == "" && !pr.state.Slurm.Queued() {
			sr.proc.stopFor, sr.proc.stopWhy = Failed, "not ready after "+format.Duration(svc.ReadyTimeout)
			sr.stop(r.opts.Grace)
		}
	case Ready:
		if sr.health.probe == nil || !sr.health.probe.seen.Load() || sr.proc.stopFor != "" {
			return
		}
		if sr.health.probe.ok.Load() {
			sr.health.fails, sr.health.warned = 0, false
			return
		}
		sr.health.fails++
		// Failed for 5 s (a probe's 3 s timeout, then 0.5 s retries): not a blip.
		if sr.health.fails == 1 {
			sr.health.failSince = now
		}
		if now.Sub(sr.health.failSince) >= 5*time.Second && !sr.health.warned {
			sr.health.warned = true
			code := sr.health.probe.code.Load()
			why := fmt.Sprintf("health check %s failing (HTTP %d): engine dead?", url, code)
			if code == 0 {
				why = fmt.Sprintf("health check %s not answering: engine dead?", url)
			}
			r.warn(fmt.Sprintf("%s: %s", pr.ph.Label(), why))
		}
	}
}

// readyURL is the service's ready.http with ${GREENLIGHT_NODE} put in:
// the node its Slurm job landed on, "" until Slurm has said which.
func (sr *stepRun) readyURL() string {
	u := sr.pr.ph.Service.ReadyHTTP
	if !strings.Contains(u, campaign.NodeVar) {
		return u
	}
	node := sr.on().node()
	if node == "" {
		return ""
	}
	return strings.ReplaceAll(u, campaign.NodeVar, node)
}

// serviceNodes are GREENLIGHT_NODE and GREENLIGHT_NODE_<SERVICE> for a
// phase that uses services: where each runs (localhost, or its Slurm
// job's node), the first it needs as GREENLIGHT_NODE.
func (r *Runner) serviceNodes(pr *phaseRun) []string {
	var env []string
	first := true
	for _, o := range r.phases {
		if o == pr || o.ph.Service == nil || !r.plan.Uses(pr.ph.ID, o.ph.ID) {
			continue
		}
		node := "localhost"
		if o.cur != nil {
			node = o.cur.on().node()
		}
		if node == "" {
			continue
		}
		if first {
			env, first = append(env, "GREENLIGHT_NODE="+node), false
		}
		env = append(env, "GREENLIGHT_NODE_"+envName(o.ph.ID)+"="+node)
	}
	return env
}

func envName(id string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, id)
}

// serviceDied says why, when a service the phase uses has died (failed
// since it was up): "" while every one is up or on its way.
func (r *Runner) serviceDied(pr *phaseRun) string {
	for _, o := range r.phases {
		if o.ph.Service == nil || o == pr || !r.plan.Uses(pr.ph.ID, o.ph.ID) || o.state.Status != Failed {
			continue
		}
		return fmt.Sprintf("the service %s it needs failed: %s", o.ph.ID, o.state.Reason)
	}
	return ""
}
