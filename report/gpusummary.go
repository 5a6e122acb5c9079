package report

// Each phase's GPUs over its span: summarised from the sampler's history
// while it runs, fixed in the state dir as it finishes.

import (
	"net/url"
	"time"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/measure"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

func (w *Writer) gpuSummary(ph *campaign.Phase, p runner.PhaseState, now time.Time) []gpu.Summary {
	if s, ok := w.summary.get(p.ID); ok && p.Status.Finished() {
		return s
	}
	if w.gpus == nil || p.Started.IsZero() {
		return nil
	}
	end := p.Ended
	if end.IsZero() {
		end = now
	}
	return measure.PhaseGPUsOver(w.gpus, ph, p, p.Started, end)
}

// keepSummaries fixes the GPU summary of each phase as it finishes, in the
// state dir, atomically.
func (w *Writer) keepSummaries(st *runner.State) {
	if w.gpus == nil {
		return
	}
	for _, p := range st.Phases {
		_, have := w.summary.get(p.ID)
		if p.Status.Finished() && !p.Started.IsZero() && !have {
			ph := w.plan.Phase(p.ID)
			if ph == nil {
				continue
			}
			w.summary.set(p.ID, measure.PhaseGPUsOver(w.gpus, ph, p, p.Started, p.Ended))
		}
		if !p.Status.Finished() && have {
			w.summary.drop(p.ID) // running again
		}
	}
	w.summary.save()
}

// readsNodes says whether the campaign scrapes the nodes its Slurm jobs
// run on (dcgm:slurm-nodes:PORT).
func readsNodes(plan *campaign.Plan) bool {
	for _, s := range plan.GPUSources {
		for _, u := range s.URLs {
			if pu, err := url.Parse(u); err == nil && pu.Hostname() == gpu.SlurmNodes {
				return true
			}
		}
	}
	return false
}
