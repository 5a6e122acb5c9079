package mdfile

import (
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
)

// Two versions of the user's text can part from one base: an editor saved
// a file that a write had just replaced (the rewrite lands in the displaced
// file) while the file at the path got saves of its own. Both are theirs.
// merge3 merges the two by lines against the base, as version control
// does, over the files' skeletons (our blocks reduced to their markers:
// only the user's lines and where our blocks stand are merged; the blocks
// are rendered afresh anyway).

// skeleton is content with each of our blocks reduced to its two markers.
func skeleton(content string) string {
	segs, _ := parse(content)
	var b strings.Builder
	for _, s := range segs {
		if s.id == "" {
			b.WriteString(s.text)
			continue
		}
		b.WriteString(BeginMarker(s.id))
		b.WriteString(EndMarker(s.id))
	}
	return b.String()
}

// merge3 merges a and b, both edited from base; false on a conflict (both
// changed the same lines differently).
func merge3(base, a, b string) (string, bool) {
	B, A, R := skeleton(base), skeleton(a), skeleton(b)
	switch {
	case A == B || A == R:
		return R, true
	case R == B:
		return A, true
	}
	edits, ok := udiff.Merge(udiff.Lines(B, A), udiff.Lines(B, R))
	if !ok {
		return "", false
	}
	out, err := udiff.Apply(B, edits)
	return out, err == nil
}
