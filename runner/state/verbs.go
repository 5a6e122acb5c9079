package state

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
	VerbSkip       Verb = "skip"
	VerbSkipPoint  Verb = "skip --point"
	VerbRetry      Verb = "retry"
	VerbRetryPoint Verb = "retry --point"
	VerbApprove    Verb = "approve"
)

// verbRule is a verb's row.
type verbRule struct {
	in   []Status // the phase statuses it is taken in
	gate bool     // the phase must have a manual gate
	// letsGo: taken for a failed phase, it lets the phase go (it stays
	// failed; no service is kept up for it), once.
	letsGo bool
	refuse string // why not, of (phase, status)
}

// LetsGo says verb v, taken for a phase in status st, lets a failed
// phase go rather than ending it.
func LetsGo(v Verb, st Status) bool { return st == Failed && verbs[v].letsGo }

// notFinished are the statuses of a phase that has more to run: a stop
// of the campaign cut it (Stopped), or it waits, runs or is blocked.
var notFinished = []Status{Pending, Waiting, Blocked, Running, Ready, Stopped}

var verbs = map[Verb]verbRule{
	VerbSkip: {in: append(slices.Clone(notFinished), Failed), letsGo: true,
		refuse: "phase %q is %s; only a phase not yet finished can be skipped, or a failed one let go"},
	VerbSkipPoint: {in: notFinished,
		refuse: "phase %q is %s; a point can be skipped while its phase has not finished"},
	VerbRetry: {in: []Status{Failed, Skipped, Blocked, Stopped, Done},
		refuse: "phase %q is %s; retry a phase that has finished"},
	VerbRetryPoint: {in: []Status{Failed, Skipped, Blocked, Stopped, Done},
		refuse: "phase %q is %s; retry a point of a phase that has finished (its other points are kept)"},
	VerbApprove: {in: []Status{Pending, Waiting, Stopped}, gate: true,
		refuse: "phase %q is %s: past its gate"},
}

// Allowed says whether verb v is taken for phase ph as p stands, and if
// not why: the one precondition, live and stopped, for the verbs and the
// window alike. gateOpen: the phase's gate was already given.
func Allowed(v Verb, ph *campaign.Phase, p *PhaseState, gateOpen bool) error {
	return allowed(v, ph.ID, ph.Manual, p, gateOpen)
}

// allowed is Allowed of a phase by its id and whether it has a gate.
func allowed(v Verb, id string, manual bool, p *PhaseState, gateOpen bool) error {
	rule, ok := verbs[v]
	if !ok {
		return fmt.Errorf("%s is not a verb of a phase", v)
	}
	if rule.gate && !manual {
		return fmt.Errorf("phase %q has no manual gate", id)
	}
	if rule.gate && gateOpen {
		return fmt.Errorf(rule.refuse, id, "greenlit already")
	}
	if !slices.Contains(rule.in, p.Status) {
		return fmt.Errorf(rule.refuse, id, p.Status)
	}
	if p.Status == Failed && p.LetGo && LetsGo(v, Failed) {
		return fmt.Errorf("phase %q failed and was let go already (greenlight retry %s runs it again)", id, id)
	}
	return nil
}

// Gated says a greenlight would open the phase's gate: the verbs' one
// rule (Allowed), for the window's g, approve, --approve and the runner:
// it has a gate (gate: manual) not yet given, and has not passed it
// (pending, waiting there, or stopped before it).
func (p *PhaseState) Gated() bool {
	return allowed(VerbApprove, p.ID, p.Manual, p, p.GateOpen) == nil
}
