package link

import (
	"fmt"
	"strings"
)

// Op is a request a client makes of the runner. The table below is the
// one place an op meets the runner's method that carries it out, the
// client's method that asks for it, and the verb a person types.
type Op string

const (
	OpPause      Op = "pause"
	OpResume     Op = "resume"
	OpFreeze     Op = "freeze"
	OpThaw       Op = "thaw"
	OpSkip       Op = "skip"
	OpSkipPoint  Op = "skip-point" // its target is PointTarget(phase, point)
	OpRetry      Op = "retry"
	OpRetryPoint Op = "retry-point" // its target is PointTarget(phase, point)
	OpGreenlight Op = "greenlight"
	OpStop       Op = "stop"
	OpState      Op = "state" // the whole state, results included (answered by the link)
	OpNote       Op = "note"  // its target is the note's text
)

// Controls are the runner's controls, as runner.Runner has them and as a
// window asks for them.
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

type opEntry struct {
	op    Op
	verb  string // the command a person types; "" when it has none
	phase bool   // it names a phase
	do    func(c Controls, phase string) error
	said  string // what a person is told once the runner took it; %[1]s the phase, %[2]s the point
}

var ops = []opEntry{
	{OpPause, "pause", false, func(c Controls, _ string) error { return c.Pause() },
		"paused: the running steps finish, no new one starts; `greenlight resume` lets it go on"},
	{OpResume, "resume", false, func(c Controls, _ string) error { return c.Resume() }, "resumed"},
	{OpFreeze, "", false, func(c Controls, _ string) error { return c.Freeze() }, "frozen"},
	{OpThaw, "", false, func(c Controls, _ string) error { return c.Thaw() }, "thawed"},
	{OpStop, "stop", false, func(c Controls, _ string) error { return c.Stop() },
		"stopping the campaign's running steps; its runner ends once they have"},
	{OpSkip, "skip", true, func(c Controls, p string) error { return c.Skip(p) },
		"%[1]s: skipped (a running one is stopped first; a failed one is let go)"},
	{OpSkipPoint, "", true, func(c Controls, t string) error { p, pt := SplitTarget(t); return c.SkipPoint(p, pt) },
		"%[1]s: point %[2]s skipped; the phase goes on with its other points"},
	{OpRetry, "retry", true, func(c Controls, p string) error { return c.Retry(p) },
		"%[1]s: queued to run again (a new attempt); `greenlight status` follows it"},
	{OpRetryPoint, "", true, func(c Controls, t string) error { p, pt := SplitTarget(t); return c.RetryPoint(p, pt) },
		"%[1]s: point %[2]s queued to run again; the other points' runs are kept"},
	{OpGreenlight, "approve", true, func(c Controls, p string) error { return c.Greenlight(p) }, "%[1]s greenlit"},
	{OpNote, "note", false, func(c Controls, text string) error { return c.Note(text) }, "noted"},
}

// Said is what a person is told once the runner took op for target.
func Said(op Op, target string) string {
	e := entry(op)
	if e == nil {
		return string(op)
	}
	if !strings.Contains(e.said, "%") {
		return e.said
	}
	phase, point := SplitTarget(target)
	return fmt.Sprintf(e.said, phase, point) // indexed verbs: an unused point is no EXTRA
}

func entry(op Op) *opEntry {
	for i := range ops {
		if ops[i].op == op {
			return &ops[i]
		}
	}
	return nil
}

// OpOfVerb is the op a command (approve, pause, ...) asks for.
func OpOfVerb(verb string) (Op, bool) {
	for _, e := range ops {
		if e.verb != "" && e.verb == verb {
			return e.op, true
		}
	}
	return "", false
}

// PointTarget is what a point's op names: its phase and its point, as one
// string on the link ("gemm@m=64,shape=down"); a phase id has no "@".
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

// TakesPhase says the op names a phase.
func (op Op) TakesPhase() bool {
	e := entry(op)
	return e != nil && e.phase
}

// Apply carries out op on the runner's controls.
func Apply(c Controls, op Op, phase string) error {
	e := entry(op)
	if e == nil {
		return fmt.Errorf("unknown request %q", op)
	}
	return e.do(c, phase)
}

// Remote asks a runner for ops through request: it is Controls on the
// client's side of the link.
type Remote func(op Op, phase string) error

func (r Remote) Pause() error         { return r(OpPause, "") }
func (r Remote) Resume() error        { return r(OpResume, "") }
func (r Remote) Freeze() error        { return r(OpFreeze, "") }
func (r Remote) Thaw() error          { return r(OpThaw, "") }
func (r Remote) Stop() error          { return r(OpStop, "") }
func (r Remote) Skip(id string) error { return r(OpSkip, id) }
func (r Remote) SkipPoint(id, point string) error {
	return r(OpSkipPoint, PointTarget(id, point))
}
func (r Remote) Retry(id string) error { return r(OpRetry, id) }
func (r Remote) RetryPoint(id, point string) error {
	return r(OpRetryPoint, PointTarget(id, point))
}
func (r Remote) Greenlight(id string) error { return r(OpGreenlight, id) }
func (r Remote) Note(text string) error     { return r(OpNote, text) }

var _ Controls = Remote(nil)
