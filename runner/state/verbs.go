package state

import (
	"fmt"
	"slices"
	"strings"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

// The verbs a person says to a campaign (the window's keys, the shell's
// greenlight pause, skip, retry, approve..., skip --point), as one table.
// Each verb's row holds its request on the link (the Verb's value), the
// command a person types, the runner's method that carries it out, its
// precondition on a phase as it stands (the gate's rule folded in), the
// journal record it writes, whether a stopped campaign takes it, and its
// words. The live runner, a stopped campaign's journal, the link, the
// window, --approve and the command line all read this table; adding a
// verb is a row here, a method of Controls (and of Remote below), and the
// runner's method.

// Verb is something a person says to a campaign; its value is its request
// on the link.
type Verb string

const (
	VerbPause      Verb = "pause"
	VerbResume     Verb = "resume"
	VerbFreeze     Verb = "freeze"
	VerbThaw       Verb = "thaw"
	VerbStop       Verb = "stop"
	VerbSkip       Verb = "skip"
	VerbSkipPoint  Verb = "skip-point" // its target is PointTarget(phase, point)
	VerbRetry      Verb = "retry"
	VerbRetryPoint Verb = "retry-point" // its target is PointTarget(phase, point)
	VerbApprove    Verb = "greenlight"
	VerbNote       Verb = "note" // its target is the note's text
)

// The journal records the verbs write; the runner's journal reads them
// back by these names.
const (
	RecordPhaseEnd  = "phase-end"
	RecordLetGo     = "let-go" // a failed phase will not run again: no service is kept up for it (skip of a failed phase)
	RecordPointSkip = "point-skip"
	RecordRetry     = "retry" // the phase runs again from scratch: its points skipped run again
	RecordGate      = "greenlight"
)

// Controls are the runner's controls, as the runner has them and as a
// window asks for them (Remote).
type Controls interface {
	Pause() error
	Resume() error
	Freeze() error
	Thaw() error
	Stop() error
	Skip(phase string) error
	SkipPoint(phase, point string) error
	Retry(phase string) error
	RetryPoint(phase, point string) error
	Greenlight(phase string) error
	Note(text string) error
}

// phaseRule is a phase verb's precondition and journal record.
type phaseRule struct {
	in     []Status // the phase statuses it is taken in
	gate   bool     // the phase must have a manual gate not yet given
	record string   // the journal record it writes
	// letsGo: taken for a failed phase, it lets the phase go (it stays
	// failed; no service is kept up for it), once: RecordLetGo.
	letsGo bool
	refuse string // why not, of (phase, status)
}

type verbRow struct {
	verb  Verb
	typed string // the command a person types; "" when it has none
	phase bool   // it names a phase (a point verb: PointTarget)
	point Verb   // the verb it is with --point, for a typed verb that takes one
	do    func(c Controls, target string) error
	said  string     // what a person is told once the runner took it; %[1]s the phase, %[2]s the point
	rule  *phaseRule // nil: not a verb of a phase
	// stopped is what a person is told when a campaign no runner runs
	// takes it, journaled for when it runs again ("" when only a runner
	// takes it); stoppedLetGo, of a failed phase let go.
	stopped, stoppedLetGo string
	// runsFinished: said to a finished campaign, it starts the campaign's
	// runner to carry it out, which ends after.
	runsFinished bool
}

// notFinished are the statuses of a phase that has more to run: a stop
// of the campaign cut it (Stopped), or it waits, runs or is blocked.
var notFinished = []Status{Pending, Waiting, Blocked, Running, Ready, Stopped}

// finished are the statuses a phase is retried from.
var finished = []Status{Failed, Skipped, Blocked, Stopped, Done}

var verbs = []verbRow{
	{verb: VerbPause, typed: "pause", do: func(c Controls, _ string) error { return c.Pause() },
		said: "paused: the running steps finish, no new one starts; `greenlight resume` lets it go on"},
	{verb: VerbResume, typed: "resume", do: func(c Controls, _ string) error { return c.Resume() }, said: "resumed"},
	{verb: VerbFreeze, do: func(c Controls, _ string) error { return c.Freeze() }, said: "frozen"},
	{verb: VerbThaw, do: func(c Controls, _ string) error { return c.Thaw() }, said: "thawed"},
	{verb: VerbStop, typed: "stop", do: func(c Controls, _ string) error { return c.Stop() },
		said: "stopping the campaign's running steps; its runner ends once they have"},
	{verb: VerbSkip, typed: "skip", phase: true, point: VerbSkipPoint, do: func(c Controls, p string) error { return c.Skip(p) },
		said: "%[1]s: skipped (a running one is stopped first; a failed one is let go)",
		rule: &phaseRule{in: append(slices.Clone(notFinished), Failed), record: RecordPhaseEnd, letsGo: true,
			refuse: "phase %q is %s; only a phase not yet finished can be skipped, or a failed one let go"},
		stopped:      "%[1]s skipped: what it measured is kept; the campaign goes on without it when it runs again",
		stoppedLetGo: "%[1]s let go: it stays failed, and does not run again when the campaign runs"},
	{verb: VerbSkipPoint, phase: true, do: func(c Controls, t string) error { p, pt := SplitTarget(t); return c.SkipPoint(p, pt) },
		said: "%[1]s: point %[2]s skipped; the phase goes on with its other points",
		rule: &phaseRule{in: notFinished, record: RecordPointSkip,
			refuse: "phase %q is %s; a point can be skipped while its phase has not finished"},
		stopped: "%[1]s: point %[2]s skipped: it stays skipped when the campaign runs again"},
	{verb: VerbRetry, typed: "retry", phase: true, point: VerbRetryPoint, do: func(c Controls, p string) error { return c.Retry(p) },
		said: "%[1]s: queued to run again (a new attempt); `greenlight status` follows it",
		rule: &phaseRule{in: finished, record: RecordRetry, refuse: "phase %q is %s; retry a phase that has finished"}, runsFinished: true},
	{verb: VerbRetryPoint, phase: true, do: func(c Controls, t string) error { p, pt := SplitTarget(t); return c.RetryPoint(p, pt) },
		said: "%[1]s: point %[2]s queued to run again; the other points' runs are kept",
		rule: &phaseRule{in: finished, record: RecordRetry,
			refuse: "phase %q is %s; retry a point of a phase that has finished (its other points are kept)"}, runsFinished: true},
	{verb: VerbApprove, typed: "approve", phase: true, do: func(c Controls, p string) error { return c.Greenlight(p) },
		said: "%[1]s greenlit",
		rule: &phaseRule{in: []Status{Pending, Waiting, Stopped}, gate: true, record: RecordGate,
			refuse: "phase %q is %s: past its gate"},
		stopped: "%[1]s greenlit: it starts when the campaign runs again"},
	{verb: VerbNote, typed: "note", do: func(c Controls, text string) error { return c.Note(text) }, said: "noted"},
}

func rowOf(v Verb) *verbRow {
	for i := range verbs {
		if verbs[i].verb == v {
			return &verbs[i]
		}
	}
	return nil
}

// Typed is the verb a command (approve, pause, ...) says.
func Typed(command string) (Verb, bool) {
	for _, r := range verbs {
		if r.typed != "" && r.typed == command {
			return r.verb, true
		}
	}
	return "", false
}

// TakesPhase says the verb names a phase.
func (v Verb) TakesPhase() bool {
	r := rowOf(v)
	return r != nil && r.phase
}

// WithPoint is the verb v is when said with --point (one point of a
// sweep); "" when it takes no point.
func (v Verb) WithPoint() Verb {
	if r := rowOf(v); r != nil {
		return r.point
	}
	return ""
}

// TakenStopped says a campaign no runner runs takes the verb, journaled
// for when it runs again.
func (v Verb) TakenStopped() bool {
	r := rowOf(v)
	return r != nil && r.stopped != ""
}

// RunsFinished says the verb, said to a finished campaign, starts its
// runner to carry it out (which ends after).
func (v Verb) RunsFinished() bool {
	r := rowOf(v)
	return r != nil && r.runsFinished
}

// Gate says the verb opens a phase's manual gate.
func (v Verb) Gate() bool {
	r := rowOf(v)
	return r != nil && r.rule != nil && r.rule.gate
}

// Apply carries out v on the runner's controls.
func Apply(c Controls, v Verb, target string) error {
	r := rowOf(v)
	if r == nil {
		return fmt.Errorf("unknown request %q", v)
	}
	return r.do(c, target)
}

// Said is what a person is told once the runner took v for target.
func Said(v Verb, target string) string {
	r := rowOf(v)
	if r == nil {
		return string(v)
	}
	return fill(r.said, target)
}

// fill fills a row's words with its target's phase and point.
func fill(s, target string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	phase, point := SplitTarget(target)
	return fmt.Sprintf(s, phase, point) // indexed verbs: an unused point is no EXTRA
}

// SaidStopped is what a person is told when a stopped campaign took v
// for target, a phase in status st; ok is false when only a runner takes
// v.
func SaidStopped(v Verb, target string, st Status) (said string, ok bool) {
	r := rowOf(v)
	if r == nil || r.stopped == "" {
		return "", false
	}
	if LetsGo(v, st) {
		return fill(r.stoppedLetGo, target), true
	}
	return fill(r.stopped, target), true
}

// Record is the journal record v writes for a phase in status st.
func Record(v Verb, st Status) string {
	if LetsGo(v, st) {
		return RecordLetGo
	}
	if r := rowOf(v); r != nil && r.rule != nil {
		return r.rule.record
	}
	return ""
}

// LetsGo says verb v, taken for a phase in status st, lets a failed
// phase go rather than ending it.
func LetsGo(v Verb, st Status) bool {
	r := rowOf(v)
	return st == Failed && r != nil && r.rule != nil && r.rule.letsGo
}

// Allowed says whether verb v is taken for phase ph as p stands, and if
// not why: the one precondition, live and stopped, for the verbs and the
// window alike. gateOpen: the phase's gate was already given.
func Allowed(v Verb, ph *campaign.Phase, p *PhaseState, gateOpen bool) error {
	return allowed(v, ph.ID, ph.Manual, p, gateOpen)
}

// allowed is Allowed of a phase by its id and whether it has a gate.
func allowed(v Verb, id string, manual bool, p *PhaseState, gateOpen bool) error {
	r := rowOf(v)
	if r == nil || r.rule == nil {
		return fmt.Errorf("%s is not a verb of a phase", v)
	}
	rule := r.rule
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

// PointTarget is what a point's verb names: its phase and its point, as
// one string on the link ("gemm@m=64,shape=down"); a phase id has no "@".
func PointTarget(phase, point string) string {
	if point == "" {
		return phase
	}
	return phase + "@" + point
}

// SplitTarget is a target's phase and point ("" when it names a phase).
func SplitTarget(target string) (phase, point string) {
	phase, point, _ = strings.Cut(target, "@")
	return phase, point
}

// Remote asks a runner for verbs through request: it is Controls on the
// client's side of the link.
type Remote func(v Verb, target string) error

func (r Remote) Pause() error         { return r(VerbPause, "") }
func (r Remote) Resume() error        { return r(VerbResume, "") }
func (r Remote) Freeze() error        { return r(VerbFreeze, "") }
func (r Remote) Thaw() error          { return r(VerbThaw, "") }
func (r Remote) Stop() error          { return r(VerbStop, "") }
func (r Remote) Skip(id string) error { return r(VerbSkip, id) }
func (r Remote) SkipPoint(id, point string) error {
	return r(VerbSkipPoint, PointTarget(id, point))
}
func (r Remote) Retry(id string) error { return r(VerbRetry, id) }
func (r Remote) RetryPoint(id, point string) error {
	return r(VerbRetryPoint, PointTarget(id, point))
}
func (r Remote) Greenlight(id string) error { return r(VerbApprove, id) }
func (r Remote) Note(text string) error     { return r(VerbNote, text) }

var _ Controls = Remote(nil)
