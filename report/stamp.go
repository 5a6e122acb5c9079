package report

// A result's validity stamp: what was wrong on its GPUs while the step
// that produced it ran. The row is kept and judged; the stamp says why a
// reader, or a comparison, should doubt it. The monitor judged it as the
// step ended, and the runner journaled it with the step's facts
// (runner.StepFacts): the record reads it, never judges it again.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// factsOf are the facts of a run of a step, as its end fixed them; those a
// state dir from before the runner journaled them kept beside it when
// the journal has none; nil when none are known (a running step, or no
// monitor).
func (w *Writer) factsOf(p runner.PhaseState, s runner.StepState) *runner.StepFacts {
	if s.Facts != nil {
		return s.Facts
	}
	return w.older[factsKey(p, s)]
}

// stepStamp is the stamp of the step at index i of phase p.
func (w *Writer) stepStamp(p *runner.PhaseState, i int) []string {
	if i >= len(p.Steps) {
		return nil
	}
	if f := w.factsOf(*p, p.Steps[i]); f != nil {
		return f.Stamp
	}
	return nil
}

func factsKey(p runner.PhaseState, s runner.StepState) string {
	return fmt.Sprintf("%s/%d/%d/%d", p.ID, p.Attempt, s.Index, s.Attempt)
}

// olderFacts are the facts a state dir from before they were journaled
// kept in files of their own (a finished step's stamp, its power, its
// clock), by phase/attempt/step/attempt: read, never written.
func olderFacts(stateDir string) map[string]*runner.StepFacts {
	out := map[string]*runner.StepFacts{}
	if stateDir == "" {
		return out
	}
	of := func(key string) *runner.StepFacts {
		if out[key] == nil {
			out[key] = &runner.StepFacts{}
		}
		return out[key]
	}
	read := func(name string, v any) bool {
		b, err := os.ReadFile(filepath.Join(stateDir, name))
		return err == nil && json.Unmarshal(b, v) == nil
	}
	var stamps map[string][]string
	if read("stamps.json", &stamps) {
		for k, v := range stamps {
			of(k).Stamp = v
		}
	}
	var power map[string][2]float64
	if read("step-power.json", &power) {
		for k, v := range power {
			of(k).PowerW, of(k).PowerGPUs = v[0], int(v[1])
		}
	}
	var clocks map[string]float64
	if read("clocks.json", &clocks) {
		for k, v := range clocks {
			of(k).SMClockMHz = v
		}
	}
	return out
}

// stampWarnings are the phase's stamped results, one line per reason,
// with the steps (or points) it fell on.
func stampWarnings(ph *campaign.Phase, p runner.PhaseState, stamps func(i int) []string) []string {
	var order []string
	on := map[string][]string{}
	rows := map[string]int{}
	for i, s := range p.Steps {
		if len(s.Results) == 0 {
			continue
		}
		for _, why := range stamps(i) {
			if _, ok := on[why]; !ok {
				order = append(order, why)
			}
			on[why] = append(on[why], stepLabel(ph, i))
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

// partlySeen are the phase's steps whose GPUs the monitor read only from
// part-way (a runner started again while the step ran, and re-adopted
// it; or a GPU source, a remote exporter, answered only after it began),
// in one line: their stamps, power and clock are of that part.
func partlySeen(ph *campaign.Phase, p runner.PhaseState, facts func(i int) *runner.StepFacts) []string {
	var where []string
	for i, s := range p.Steps {
		f := facts(i)
		if f == nil || f.ReadFrom.IsZero() || len(s.Results) == 0 {
			continue
		}
		where = append(where, fmt.Sprintf("%s from %s", stepLabel(ph, i), f.ReadFrom.Format("15:04:05")))
	}
	if len(where) == 0 {
		return nil
	}
	n, more := len(where), ""
	if n > 5 {
		more = fmt.Sprintf(" and %d more", n-5)
		where = where[:5]
	}
	return []string{fmt.Sprintf("the GPUs of %d step(s) were read only from part-way through them (no reading before: a runner started again while they ran, or a GPU source answered late): %s%s; what they did before (a throttle, a process not of the campaign) is not known, and their energy is not given", n, strings.Join(where, ", "), more)}
}

// stepLabel names step i of a phase in a warning: "step 3", or its
// point and repeat in a sweep ("m=64 (repeat 2)").
func stepLabel(ph *campaign.Phase, i int) string {
	all := ph.AllSteps()
	if i < len(all) && all[i].Unit != nil && ph.Sweep != nil && len(ph.Sweep.Axes) > 0 {
		return fmt.Sprintf("%s (repeat %d)", ph.Sweep.Key(*all[i].Unit), all[i].Unit.Repeat)
	}
	return fmt.Sprintf("step %d", i+1)
}
