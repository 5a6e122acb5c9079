package state

import (
	"slices"
	"testing"
)

// TestVerbsRoundTrip: the verb a client's method asks for is the verb
// whose row calls that method on the runner, for every verb; commands
// map to their verbs and nothing else does; a point's target comes back
// whole.
func TestVerbsRoundTrip(t *testing.T) {
	for _, r := range verbs {
		var got Verb
		var gotTarget string
		remote := Remote(func(v Verb, target string) error { got, gotTarget = v, target; return nil })
		if err := Apply(remote, r.verb, "p1"); err != nil {
			t.Fatal(err)
		}
		if got != r.verb {
			t.Errorf("Apply(%s) called the method that asks for %s", r.verb, got)
		}
		if want := map[bool]string{true: "p1", false: ""}[r.verb.TakesPhase() || r.verb == VerbNote]; gotTarget != want { // a note's target is its text
			t.Errorf("%s carried %q, want %q", r.verb, gotTarget, want)
		}
		if r.typed != "" {
			if v, ok := Typed(r.typed); !ok || v != r.verb {
				t.Errorf("command %s = %s, want %s", r.typed, v, r.verb)
			}
		}
		if (r.rule != nil) != r.phase {
			t.Errorf("%s names a phase (%v) but has a phase rule %v", r.verb, r.phase, r.rule != nil)
		}
		if p := r.point; p != "" && (!p.TakesPhase() || rowOf(p).rule == nil) {
			t.Errorf("%s with --point is %s, not a verb of a phase", r.verb, p)
		}
	}
	if v, ok := Typed("approve"); !ok || v != VerbApprove || !v.Gate() {
		t.Errorf("approve = %s %v", v, ok)
	}
	for _, c := range []string{"state", "freeze", "logs", "skip-point", ""} {
		if v, ok := Typed(c); ok {
			t.Errorf("command %q is verb %s; no command types it", c, v)
		}
	}
	var target string
	Apply(Remote(func(_ Verb, t string) error { target = t; return nil }), VerbSkipPoint, PointTarget("gemm", "m=64,shape=down"))
	if p, pt := SplitTarget(target); p != "gemm" || pt != "m=64,shape=down" {
		t.Errorf("a point's target came back as %q %q", p, pt)
	}
	if err := Apply(Remote(func(Verb, string) error { return nil }), "bogus", ""); err == nil {
		t.Error("an unknown verb was carried out")
	}
}

// TestSaid: each verb's words, live and stopped, a phase's and a point's
// put in, nothing of fmt's own (no %!(EXTRA) for the point a phase's
// words leave out).
func TestSaid(t *testing.T) {
	for _, c := range []struct {
		v            Verb
		target, want string
	}{
		{VerbSkip, "decode", "decode: skipped (a running one is stopped first; a failed one is let go)"},
		{VerbRetryPoint, PointTarget("decode", "c=64"), "decode: point c=64 queued to run again; the other points' runs are kept"},
		{VerbApprove, "nsys", "nsys greenlit"},
		{VerbResume, "", "resumed"},
	} {
		if got := Said(c.v, c.target); got != c.want {
			t.Errorf("%s %q: %q; want %q", c.v, c.target, got, c.want)
		}
	}
	if got, ok := SaidStopped(VerbSkipPoint, PointTarget("gemm", "m=8"), Running); !ok || got != "gemm: point m=8 skipped: it stays skipped when the campaign runs again" {
		t.Errorf("a point skipped while stopped: %q %v", got, ok)
	}
	if got, _ := SaidStopped(VerbSkip, "decode", Failed); got != "decode let go: it stays failed, and does not run again when the campaign runs" {
		t.Errorf("a failed phase skipped while stopped: %q", got)
	}
	if _, ok := SaidStopped(VerbRetry, "decode", Failed); ok || VerbRetry.TakenStopped() {
		t.Error("retry is taken by a stopped campaign's journal; it starts a runner")
	}
}

// TestVerbRules: each verb of a phase is taken in the statuses its row
// names and refused in the others, with the row's words; a gate once
// given is not given again; a failed phase let go is not let go again.
func TestVerbRules(t *testing.T) {
	all := []Status{Pending, Waiting, Running, Ready, Done, Failed, Skipped, Blocked, Stopped}
	for _, r := range verbs {
		if r.rule == nil {
			continue
		}
		for _, st := range all {
			p := &PhaseState{ID: "x", Status: st, Manual: true}
			err := allowed(r.verb, "x", true, p, false)
			if want := slices.Contains(r.rule.in, st); (err == nil) != want {
				t.Errorf("%s of a %s phase: %v; want taken %v", r.verb, st, err, want)
			}
		}
	}
	p := &PhaseState{ID: "x", Status: Waiting, Manual: true}
	if !p.Gated() {
		t.Error("a phase waiting at its gate is not gated")
	}
	if p.GateOpen = true; p.Gated() {
		t.Error("a phase whose gate was given is gated")
	}
	if err := allowed(VerbApprove, "x", false, &PhaseState{Status: Pending}, false); err == nil {
		t.Error("a phase with no gate was approved")
	}
	if Record(VerbSkip, Failed) != RecordLetGo || Record(VerbSkip, Running) != RecordPhaseEnd || Record(VerbPause, Running) != "" {
		t.Error("skip's records: let-go for a failed phase, phase-end else; pause writes none")
	}
	if err := allowed(VerbSkip, "x", false, &PhaseState{Status: Failed, LetGo: true}, false); err == nil {
		t.Error("a failed phase let go was let go again")
	}
}
