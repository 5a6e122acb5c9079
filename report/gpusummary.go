package report

// Each phase's GPUs over its span: summarised from the sampler's history
// while it runs, fixed in the state dir as it finishes.

import (
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/gpu"
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
	return PhaseGPUsOver(w.gpus, ph, p, p.Started, end)
}

// onItsNodes keeps, for a phase on Slurm, the GPUs of the nodes its job
// ran on (other jobs of the campaign may run on other nodes at the same
// time); a phase that runs here keeps them all.
func onItsNodes(sums []gpu.Summary, p runner.PhaseState) []gpu.Summary {
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

// phaseGPUs are the GPUs of this machine a phase's summary covers: its
// gpus: (nil, all), or none for a phase on Slurm, whose jobs ran on the
// cluster's nodes (whose GPUs, read through dcgm:slurm-nodes, are
// remote and always covered).
func phaseGPUs(ph *campaign.Phase) []int {
	if ph.Slurm != nil {
		return []int{}
	}
	return ph.GPUs
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
			w.summary.set(p.ID, PhaseGPUsOver(w.gpus, ph, p, p.Started, p.Ended))
		}
		if !p.Status.Finished() && have {
			w.summary.drop(p.ID) // running again
		}
	}
	w.summary.save()
}

// PhaseGPUsOver are a phase's GPUs summarised over [from, to]: those
// its gpus: names here, and on Slurm those of the nodes its job ran on.
// The phase's summary and the monitor's facts of each of its steps
// (daemon's witness) are both this.
func PhaseGPUsOver(h GPUHistory, ph *campaign.Phase, p runner.PhaseState, from, to time.Time) []gpu.Summary {
	return onItsNodes(h.Summarize(from, to, phaseGPUs(ph)), p)
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
