package campaign

import (
	"strings"
	"testing"
)

// TestViewKeepsColumns: the view writes quoted keys, anchors and tags,
// merge keys and document markers the plain way at each line's length,
// and an edit found in it is made on the file's own text.
func TestViewKeepsColumns(t *testing.T) {
	for raw, want := range map[string]string{
		`  "id": "probe"`:       `  id:   "probe"`,
		`  - 'name': x`:         `  - name:   x`,
		`env: &common`:          `env:        `,
		`env: &e !!map`:         `env:         `,
		`  <<: *common`:         `  __: *common`,
		`---`:                   `   `,
		`... # end`:             `         `,
		`run: echo "a": b`:      `run: echo "a": b`,
		`title: "x": y`:         `title: "x": y`,
		`- {id: warm, gpus: 1}`: `- {id: warm, gpus: 1}`,
	} {
		got := viewLine(raw)
		if got != want || len(got) != len(raw) {
			t.Errorf("viewLine(%q) = %q; want %q, of its length", raw, got, want)
		}
	}
	raw := []string{`phases:`, `  - "id": a`, `      "steps": &s`, `      - run: x`}
	l := &loader{raw: raw, lines: viewOf(raw)}
	// Line 3 moved two spaces left, as found in the view.
	fix := l.rawFix(&Fix{Line: 3, N: 1, With: []string{shift(l.lines[2], -2)}})
	if got := fix.With[0]; got != `    "steps": &s` {
		t.Errorf("the moved line keeps its quotes and anchor: %q", got)
	}
	// A key renamed inside its quotes stays quoted; an edit across what
	// the view rewrote (the quotes and the colon) is the view's line.
	fix = l.rawFix(&Fix{Line: 2, N: 1, With: []string{strings.Replace(l.lines[1], "id:", "iid:", 1)}})
	if got := fix.With[0]; got != `  - "iid": a` {
		t.Errorf("a key renamed keeps its quotes: %q", got)
	}
	fix = l.rawFix(&Fix{Line: 2, N: 1, With: []string{strings.Replace(l.lines[1], "id:   a", "id: a", 1)}})
	if got := fix.With[0]; got != `  - id: a` {
		t.Errorf("an edit across the quotes is the view's line: %q", got)
	}
}
