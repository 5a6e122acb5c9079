package link

import "testing"

// TestOpsRoundTrip: the op a client's method asks for is the op whose
// table entry calls that method on the runner, for every op; verbs map
// to their ops and nothing else does.
func TestOpsRoundTrip(t *testing.T) {
	for _, e := range ops {
		var got Op
		var gotPhase string
		remote := Remote(func(op Op, phase string) error { got, gotPhase = op, phase; return nil })
		if err := Apply(remote, e.op, "p1"); err != nil {
			t.Fatal(err)
		}
		if got != e.op {
			t.Errorf("Apply(%s) called the method that asks for %s", e.op, got)
		}
		if want := map[bool]string{true: "p1", false: ""}[e.op.TakesPhase() || e.op == OpNote]; gotPhase != want { // a note's target is its text
			t.Errorf("%s carried phase %q, want %q", e.op, gotPhase, want)
		}
		if e.verb != "" {
			if op, ok := OpOfVerb(e.verb); !ok || op != e.op {
				t.Errorf("verb %s = %s, want %s", e.verb, op, e.op)
			}
		}
	}
	if op, ok := OpOfVerb("approve"); !ok || op != OpGreenlight {
		t.Errorf("approve = %s %v", op, ok)
	}
	for _, v := range []string{"state", "freeze", "logs", ""} {
		if op, ok := OpOfVerb(v); ok {
			t.Errorf("verb %q is op %s; it is no control verb", v, op)
		}
	}
	var target string
	Apply(Remote(func(_ Op, t string) error { target = t; return nil }), OpSkipPoint, PointTarget("gemm", "m=64,shape=down"))
	if p, pt := SplitTarget(target); p != "gemm" || pt != "m=64,shape=down" {
		t.Errorf("a point's target came back as %q %q", p, pt)
	}
	if err := Apply(Remote(func(Op, string) error { return nil }), "bogus", ""); err == nil {
		t.Error("an unknown op was carried out")
	}
}
