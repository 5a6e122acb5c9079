package runner

import (
	"cmp"
	"fmt"
	"slices"
	"sync/atomic"
	"syscall"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

// The campaign's own processes on the GPUs after their step has ended: a
// worker still tearing its CUDA context down, a helper that escaped a
// supervisor that could not follow it. A phase that needs a GPU one of
// them holds waits, with that reason, and the runner stops it: it is the
// campaign's (its environment names the campaign's state dir), and no
// step asked to keep it (leave_running).

// Holder is one of the campaign's processes on one of this machine's
// GPUs, as the GPU source saw it last.
type Holder struct {
	GPU   int // the local index
	PID   int
	Name  string
	Mem   uint64 // bytes
	Phase string // the phase whose step started it
}

// holders is what SetHolders last said; read by the loop.
type holders struct {
	now      atomic.Pointer[[]Holder]
	stopping map[int]bool // pids being stopped (the loop's)
}

// SetHolders tells the runner the campaign's processes on this machine's
// GPUs now. It does not wait.
func (r *Runner) SetHolders(h []Holder) {
	h = slices.Clone(h)
	r.held.now.Store(&h)
}

// leftover is a process a finished step of the campaign left on a GPU pr
// needs, or nil: pr's own earlier attempt's too, when it is retried. A
// running phase's processes (a service's workers included) and those a
// step kept on purpose are not leftovers.
func (r *Runner) leftover(pr *phaseRun) *Holder {
	p := r.held.now.Load()
	if p == nil || pr.ph.Slurm != nil {
		return nil
	}
	for i := range *p {
		h := &(*p)[i]
		o, err := r.find(h.Phase)
		if err != nil || o.cur != nil && !o.cur.proc.exitedSeen {
			continue
		}
		if slices.ContainsFunc(r.kept, func(k supervise.Kept) bool { return k.PID == h.PID }) {
			continue
		}
		if syscall.Kill(h.PID, 0) == syscall.ESRCH {
			continue // gone since the GPU source looked: a service just stopped
		}
		if pr.ph.GPUs == nil || slices.Contains(pr.ph.GPUs, h.GPU) {
			return h
		}
	}
	return nil
}

// stopLeftover stops a leftover once (its own TERM, grace, KILL), saying
// so: it holds a GPU the next phase needs.
func (r *Runner) stopLeftover(h *Holder, pr *phaseRun) {
	if r.held.stopping == nil {
		r.held.stopping = map[int]bool{}
	}
	if r.held.stopping[h.PID] {
		return
	}
	r.held.stopping[h.PID] = true
	r.warn(fmt.Sprintf("%s, holding %s on GPU %d, was left running by phase %s: stopping it before %s", holderName(h), format.Bytes(h.Mem), h.GPU, h.Phase, pr.ph.Label()))
	go supervise.StopLeft(h.PID, r.dirs.Root(), r.opts.Grace)
}

// leftoverWait is why pr waits for a leftover, "" when none holds it.
func (r *Runner) leftoverWait(pr *phaseRun) string {
	h := r.leftover(pr)
	if h == nil {
		return ""
	}
	return fmt.Sprintf("waits for GPU %d held by %s (%s), left by phase %s", h.GPU, holderName(h), format.Bytes(h.Mem), h.Phase)
}

func holderName(h *Holder) string {
	return fmt.Sprintf("pid %d %s", h.PID, cmp.Or(h.Name, "?"))
}
