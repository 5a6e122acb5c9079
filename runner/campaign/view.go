package campaign

import (
	"regexp"
	"strings"
)

// The locators (yamlerror.go, typeerror.go, repair.go) read a file's
// lines by their shape: a key and its colon, a value on the line or the
// block under it, a comment. YAML writes the same shapes in more ways
// than those patterns spell: a key in quotes ("id": x), an anchor or a
// tag before a value (env: &common, which has its value below it), a
// document's --- and ... markers, a merge key (<<). The loader reads the file through a
// view in which each of these is written the one plain way, column for
// column: every line keeps its length and every other character its
// place, so a line, a column or an indentation said in the view is the
// file's, and an edit found in the view is made on the file's own text
// (rawFix) wherever it does not touch what the view rewrote.

// quotedKey is a key in quotes at a line's start, after any list dashes:
// its lead and the key.
var quotedKey = regexp.MustCompile(`^( *(?:- +)*)(?:"([A-Za-z_][A-Za-z0-9_]*)"|'([A-Za-z_][A-Za-z0-9_]*)') *:(?:\s|$)`)

// keyThenProp is a key line whose value begins with an anchor or a tag:
// the text up to it and the property with the spaces after it.
var keyThenProp = regexp.MustCompile(`^( *(?:- +)*[A-Za-z_][A-Za-z0-9_]*: +)((?:[&!][^\s,{}\[\]]*)(?: +|$))`)

// mergeKey is a merge key at a line's start.
var mergeKey = regexp.MustCompile(`^ *(?:- +)*(<<) *:(?:\s|$)`)

// viewOf is the view of a file's lines.
func viewOf(raw []string) []string {
	out := make([]string, len(raw))
	for i, s := range raw {
		out[i] = viewLine(s)
	}
	return out
}

// viewLine is one line written the plain way, at its own length.
func viewLine(s string) string {
	if t := strings.TrimSpace(stripComment(s)); (t == "---" || t == "...") && strings.HasPrefix(s, t) {
		return strings.Repeat(" ", len(s))
	}
	if m := quotedKey.FindStringSubmatchIndex(s); m != nil {
		from, to := m[4], m[5]
		if from < 0 {
			from, to = m[6], m[7]
		}
		key := s[from:to]
		end := strings.IndexByte(s[m[3]:], ':') + m[3] + 1 // past the colon
		s = s[:m[3]] + key + ":" + strings.Repeat(" ", end-m[3]-len(key)-1) + s[end:]
	}
	// A merge key (<<: *common) reads as a key to the locators.
	if m := mergeKey.FindStringSubmatchIndex(s); m != nil {
		s = s[:m[2]] + "__" + s[m[3]:]
	}
	for {
		m := keyThenProp.FindStringSubmatchIndex(s)
		if m == nil {
			return s
		}
		s = s[:m[4]] + strings.Repeat(" ", m[5]-m[4]) + s[m[5]:]
	}
}

// rawFix is fix, found in the view, made on the file's own lines: each
// line it replaces gets the same change at the same columns where that
// change leaves alone what the view rewrote (a line moved keeps its
// quotes and its anchor); else the view's line is the edit.
func (l *loader) rawFix(fix *Fix) *Fix {
	if fix == nil || l.raw == nil {
		return fix
	}
	out := &Fix{Line: fix.Line, N: fix.N, With: append([]string{}, fix.With...)}
	for i, w := range out.With {
		k := fix.Line - 1 + i
		if i >= fix.N || k < 0 || k >= len(l.raw) || l.raw[k] == l.lines[k] {
			continue
		}
		view, raw := l.lines[k], l.raw[k]
		p := 0
		for p < len(view) && p < len(w) && view[p] == w[p] {
			p++
		}
		s := 0
		for s < len(view)-p && s < len(w)-p && view[len(view)-1-s] == w[len(w)-1-s] {
			s++
		}
		touches := false
		for d := p; d < len(view)-s; d++ {
			touches = touches || raw[d] != view[d]
		}
		if !touches {
			out.With[i] = raw[:p] + w[p:len(w)-s] + raw[len(view)-s:]
		}
	}
	return out
}
