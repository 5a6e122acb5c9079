package runner

// Why a phase that has not started waits, in one set of words for the
// window, the plain output and the results file.

import (
	"fmt"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// waitReason says why a phase that has not started waits, in the words
// the window, the plain output and the results file use: "waits for
// macro", "waits for GPUs 0 held by serve", "waits for your greenlight",
// "paused: disk nearly full". "" when nothing holds it.
func (r *Runner) waitReason(pr *phaseRun) string {
	why := r.waitReasonBut(pr)
	if w := pr.warm; w != nil && !w.ended {
		if why != "" {
			return w.words(r.opts.Now()) + "; then " + why
		}
		return w.words(r.opts.Now())
	}
	return why
}

// waitReasonBut is waitReason but for a prewarm under way.
func (r *Runner) waitReasonBut(pr *phaseRun) string {
	for _, n := range pr.ph.Needs {
		o, _ := r.find(n)
		switch s := o.state.Status; {
		case o.ph.Service != nil && s == Running:
			return "waits for " + n + " to be ready"
		case s != Done && s != Ready && s != Skipped:
			return "waits for " + n
		}
	}
	if n := r.afterEnded(pr); n != "" {
		return "waits for " + n + " to end"
	}
	if o := r.holder(pr); o != nil {
		gpus := "all GPUs"
		if shared := campaign.SharedGPUs(o.ph.GPUs, pr.ph.GPUs); len(shared) > 0 {
			gpus = "GPUs " + format.Ranges(shared)
			if len(shared) == 1 {
				gpus = "GPU " + format.Ranges(shared)
			}
		}
		return fmt.Sprintf("waits for %s held by %s", gpus, o.ph.ID)
	}
	if why := r.leftoverWait(pr); why != "" {
		return why
	}
	if r.q.paused {
		if r.q.pauseWhy == "user" {
			return "paused by you"
		}
		return "paused: " + r.q.pauseWhy
	}
	if pr.ph.Manual && !pr.gateOpen && !r.approved(pr.ph.ID) {
		return "waits for your greenlight"
	}
	return ""
}
