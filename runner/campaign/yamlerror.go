package campaign

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
)

// go-yaml's errors turned into FileErrors a person can act on.

var quoted = regexp.MustCompile(`"([^"]+)"`)

// fromYAML turns a go-yaml error into a FileError with a hint.
func (l *loader) fromYAML(err error) error {
	var ye yaml.Error
	if !errors.As(err, &ye) || ye.GetToken() == nil || ye.GetToken().Position == nil {
		return &FileError{File: l.name, Msg: err.Error()}
	}
	pos := ye.GetToken().Position
	msg := ye.GetMessage()
	hint := ""
	var unknown *yaml.UnknownFieldError
	var dup *yaml.DuplicateKeyError
	if got, want, ok := typeMismatch(err); ok {
		if e := l.repairNear(pos.Line, 2); e != nil {
			return e // text where a mapping goes, made by a lost colon or a slipped line
		}
		// A key or a list item indented under a key whose value is on its
		// line (gpus: 1) is read on as that value's text, and the type is
		// wrong lines later: a key line above it (phases:, steps:) is lost.
		if e := l.orphanBlock(pos.Line); e != nil && structural(l.lines[e.Line-1]) {
			return e
		}
		if e := l.strandedItems(pos.Line); e != nil {
			return e
		}
		return l.mismatch(pos.Line, pos.Column, got, want)
	}
	switch {
	case errors.As(err, &unknown):
		if m := quoted.FindStringSubmatch(msg); m != nil {
			msg = fmt.Sprintf("unknown key %q", m[1])
			if near := closestKey(m[1]); near != "" {
				hint = fmt.Sprintf("did you mean %q?", near)
			} else {
				hint = "remove it, or check the keys in the README's campaign file reference"
			}
		}
	case errors.As(err, &dup) || strings.Contains(msg, "already defined"):
		if m := quoted.FindStringSubmatch(msg); m != nil {
			msg = fmt.Sprintf("duplicate key %q", m[1])
			if i := strings.Index(ye.GetMessage(), "defined at ["); i >= 0 {
				msg += " (first at " + strings.TrimSuffix(strings.TrimPrefix(ye.GetMessage()[i:], "defined at ["), "]") + ")"
			}
		}
		if e := l.repairNear(pos.Line, 3); e != nil {
			return e // a line slipped into the mapping above
		}
		hint = "each key may appear once in a mapping; remove one of them"
		if at := l.runTogether(pos.Line, pos.Column); at > 0 {
			hint = fmt.Sprintf("if this list item is two run together (the `- ` line of the second lost), the second begins at line %d: put its `- ` line back above it; else remove one of the two", at)
		}
	default:
		if e := l.repairNear(pos.Line, 3); e != nil {
			return e
		}
		if e := l.repairFar(pos.Line); e != nil {
			return e
		}
		if e := l.orphanBlock(pos.Line); e != nil {
			return e
		}
		if e := l.dedentMismatch(pos.Line); e != nil {
			return e
		}
		if e := l.lostBlockKey(pos.Line); e != nil {
			return e
		}
		if e := l.underEmptyKey(pos.Line); e != nil {
			return e
		}
		if e := l.emptyBlock(pos.Line); e != nil {
			return e
		}
		hint = "this is not valid YAML here; check indentation and quoting"
	}
	return l.mk(pos.Line, pos.Column, msg, hint)
}

// plainWithColon is `key: value` where the unquoted value holds ": ", as a
// shell command easily does (curl -H "Content-Type: application/json"). A
// flow mapping or list ({x: a}, [a: b]) holds ": " by right: not this.
var plainWithColon = regexp.MustCompile(`^(\s*(?:-\s+)?)([A-Za-z_][A-Za-z0-9_]*):[ 	]+([^'"|>\s#{\[][^#]*?: .*)$`)

// keyLine is a line that starts a mapping key, after any list dash:
// its indentation, the dash, the key.
var keyLine = regexp.MustCompile(`^( *)(- +)?([A-Za-z_][A-Za-z0-9_]*):(?:\s|$)`)

// runTogether is, for a key written twice in one list item, the line
// where a second item would begin if a `- ` line was lost: the first key
// after which no key repeats. 0 when the mapping is no list item.
func (l *loader) runTogether(line, col int) int {
	type key struct {
		name string
		line int
	}
	if l.probe || line < 1 || line > len(l.lines) {
		return 0
	}
	var keys []key
	item := false
	for j := line - 1; j >= 1; j-- {
		src := l.lines[j-1]
		if t := strings.TrimSpace(src); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		m := keyLine.FindStringSubmatch(src)
		if m != nil && len(m[1])+len(m[2]) == col-1 {
			keys = append([]key{{m[3], j}}, keys...)
			if m[2] != "" {
				item = true
				break
			}
			continue
		}
		if indentOf(src) < col-1 {
			break
		}
	}
	if !item {
		return 0
	}
	for j := line; j <= len(l.lines); j++ {
		src := l.lines[j-1]
		if t := strings.TrimSpace(src); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if indentOf(src) < col-1 {
			break
		}
		if m := keyLine.FindStringSubmatch(src); m != nil && m[2] == "" && len(m[1]) == col-1 {
			keys = append(keys, key{m[3], j})
		}
	}
	// The second item begins after the last first-occurrence of a key
	// that repeats: each item has each key once.
	after := -1
	first := map[string]int{}
	for i, k := range keys {
		if f, ok := first[k.name]; ok {
			after = max(after, f)
		} else {
			first[k.name] = i
		}
	}
	if after < 0 || after+1 >= len(keys) {
		return 0
	}
	return keys[after+1].line
}

// orphanBlock finds, above line n, a line indented under a key that has
// its value on its own line: what a lost key line (steps:, service:)
// leaves. No edit can be proposed: the lost key is not known.
func (l *loader) orphanBlock(n int) *FileError {
	prev := 0
	for j := 1; j <= min(n, len(l.lines)); j++ {
		src := l.lines[j-1]
		if t := strings.TrimSpace(src); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if m := keyLine.FindStringSubmatch(l.lines[max(prev, 1)-1]); prev > 0 && m != nil && indentOf(src) > len(m[1])+len(m[2]) && !l.inBlock(prev) {
			if v := strings.TrimSpace(stripComment(l.lines[prev-1])); !opensBlock(l.lines[prev-1]) && !strings.HasSuffix(v, "|") && !strings.HasSuffix(v, ">") && !strings.HasSuffix(v, "-") && !continues(l.lines[prev-1]) {
				found := l.mk(j, indentOf(src)+1, fmt.Sprintf("this line is indented under %s: (line %d), which has its value on its own line", m[3], prev),
					"a key line (steps:, service:, ...) may be missing above it, the lines under it being its value")
				return found
			}
		}
		if !l.inBlock(j) {
			prev = j
		}
	}
	return nil
}

// continues says whether a key line's value goes on to the lines under it
// by right: a flow mapping or list, or a quoted text, opened and not
// closed on the line.
func continues(s string) bool {
	i := strings.Index(s, ":")
	v := strings.TrimSpace(stripComment(s[i+1:]))
	if v == "" {
		return false
	}
	switch v[0] {
	case '{', '[':
		return strings.Count(v, string(v[0])) > strings.Count(v, map[byte]string{'{': "}", '[': "]"}[v[0]])
	case '"', '\'':
		return len(v) == 1 || v[len(v)-1] != v[0]
	}
	return false
}

// structural says whether a line is YAML's structure (a key, a list
// item), not text.
func structural(s string) bool {
	return keyLine.MatchString(s) || strings.HasPrefix(strings.TrimLeft(s, " "), "- ")
}

// inBlock says whether line j is text of a | or > block above it.
func (l *loader) inBlock(j int) bool {
	ind := indentOf(l.lines[j-1])
	for k := j - 1; k >= 1; k-- {
		src := l.lines[k-1]
		if strings.TrimSpace(src) == "" || indentOf(src) >= ind {
			continue
		}
		v := strings.TrimSpace(stripComment(src))
		if strings.HasSuffix(v, "|") || strings.HasSuffix(v, ">") || strings.HasSuffix(v, "|-") || strings.HasSuffix(v, ">-") {
			return true
		}
		ind = indentOf(src)
		if ind == 0 {
			return false
		}
	}
	return false
}

// blockKeyColumn is, for a line of a block's text, the column of the key
// that opens the block; -1 when the line is no block's text. The text's
// indentation is its first line's: a line less indented ends the block.
func (l *loader) blockKeyColumn(j int) int {
	if strings.TrimSpace(l.lines[j-1]) == "" {
		return -1
	}
	ind := indentOf(l.lines[j-1])
	for k := j - 1; k >= 1; k-- {
		src := l.lines[k-1]
		if strings.TrimSpace(src) == "" || indentOf(src) >= ind {
			continue
		}
		m := blockOpener.FindStringSubmatch(src)
		if m == nil {
			return -1
		}
		// The text's indentation: its first line's.
		for t := k + 1; t < j; t++ {
			if s := l.lines[t-1]; strings.TrimSpace(s) != "" {
				if indentOf(s) > ind {
					return -1 // the line is shallower than the text above it: the block ended
				}
				break
			}
		}
		return len(m[1]) + len(m[2])
	}
	return -1
}

// dedentMismatch is, for a line the parser could not place, the block
// above it that made it so: the line goes back to an indentation no
// block above it has (deeper than the line that holds them, shallower
// than the block under that line), which is what a lost line leaves (a
// `- id:` or `- name:` line deleted, its keys left indented under the
// key above). The error is said at the block's first line, where the
// lost line was.
func (l *loader) dedentMismatch(n int) *FileError {
	if l.probe || n < 2 || n > len(l.lines) {
		return nil
	}
	line := l.lines[n-1]
	if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") || l.inBlock(n) {
		return nil
	}
	c := indentOf(line)
	first := 0 // the first line of the block above, at the deepest level
	for j := n - 1; j >= 1; j-- {
		src := l.lines[j-1]
		if t := strings.TrimSpace(src); t == "" || strings.HasPrefix(t, "#") || l.inBlock(j) {
			continue
		}
		ind := indentOf(src)
		if ind > c {
			first = j
			continue
		}
		m := keyLine.FindStringSubmatch(src)
		// A list item at its key's own column is the key's (phases:
		// with its items not indented under it): the block above it,
		// deeper, is an item that lost its `- ` line.
		indentless := ind == c && first != 0 && m != nil && m[2] == "" && opensBlock(src) && strings.HasPrefix(strings.TrimSpace(line), "- ")
		if (ind == c || first == 0) && !indentless {
			return nil // a sibling: the slip is not one of indentation
		}
		if m == nil {
			return nil
		}
		said := fmt.Sprintf("the lines from here to line %d are indented %d under %s: (line %d), and line %d goes back to %d, a level no line above it has",
			n-1, indentOf(l.lines[first-1]), m[3], j, n, c)
		if indentless {
			said = fmt.Sprintf("the lines from here to line %d are indented %d under %s: (line %d), whose list items begin at its own column, %d (line %d): they are no item's",
				n-1, indentOf(l.lines[first-1]), m[3], j, c, n)
		}
		return l.mk(first, indentOf(l.lines[first-1])+1, said,
			fmt.Sprintf("a line may be missing above this one (a `- id:` or `- name:` that began an item at indentation %d); put it back, or indent these lines as their neighbours", c))
	}
	return nil
}

// lostBlockKey is, for a line the parser could not place, the run of
// text lines it ends (no key, no list item: a shell command's lines)
// right under a key whose value is a mapping: what a `run: |` line
// deleted leaves, its command read as YAML. The error is said at the
// run's first line, where the `key: |` line was.
func (l *loader) lostBlockKey(n int) *FileError {
	if l.probe || n < 2 || n > len(l.lines) {
		return nil
	}
	first, count := 0, 0
	for j := n; j >= 1; j-- {
		src := l.lines[j-1]
		t := strings.TrimSpace(src)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		m := keyLine.FindStringSubmatch(src)
		if m == nil && !strings.HasPrefix(t, "- ") && !l.inBlock(j) {
			first, count = j, count+1
			continue
		}
		last := n
		for k := n + 1; k <= len(l.lines); k++ { // the run goes on below the line the parser stopped at
			b := l.lines[k-1]
			if tb := strings.TrimSpace(b); tb == "" || strings.HasPrefix(tb, "#") || keyLine.MatchString(b) || strings.HasPrefix(tb, "- ") {
				break
			}
			last, count = k, count+1
		}
		if m == nil || first == 0 || count < 2 || indentOf(l.lines[first-1]) <= indentOf(src) || strings.TrimSpace(stripComment(src[len(m[0]):])) != "" {
			return nil
		}
		return l.mk(first, indentOf(l.lines[first-1])+1,
			fmt.Sprintf("the lines from here to line %d are no keys of %s: (line %d): they read as a command's text", last, m[3], j),
			"a `run: |` line (or another `key: |`) may be missing above this one: put it back, the lines under it indented")
	}
	return nil
}

// underEmptyKey is, for a line the parser could not place, a key line
// above it that slipped out from under an empty key: `service:` with
// nothing under it (comments at most), then `run: |` level with it (or a
// step's `- name:` shallower than `steps:`), then the line, deeper, that
// reads as the slipped line's sibling. That is what dedenting the first
// line of a mapping or list leaves. The error is said at the slipped
// line, and the edit indents it back, level with the line it lost.
func (l *loader) underEmptyKey(n int) *FileError {
	if l.probe || n < 3 || n > len(l.lines) {
		return nil
	}
	// (Line n may read as a block's text to inBlock, which goes by the
	// key's indentation, not the text's: the parser says it is not.)
	c := indentOf(l.lines[n-1])
	if !keyLine.MatchString(l.lines[n-1]) {
		return nil
	}
	// The slipped line: the first above, past its siblings and their
	// values, that is shallower than c.
	slipped := 0
	for j := n - 1; j >= 1; j-- {
		src := l.lines[j-1]
		if t := strings.TrimSpace(src); t == "" || strings.HasPrefix(t, "#") || l.inBlock(j) || indentOf(src) >= c {
			continue
		}
		slipped = j
		break
	}
	if slipped < 2 {
		return nil
	}
	m2 := keyLine.FindStringSubmatch(l.lines[slipped-1])
	if m2 == nil || len(m2[1])+len(m2[2]) >= c {
		return nil
	}
	empty := 0 // the key it slipped from under: right above it, its value empty
	for j := slipped - 1; j >= 1; j-- {
		if t := strings.TrimSpace(l.lines[j-1]); t != "" && !strings.HasPrefix(t, "#") {
			empty = j
			break
		}
	}
	m1 := keyLine.FindStringSubmatch(l.lines[max(empty, 1)-1])
	if empty == 0 || m1 == nil {
		return nil
	}
	src := l.lines[slipped-1]
	to := c - len(m2[2]) // its text at c, as its siblings below
	var e *FileError
	switch at := len(m1[1]) + len(m1[2]); {
	case at >= len(m2[1]) && opensBlock(l.lines[empty-1]):
		e = l.mk(slipped, len(m2[1])+1,
			fmt.Sprintf("this line is no deeper than %s: (line %d), which has nothing under it, and line %d goes on at indentation %d, as if under %s:", m1[3], empty, n, c, m1[3]),
			fmt.Sprintf("this line likely belongs under %s: (line %d): indent it to %d", m1[3], empty, to))
	case at == c && !opensBlock(l.lines[empty-1]):
		// Between two keys of one mapping (line empty's and line n's),
		// shallower than both: it slipped out of it.
		e = l.mk(slipped, len(m2[1])+1,
			fmt.Sprintf("this line is shallower than the keys around it (%s: on line %d and line %d are at indentation %d)", m1[3], empty, n, c),
			fmt.Sprintf("indent it to %d, level with them", to))
	default:
		return nil
	}
	fix := &Fix{Line: slipped, N: 1, With: []string{strings.Repeat(" ", to) + strings.TrimLeft(src, " ")}}
	if !l.loadsWith(fix) {
		if !opensBlock(l.lines[empty-1]) {
			return nil // a shallower line between two keys, and indenting it does not mend the file: not this slip
		}
		return e
	}
	e.Fix = fix
	return e
}

// blockOpener is a key whose value is a | or > block: `run: |`, `run: >-`.
var blockOpener = regexp.MustCompile(`^( *)(- +)?([A-Za-z_][A-Za-z0-9_]*):\s*[|>][-+0-9]*\s*(#.*)?$`)

// emptyBlock is, for a line the parser could not place, the `key: |` line
// above it whose text is no deeper than the key: the block is empty, and
// its text (a shell script) is read as YAML until a line of it cannot be.
// That is what indenting the key line too far leaves. Said at the key,
// with the edit that brings it back level with its siblings.
func (l *loader) emptyBlock(n int) *FileError {
	if l.probe || n < 2 || n > len(l.lines) {
		return nil
	}
	for j := n - 1; j >= 1 && j > n-200; j-- {
		m := blockOpener.FindStringSubmatch(l.lines[j-1])
		if m == nil {
			continue
		}
		k := len(m[1]) + len(m[2])
		next := 0
		for i := j + 1; i <= n; i++ {
			if t := strings.TrimSpace(l.lines[i-1]); t != "" {
				next = i
				break
			}
		}
		if next == 0 || indentOf(l.lines[next-1]) > k {
			return nil // the nearest block above has its text: not this slip
		}
		e := l.mk(j, k+1, fmt.Sprintf("%s: opens a block at indentation %d, and the lines under it (from line %d) are no deeper: its text is read as YAML, up to line %d", m[3], k, next, n),
			fmt.Sprintf("indent %s: less than its text (level with the keys beside it), or its text deeper", m[3]))
		for _, d := range []int{2, 4} {
			if len(m[1]) < d {
				break
			}
			fix := &Fix{Line: j, N: 1, With: []string{l.lines[j-1][d:]}}
			if l.loadsWith(fix) {
				e.Fix, e.Hint = fix, fmt.Sprintf("indent %s: to %d, level with the keys beside it", m[3], k-d)
				break
			}
		}
		return e
	}
	return nil
}
