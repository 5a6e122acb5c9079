package campaign

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// Where a file is broken is rarely where YAML notices: a key indented a
// space too far is read as part of the line above, and the parser
// complains a line or three later. The loader finds the line by trying
// the edits a slip undoes (the line moved to a column its neighbours
// use, a colon put back, a value with ": " made a block) on the lines
// around the one YAML names, nearest first; the first edit after which
// the whole file loads names the line and is the hint, with its Fix.

// nearby are the lines tried around line n, nearest first, above before
// below (YAML notices a slip after it, rarely before).
func nearby(n, below, count int) []int {
	var out []int
	for _, d := range []int{0, -1, -2, 1, -3, -4, 2, -5, -6, 3, -7, -8, 4, 5, 6, 7, 8} {
		if m := n + d; m >= 1 && m <= count && d <= below {
			out = append(out, m)
		}
	}
	return out
}

// maxTries bounds the edits tried for one file: each is a load of the
// whole file, and a file of many odd lines would otherwise take seconds.
const maxTries = 600

// maxTriedBytes bounds the same by the text loaded: a large file gets
// fewer tries.
const maxTriedBytes = 16 << 20

// size is the file's length in bytes, counted once.
func (l *loader) size() int {
	if l.bytes == 0 {
		for _, s := range l.lines {
			l.bytes += len(s) + 1
		}
	}
	return l.bytes
}

// candidate is one edit that may undo a slip.
type candidate struct {
	msg, hint string
	fix       *Fix
	col       int // 1-based column the message points at
}

// repairNear returns the error of the first line around n whose edit
// makes the file load; nil when no edit does.
func (l *loader) repairNear(n, below int) *FileError {
	if l.probe {
		return nil
	}
	// A line at a column no other line of the file starts at is the
	// likelier slip: where moving it or its neighbour both load (a key one
	// space too deep, or the list item above it one space too shallow),
	// it is the one out of line.
	cols := l.columns()
	near := nearby(n, below, len(l.lines))
	for _, lone := range []bool{true, false} {
		for _, m := range near {
			if (cols[indentOf(l.lines[m-1])] == 1) != lone {
				continue
			}
			if e := l.firstThatLoads(m, l.candidates(m)); e != nil {
				return e
			}
		}
	}
	return nil
}

// columns counts the lines that start at each column, a block's text
// left out.
func (l *loader) columns() map[int]int {
	if l.cols == nil {
		l.cols = map[int]int{}
		for j, s := range l.lines {
			if strings.TrimSpace(s) != "" && l.blockKeyColumn(j+1) < 0 {
				l.cols[indentOf(s)]++
			}
		}
	}
	return l.cols
}

// repairFar looks further up than repairNear, at the lines a slip leaves
// that YAML may read on for many lines before it fails: a key with no
// colon and nothing after it, and a key at a column no other line uses.
func (l *loader) repairFar(n int) *FileError {
	if l.probe {
		return nil
	}
	cols := map[int]int{}
	for _, s := range l.lines {
		if strings.TrimSpace(s) != "" {
			cols[indentOf(s)]++
		}
	}
	for m := min(n, len(l.lines)); m >= 1 && m > n-80; m-- {
		src := l.lines[m-1]
		var cs []candidate
		if km := keyNoColon.FindStringSubmatch(src); km != nil && strings.TrimSpace(km[3]) == "" {
			cs = l.candidates(m)
		} else if keyLine.MatchString(src) && cols[indentOf(src)] == 1 {
			cs = l.shifts(m)
		}
		if e := l.firstThatLoads(m, cs); e != nil {
			return e
		}
	}
	return nil
}

// firstThatLoads is the error at line m of the first candidate whose fix
// makes the file load.
func (l *loader) firstThatLoads(m int, cs []candidate) *FileError {
	for _, c := range cs {
		if l.tries >= maxTries || l.tries*l.size() > maxTriedBytes {
			return nil
		}
		l.tries++
		if l.loadsWith(c.fix) {
			e := l.mk(m, c.col, c.msg, c.hint)
			e.Fix = c.fix
			return e
		}
	}
	return nil
}

// opensBlock says whether a key line has no value on it (its value is the
// block under it).
func opensBlock(s string) bool {
	i := strings.Index(s, ":")
	rest := strings.TrimSpace(stripComment(s[i+1:]))
	return rest == ""
}

// stripComment cuts a value's trailing # comment (a # after a space,
// outside quotes).
func stripComment(v string) string {
	q := rune(0)
	for i, c := range v {
		switch {
		case q != 0 && c == q:
			q = 0
		case q == 0 && (c == '"' || c == '\''):
			q = c
		case q == 0 && c == '#' && (i == 0 || v[i-1] == ' '):
			return v[:i]
		}
	}
	return v
}

// loadsWith says whether the file, with fix made, is a campaign that loads.
func (l *loader) loadsWith(fix *Fix) bool {
	probe, ok := l.loadsFixed(fix)
	if !ok {
		return false
	}
	// A key of the campaign's moved into env: (or any mapping that takes
	// any key) loads, but is not what the person meant. A line left at
	// its column (a colon put back) moved nowhere: a sweep's axis may be
	// named dtype.
	m := keyLine.FindStringSubmatch(fix.With[0])
	moved := fix.Line > len(l.lines) || indentOf(fix.With[0]) != indentOf(l.lines[fix.Line-1])
	if m != nil && moved && isKeyword[m[3]] && !probe.fieldLines[fix.Line] {
		return false
	}
	return probe.keysKept()
}

// keysKept says whether every line of the file written as a key (not in
// a block's text) is a key to YAML: an edit after which a key line is
// read on as the text of a plain value above it (run: python3 x.py, and
// under it estimate: 10s, one more space in) loads, but is not the edit
// a person meant.
func (l *loader) keysKept() bool {
	if l.file == nil || len(l.file.Docs) == 0 || l.file.Docs[0].Body == nil {
		return true
	}
	v := &keyLines{at: map[int]bool{}}
	ast.Walk(v, l.file.Docs[0].Body)
	for j, src := range l.lines {
		if keyLine.MatchString(src) && !v.at[j+1] && l.blockKeyColumn(j+1) < 0 {
			return false
		}
	}
	return true
}

// keyLines gathers the lines YAML read a mapping key on.
type keyLines struct{ at map[int]bool }

func (v *keyLines) Visit(n ast.Node) ast.Visitor {
	if mv, ok := n.(*ast.MappingValueNode); ok && mv.Key != nil {
		if tk := mv.Key.GetToken(); tk != nil && tk.Position != nil {
			v.at[tk.Position.Line] = true
		}
	}
	return v
}

// loadsFixed loads the file with fix made, quietly: the probe, and
// whether it loaded.
func (l *loader) loadsFixed(fix *Fix) (*loader, bool) {
	text := []byte(strings.Join(l.rawFix(fix).Apply(l.raw), "\n"))
	probe := newLoader(l.name, l.path, text, true)
	_, err := probe.load(text)
	return probe, err == nil
}

// misplaced is the fix for a key of another level when moving its line
// to a column near it makes the file load; nil otherwise.
func (l *loader) misplaced(e *FileError) *FileError {
	if !strings.Contains(e.Hint, "move it there") {
		return nil
	}
	return l.repairNear(e.Line, 3)
}

// candidates are the edits tried on line n (1-based), most likely first.
func (l *loader) candidates(n int) []candidate {
	src := l.lines[n-1]
	t := strings.TrimSpace(src)
	if t == "" || strings.HasPrefix(t, "#") {
		return nil
	}
	var out []candidate
	if c := l.asBlock(n); c != nil {
		out = append(out, *c)
	}
	if m := keyNoColon.FindStringSubmatch(src); m != nil && !strings.Contains(m[3], ": ") {
		fixed := m[1] + m[2] + ":" + m[3] + m[4]
		out = append(out, candidate{
			msg:  fmt.Sprintf("%s has no colon after it, so YAML reads it as text, not a key", m[2]),
			hint: fmt.Sprintf("write %q", strings.TrimSpace(fixed)),
			fix:  &Fix{Line: n, N: 1, With: []string{fixed}},
			col:  len(m[1]) + len(m[2]) + 1,
		})
	}
	out = append(out, l.shifts(n)...)
	return out
}

// keyNoColon is a line that reads as a key whose colon went missing:
// indentation (and dash), a word, and either nothing or a space and text.
var keyNoColon = regexp.MustCompile(`^( *(?:- +)?)([A-Za-z_][A-Za-z0-9_]*)((?: +[^\s:#][^#]*?)?)(\s+#.*)?$`)

// asBlock is the edit for a plain value holding ": " (a shell command's
// curl -H "Content-Type: application/json"): the value as a block.
func (l *loader) asBlock(n int) *candidate {
	src := l.lines[n-1]
	m := plainWithColon.FindStringSubmatchIndex(src)
	if m == nil {
		return nil
	}
	indent, key, value := src[m[2]:m[3]], src[m[4]:m[5]], strings.TrimRight(src[m[6]:m[7]], " \t")
	pad := strings.Repeat(" ", len(indent))
	block := []string{indent + key + ": |", pad + "  " + value}
	quoted := fmt.Sprintf("%s%s: '%s'", indent, key, strings.ReplaceAll(value, "'", "''"))
	return &candidate{
		msg: fmt.Sprintf("the value of %s holds \": \", which YAML reads as the start of another key", key),
		hint: "write it as a block, the command on the next, more-indented line:\n      " + strings.Join(block, "\n      ") +
			"\n    or quote it in single quotes (doubling any ' inside):\n      " + quoted,
		fix: &Fix{Line: n, N: 1, With: block},
		col: len([]rune(src[:m[6]+strings.Index(value, ": ")])) + 1,
	}
}

// shifts are line n moved to each column a line near it starts a key or a
// list item at: alone, then with the lines under it.
func (l *loader) shifts(n int) []candidate {
	src := l.lines[n-1]
	cur := indentOf(src)
	word := strings.TrimLeft(strings.TrimLeft(src, " "), "- ")
	if m := keyLine.FindStringSubmatch(src); m != nil {
		word = m[3] + ":"
	} else if i := strings.IndexAny(word, " "); i > 0 {
		word = word[:i]
	}
	// A line of a block's text moved out of it (to the key's column or
	// shallower) is never the edit: the text goes with its key.
	floor := l.blockKeyColumn(n)
	var out []candidate
	for _, c := range l.columnsNear(n) {
		if c.col == cur || c.col <= floor || floor >= 0 && l.swallows(n, c.col) {
			continue
		}
		under := l.under(n)
		alone := &Fix{Line: n, N: 1, With: []string{shift(src, c.col-cur)}}
		withUnder := &Fix{Line: n, N: 1 + len(under), With: []string{shift(src, c.col-cur)}}
		for _, u := range under {
			withUnder.With = append(withUnder.With, shift(u, c.col-cur))
		}
		say := fmt.Sprintf("indent it %d spaces, in line with %s on line %d", c.col, c.what, c.line)
		if c.col == 0 {
			say = fmt.Sprintf("indent it 0 spaces (at the start of the line), in line with %s on line %d", c.what, c.line)
		}
		msg := fmt.Sprintf("%s is indented %d spaces; the file loads with it at %d", word, cur, c.col)
		out = append(out, candidate{msg: msg, hint: say, fix: alone, col: cur + 1})
		if len(under) > 0 {
			out = append(out, candidate{msg: msg, hint: fmt.Sprintf("%s (and the %d lines under it %+d each)", say, len(under), c.col-cur), fix: withUnder, col: cur + 1})
		}
	}
	return out
}

// swallows says whether a block's text line n, moved to column col, would
// take the key lines after it into the block's text (the text's depth is
// its first line's: what follows at col or deeper is text).
func (l *loader) swallows(n, col int) bool {
	for k := n + 1; k <= len(l.lines); k++ {
		src := l.lines[k-1]
		if strings.TrimSpace(src) == "" {
			continue
		}
		if indentOf(src) < col {
			return false
		}
		if structural(src) && l.blockKeyColumn(k) < 0 {
			return true
		}
	}
	return false
}

// shift moves a line right by (left when by < 0, as far as its spaces go).
func shift(s string, by int) string {
	if by >= 0 {
		return strings.Repeat(" ", by) + s
	}
	return s[min(-by, indentOf(s)):]
}

// under are the lines after n indented deeper than it (blank ones kept),
// the block a moved key takes with it.
func (l *loader) under(n int) []string {
	ind := indentOf(l.lines[n-1])
	var out []string
	for _, s := range l.lines[n:] {
		if strings.TrimSpace(s) != "" && indentOf(s) <= ind {
			break
		}
		out = append(out, s)
	}
	for len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "" {
		out = out[:len(out)-1]
	}
	return out
}

// column is a column (0-based) that line starts something at.
type column struct {
	col  int
	what string // "id:" or "the list item"
	line int
}

// columnsNear are the columns the lines above n (and a few below) start
// their keys and list items at, nearest first, each once.
func (l *loader) columnsNear(n int) []column {
	seen := map[int]bool{}
	var out []column
	add := func(i int) {
		m := keyLine.FindStringSubmatch(l.lines[i-1])
		if m == nil {
			if t := strings.TrimLeft(l.lines[i-1], " "); strings.HasPrefix(t, "- ") && !seen[indentOf(l.lines[i-1])] {
				seen[indentOf(l.lines[i-1])] = true
				out = append(out, column{indentOf(l.lines[i-1]), "the list item", i})
			}
			return
		}
		if m[2] != "" && !seen[len(m[1])] {
			seen[len(m[1])] = true
			out = append(out, column{len(m[1]), "the list item", i})
		}
		if c := len(m[1]) + len(m[2]); !seen[c] {
			seen[c] = true
			out = append(out, column{c, m[3] + ":", i})
		}
	}
	for i := n - 1; i >= 1 && i >= n-60; i-- {
		add(i)
	}
	for i := n + 1; i <= len(l.lines) && i <= n+8; i++ {
		add(i)
	}
	// A key that opens a block (steps:) takes its first child two
	// columns in, where nothing else may stand yet.
	for i := n - 1; i >= 1 && i >= n-8; i-- {
		if m := keyLine.FindStringSubmatch(l.lines[i-1]); m != nil && opensBlock(l.lines[i-1]) {
			if c := len(m[1]) + len(m[2]) + 2; !seen[c] {
				seen[c] = true
				out = append(out, column{c, "the first line under " + m[3] + ":", i})
			}
		}
	}
	if !seen[0] {
		out = append(out, column{0, "the top-level keys", 1})
	}
	return out
}

// indentOf counts a line's leading spaces.
func indentOf(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }
