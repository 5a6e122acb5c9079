package report

import (
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// TestProcessesOfASweep: a few steps are listed one by one; a sweep's
// many are one line, the CPU summed and the largest peak named with its
// step; a step not ended yet is not counted.
func TestProcessesOfASweep(t *testing.T) {
	var states []runner.StepState
	var steps []*campaign.Step
	for i := range 12 {
		s := runner.StepState{Index: i, Ended: t0, CPU: time.Second, PeakMem: uint64(i+1) << 20, PeakOf: "process"}
		if i == 11 {
			s.Ended = time.Time{} // running
		}
		states = append(states, s)
		steps = append(steps, &campaign.Step{Name: "point"})
	}
	got := processes(states, steps)
	if want := "- 11 steps: 11s of CPU in all; the largest peak memory 11.0 MiB (its largest process), step 11, point\n"; !strings.HasSuffix(got, want) {
		t.Errorf("a sweep's processes:\n%s\nwant the line %q", got, want)
	}
	if got := processes(states[:3], steps); strings.Count(got, "\n- step ") != 3 {
		t.Errorf("three steps are not listed one by one:\n%s", got)
	}
}
