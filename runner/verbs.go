package runner

import (
	"fmt"
	"slices"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

// The verbs a person says to a phase (the window's keys, the shell's
// greenlight skip/retry/approve, skip --point), as one table: each verb's
// precondition on the phase as it stands, the journal record it writes,
// and its words when it is refused. The live runner and a stopped
// campaign's journal (TakeWhileStopped) take a verb by the same row, so a
// verb refused live is refused stopped, and the other way round.

// Verb is something a person says to a phase.
type Verb string

const (
	VerbSkip      Verb = "skip"
	VerbSkipPoint Verb = "skip --point"
	VerbRetry     Verb = "retry"
	VerbApprove   Verb = "approve"
)

// verbRule is a verb's row.
type verbRule struct {
	in     []Status // the phase statuses it is taken in
	gate   bool     // the phase must have a manual gate
	record string   // the journal record it writes
	refuse string   // why not, of (phase, status)
}

// notFinished are the statuses of a phase that has more to run: a stop
// of the campaign cut it (Stopped), or it waits, runs or is blocked.
var notFinished = []Status{Pending, Waiting, Blocked, Running, Ready, Stopped}

var verbs = map[Verb]verbRule{
	VerbSkip: {in: notFinished, record: recPhaseEnd,
		refuse: "phase %q is %s; only a phase not yet finished can be skipped (a failed one: retry it, or leave it)"},
	VerbSkipPoint: {in: notFinished, record: recPointSkip,
		refuse: "phase %q is %s; a point can be skipped while its phase has not finished"},
	VerbRetry: {in: []Status{Failed, Skipped, Blocked, Stopped, Done}, record: recRetry,
		refuse: "phase %q is %s; retry a phase that has finished"},
	VerbApprove: {in: []Status{Pending, Waiting, Stopped}, gate: true, record: recGate,
		refuse: "phase %q is %s: past its gate"},
}

// Allowed says whether verb v is taken for phase ph as p stands, and if
// not why: the one precondition, live and stopped, for the verbs and the
// window alike. gateOpen: the phase's gate was already given.
func Allowed(v Verb, ph *campaign.Phase, p *PhaseState, gateOpen bool) error {
	rule, ok := verbs[v]
	if !ok {
		return fmt.Errorf("%s is not a verb of a phase", v)
	}
	if rule.gate && !ph.Manual {
		return fmt.Errorf("phase %q has no manual gate", ph.ID)
	}
	if rule.gate && gateOpen {
		return fmt.Errorf(rule.refuse, ph.ID, "greenlit already")
	}
	if !slices.Contains(rule.in, p.Status) {
		return fmt.Errorf(rule.refuse, ph.ID, p.Status)
	}
	return nil
}
