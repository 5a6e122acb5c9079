package report

// A result's validity stamp: what was wrong on its GPUs while the step
// that produced it ran. The row is kept and judged; the stamp says why a
// reader, or a comparison, should doubt it.

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/report/trace"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// benignThrottle are clock-event reasons that are no sign of trouble: the
// clocks a user set, boost held in sync, the display clock. "SW power
// cap" is a saturated GPU's steady state (an H200's large GEMMs run at
// their 700 W): it stamps a row only where the power limit was lowered
// below the board's default.
var benignThrottle = []string{"app clocks", "sync boost", "display clock"}

const stampsFile = "stamps.json"

// stamp is why the rows of step s were taken under bad conditions; nil
// when nothing was wrong. A finished step's stamp is fixed (and kept in
// the state dir for `greenlight report`); a running step's grows.
func (w *Writer) stamp(ph *campaign.Phase, p runner.PhaseState, s runner.StepState) []string {
	key := fmt.Sprintf("%s/%d/%d/%d", p.ID, p.Attempt, s.Index, s.Attempt)
	if st, ok := w.stamps.get(key); ok {
		return st
	}
	if s.Started.IsZero() {
		return nil
	}
	end := s.Ended
	if end.IsZero() {
		end = time.Now()
	}
	var out []string
	if w.gpus != nil {
		for _, g := range w.stepGPUs(ph, p, s, end) {
			label := gpuLabel(g.Device)
			var bad []string
			for _, t := range g.Throttle {
				switch {
				case slices.Contains(benignThrottle, t):
				case t == "SW power cap":
					if c, ok := w.gpuConditions(g.Device); ok && c.Capped() {
						bad = append(bad, fmt.Sprintf("SW power cap at %.0f W, below its default %.0f W", c.PowerLimitW, c.PowerDefault))
					}
				default:
					bad = append(bad, t)
				}
			}
			if len(bad) > 0 {
				out = append(out, fmt.Sprintf("GPU %s throttled (%s)", label, strings.Join(bad, ", ")))
			}
			for _, f := range g.Foreign {
				out = append(out, fmt.Sprintf("a process not of this campaign was on GPU %s (pid %d %s)", label, f.PID, orNA(f.Name)))
			}
			if len(g.XIDs) > 0 {
				out = append(out, fmt.Sprintf("GPU %s reported XID %s", label, joinInts(g.XIDs)))
			}
			if g.ECCNew > 0 {
				out = append(out, fmt.Sprintf("GPU %s counted %d uncorrected ECC error(s)", label, g.ECCNew))
			}
			if g.Lost {
				out = append(out, fmt.Sprintf("GPU %s stopped answering", label))
			}
		}
	}
	if cb := w.clientBound(p, s); cb != "" {
		out = append(out, cb)
	}
	if w.profiled(p, s.Started, end) {
		out = append(out, "a profiler capture ran (trace files written during the step)")
	}
	if !s.Ended.IsZero() && s.Status.Finished() && w.gpus != nil {
		w.stamps.set(key, out)
	}
	return out
}

// gpuConditions is a device's setup as last read (at the start of the
// step's phase, or since).
func (w *Writer) gpuConditions(d gpu.Device) (gpu.Conditions, bool) {
	if w.conds == nil {
		return gpu.Conditions{}, false
	}
	for _, c := range w.conds.Last.GPUs {
		if c.Host == d.Host && c.Index == d.Index {
			return c, true
		}
	}
	return gpu.Conditions{}, false
}

// stepStamp is the stamp of the step at index i of phase p.
func (w *Writer) stepStamp(p *runner.PhaseState, i int) []string {
	ph := w.plan.Phase(p.ID)
	if ph == nil || i >= len(p.Steps) {
		return nil
	}
	return w.stamp(ph, *p, p.Steps[i])
}

// profiled says a trace artifact of the phase was written while the
// step ran: its numbers include the profiler's cost.
func (w *Writer) profiled(p runner.PhaseState, from, to time.Time) bool {
	for _, a := range p.Artifacts {
		if !trace.IsTrace(a.Path) {
			continue
		}
		fi, err := os.Stat(w.traces.abs(a.Path))
		if err == nil && !fi.ModTime().Before(from.Add(-time.Second)) && !fi.ModTime().After(to.Add(time.Second)) {
			return true
		}
	}
	return false
}

// stampWarnings are the phase's stamped results, one line per reason,
// with the steps (or points) it fell on.
func stampWarnings(ph *campaign.Phase, p runner.PhaseState, stamps func(i int) []string) []string {
	var order []string
	on := map[string][]string{}
	rows := map[string]int{}
	all := ph.AllSteps()
	for i, s := range p.Steps {
		if len(s.Results) == 0 {
			continue
		}
		for _, why := range stamps(i) {
			if _, ok := on[why]; !ok {
				order = append(order, why)
			}
			label := fmt.Sprintf("step %d", i+1)
			if i < len(all) && all[i].Unit != nil && ph.Sweep != nil && len(ph.Sweep.Axes) > 0 {
				label = fmt.Sprintf("%s (repeat %d)", ph.Sweep.Key(*all[i].Unit), all[i].Unit.Repeat)
			}
			on[why] = append(on[why], label)
			rows[why] += len(s.Results)
		}
	}
	var out []string
	for _, why := range order {
		where := on[why]
		more := ""
		if len(where) > 5 {
			more = fmt.Sprintf(" and %d more", len(where)-5)
			where = where[:5]
		}
		out = append(out, fmt.Sprintf("%d result(s) taken while %s: %s%s (stamped in the CSV and the record)", rows[why], why, strings.Join(where, ", "), more))
	}
	return out
}

// StampOf is why the rows of step i of phase p were taken under bad
// conditions (nil: nothing was wrong), as the record stamps them: for the
// runner, which never lets a search decide by such a run.
func (w *Writer) StampOf(p runner.PhaseState, i int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stepSums == nil {
		w.stepSums = map[stepKey][]gpu.Summary{}
	}
	return w.stepStamp(&p, i)
}
