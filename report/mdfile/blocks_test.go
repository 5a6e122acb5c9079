package mdfile

import (
	"strings"
	"testing"
)

// FuzzMerge: whatever the file holds, merging our blocks in gives back the
// user's text outside them byte for byte, one block per id, and a second
// merge changes nothing.
func FuzzMerge(f *testing.F) {
	f.Add("# title\n\nnotes\n")
	f.Add("<!-- greenlight:begin header -->\nold\n<!-- greenlight:end header -->\nmine\n")
	f.Add("<!-- greenlight:begin phase:a -->\nx\n<!-- greenlight:begin phase:b -->\n<!-- greenlight:end phase:a -->\n")
	f.Add("no newline at end")
	f.Add("<!-- greenlight:end header -->\n\r\n<!-- greenlight:begin header -->\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		bodies := map[string]string{"header": "H <!-- greenlight:end header -->\n<!-- greenlight:end header -->\n", "phase:a": "A", "phase:b": "B\n"}
		order := []string{"header", "phase:a", "phase:b"}
		out, _ := merge(in, bodies, order)
		want := UserText(in)
		got := UserText(out)
		if got != want && !(got == want+"\n" && !strings.HasSuffix(want, "\n")) {
			t.Fatalf("user text changed:\nin   %q\nout  %q\nwant %q\ngot  %q", in, out, want, got)
		}
		segs, _ := parse(out)
		seen := map[string]int{}
		for _, s := range segs {
			if s.id != "" {
				seen[s.id]++
			}
		}
		for _, id := range order {
			if seen[id] != 1 {
				t.Fatalf("block %s appears %d times in %q", id, seen[id], out)
			}
		}
		if again, _ := merge(out, bodies, order); again != out {
			t.Fatalf("second merge changed the file:\n%q\n%q", out, again)
		}
	})
}
