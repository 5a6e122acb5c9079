package report

// The processes of a phase: what its steps used of the machine, what they
// left running, and whose each process on its GPUs was.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// gpuProcessWarnings are the processes on one of the phase's GPUs that
// were not its own: a stranger's, or one another phase left running.
func gpuProcessWarnings(ph *campaign.Phase, p runner.PhaseState, g gpu.Summary) []string {
	var warns []string
	for _, f := range g.Foreign {
		if leftBy(p.Steps, f.PID) {
			continue // a step's own, named with what it left (seen only as it ended)
		}
		warns = append(warns, fmt.Sprintf("a process not of this campaign was on GPU %s: pid %d %s, %s", g.Device.Label(), f.PID, orNA(f.Name), format.Bytes(f.MemUsed)))
	}
	for _, f := range g.Ours {
		// The campaign's, started by another phase's step: two running
		// phases never share a GPU, so it was left running.
		// (A service's window holds its clients' runs: not said there.)
		if f.Phase != "" && f.Phase != p.ID && ph.Service == nil && !slices.Contains(ph.Needs, f.Phase) {
			warns = append(warns, fmt.Sprintf("a process left running by phase %s was on GPU %s: pid %d %s, %s", f.Phase, g.Device.Label(), f.PID, orNA(f.Name), format.Bytes(f.MemUsed)))
		}
	}
	return warns
}

// processes is a phase's steps' use of the machine: each ended step's CPU
// time and peak memory, with what the peak is of; past a handful of steps
// (a sweep's hundreds) the sum of the CPU and the largest peak, with its
// step.
func processes(states []runner.StepState, steps []*campaign.Step) string {
	label := func(i int) string {
		if i < len(steps) {
			return ", " + cell(steps[i].Label())
		}
		return ""
	}
	of := func(s runner.StepState) string {
		if s.PeakOf == "cgroup" {
			return "its cgroup: all its processes at once"
		}
		return "its largest process"
	}
	var ended []int
	for i, s := range states {
		if !s.Ended.IsZero() && (s.CPU > 0 || s.PeakMem > 0) {
			ended = append(ended, i)
		}
	}
	if len(ended) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n### Processes\n\n")
	if len(ended) <= 6 {
		for _, i := range ended {
			s := states[i]
			fmt.Fprintf(&b, "- step %d%s: %s of CPU · peak memory %s (%s)\n", i+1, label(i), format.Duration(s.CPU), format.Bytes(s.PeakMem), of(s))
		}
		return b.String()
	}
	var cpu time.Duration
	top := ended[0]
	for _, i := range ended {
		cpu += states[i].CPU
		if states[i].PeakMem > states[top].PeakMem {
			top = i
		}
	}
	fmt.Fprintf(&b, "- %d steps: %s of CPU in all; the largest peak memory %s (%s), step %d%s\n", len(ended), format.Duration(cpu), format.Bytes(states[top].PeakMem), of(states[top]), top+1, label(top))
	return b.String()
}

// leftBy says one of the steps left pid running when its command ended.
func leftBy(steps []runner.StepState, pid int) bool {
	for _, s := range steps {
		if slices.Contains(s.LeftPIDs, pid) {
			return true
		}
	}
	return false
}

// leftWords says what a step left running when its command ended, with
// the GPU memory each held, and what became of them.
func leftWords(s runner.StepState, gpus []gpu.Summary) string {
	named := make([]string, 0, len(s.Left))
	for i, l := range s.Left {
		if i < len(s.LeftPIDs) {
			for _, g := range gpus {
				for _, f := range append(g.Ours, g.Foreign...) {
					if f.PID == s.LeftPIDs[i] && f.MemUsed > 0 {
						l += fmt.Sprintf(" holding %s on GPU %s", format.Bytes(f.MemUsed), g.Device.Label())
					}
				}
			}
		}
		named = append(named, l)
	}
	end := "stopped with the step"
	if s.LeftKept {
		end = "kept running (leave_running) until the campaign's end"
	}
	n := fmt.Sprintf("%d processes", len(s.LeftPIDs))
	switch {
	case len(s.Left) > len(s.LeftPIDs):
		n = fmt.Sprintf("more than %d processes", len(s.LeftPIDs))
	case len(s.LeftPIDs) == 1:
		n = "1 process"
	}
	return fmt.Sprintf("step %d left %s running: %s; %s", s.Index+1, n, strings.Join(named, ", "), end)
}
