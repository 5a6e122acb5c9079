package link

import "testing"

// TestSaid: each op's words, a phase's and a point's put in, nothing of
// fmt's own (no %!(EXTRA) for the point a phase's words leave out).
func TestSaid(t *testing.T) {
	for _, c := range []struct {
		op           Op
		target, want string
	}{
		{OpSkip, "decode", "decode: skipped (a running one is stopped first; a failed one is let go)"},
		{OpRetryPoint, PointTarget("decode", "c=64"), "decode: point c=64 queued to run again; the other points' runs are kept"},
		{OpGreenlight, "nsys", "nsys greenlit"},
		{OpResume, "", "resumed"},
	} {
		if got := Said(c.op, c.target); got != c.want {
			t.Errorf("%s %q: %q; want %q", c.op, c.target, got, c.want)
		}
	}
}
