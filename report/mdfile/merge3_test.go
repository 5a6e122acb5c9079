package mdfile

import "testing"

// TestMerge3: lines added on both sides of a parting are both kept, our
// blocks reduced to their markers; a conflict says so.
func TestMerge3(t *testing.T) {
	block := BeginMarker("header") + "old body\n" + EndMarker("header")
	newBlock := BeginMarker("header") + "new body, longer\n" + EndMarker("header")
	base := "# notes\n" + block + "tail\n"
	cases := []struct {
		name, a, b, want string
		ok               bool
	}{
		{"both add, apart", "# notes\ntop a\n" + newBlock + "tail\n", "# notes\n" + block + "tail\nend b\n",
			"# notes\ntop a\n" + BeginMarker("header") + EndMarker("header") + "tail\nend b\n", true},
		{"both add at the end: a's first", base + "a\n", base + "b\n",
			"# notes\n" + BeginMarker("header") + EndMarker("header") + "tail\na\nb\n", true},
		{"one deletes, one adds", "# notes\n" + block, base + "b\n",
			"# notes\n" + BeginMarker("header") + EndMarker("header") + "b\n", true},
		{"both change one line", "# notes\n" + block + "tail A\n", "# notes\n" + block + "tail B\n", "", false},
	}
	for _, c := range cases {
		got, ok := merge3(base, c.a, c.b)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("%s: merge3 = %q, %v; want %q, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
