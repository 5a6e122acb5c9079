package runner

import "github.com/greenlight-run/greenlight/runner/state"

// A step of a sweep skipped by a decision, not run: its typed reason
// (state.SkipBy), by which the results count its unit, and its words. The
// words begin so, for a person reading the Reason; nothing reads them
// back.
const (
	whyPrecise   = "precise after "
	whyByYou     = "skipped by you (point "
	whyUntil     = "until: failed: "
	whyNotProbed = "not probed: "
)

// skipStep marks a step skipped, by, saying why.
func skipStep(ss *StepState, by state.SkipBy, why string) {
	ss.Status, ss.Reason, ss.Skip = Skipped, why, by
}
