package campaign

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
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
	var typ *yaml.TypeError
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
		hint = "each key may appear once in a mapping; remove one of them"
	case errors.As(err, &typ):
		msg = fmt.Sprintf("wrong type: %s", friendlyType(msg))
		hint = "check the value's type: numbers unquoted, lists in [ ] or with - items, text quoted if it has a colon"
	default:
		if e := l.colonInValue(pos.Line); e != nil {
			return e
		}
		if e := l.misindented(pos.Line); e != nil {
			return e
		}
		hint = "this is not valid YAML here; check indentation and quoting"
	}
	return l.mk(pos.Line, pos.Column, msg, hint)
}

// plainWithColon is `key: value` where the unquoted value holds ": ", as a
// shell command easily does (curl -H "Content-Type: application/json").
var plainWithColon = regexp.MustCompile(`^(\s*(?:-\s+)?)([A-Za-z_][A-Za-z0-9_]*):[ 	]+([^'"|>\s#][^#]*?: .*)$`)

// colonInValue explains YAML's "mapping value is not allowed here" when a
// plain value near line holds ": ": where the colon is, and the line
// rewritten as a block.
func (l *loader) colonInValue(line int) *FileError {
	for _, n := range []int{line, line - 1} {
		if n < 1 || n > len(l.lines) {
			continue
		}
		m := plainWithColon.FindStringSubmatchIndex(l.lines[n-1])
		if m == nil {
			continue
		}
		src := l.lines[n-1]
		indent, key, value := src[m[2]:m[3]], src[m[4]:m[5]], strings.TrimRight(src[m[6]:m[7]], " \t")
		col := len([]rune(src[:m[6]+strings.Index(value, ": ")])) + 1
		// The block's text goes two columns right of the key, wherever a
		// list dash puts the key.
		block := fmt.Sprintf("%s%s: |\n%s  %s", indent, key, strings.Repeat(" ", len([]rune(indent))), value)
		quoted := fmt.Sprintf("%s%s: '%s'", indent, key, strings.ReplaceAll(value, "'", "''"))
		return l.mk(n, col, fmt.Sprintf("the value of %s holds \": \", which YAML reads as the start of another key", key),
			"write it as a block, the command on the next, more-indented line:\n      "+strings.ReplaceAll(block, "\n", "\n      ")+
				"\n    or quote it in single quotes (doubling any ' inside):\n      "+quoted)
	}
	return nil
}

// keyLine is a line that starts a mapping key, after any list dash:
// its indentation, the key's column (0-based), the key.
var keyLine = regexp.MustCompile(`^( *)(- +)?([A-Za-z_][A-Za-z0-9_]*):(?:\s|$)`)

// misindented explains YAML's "not allowed in this context" for a key line
// indented where no mapping is (most often one dedented by a slip, to the
// column of the list dashes above). The columns of the keys above it,
// nearest first, are tried: the first one at which the file parses and
// the key is one its mapping has is the hint, in spaces; the lines under
// the key move with it.
func (l *loader) misindented(line int) *FileError {
	if line < 2 || line > len(l.lines) {
		return nil
	}
	m := keyLine.FindStringSubmatch(l.lines[line-1])
	if m == nil || m[2] != "" {
		return nil
	}
	indent, key := len(m[1]), m[3]
	tried := map[int]bool{}
	for n := line - 1; n >= 1; n-- {
		above := keyLine.FindStringSubmatch(l.lines[n-1])
		if above == nil {
			continue
		}
		col := len(above[1]) + len(above[2])
		if col <= indent || tried[col] {
			continue
		}
		tried[col] = true
		if !l.loadsIndented(line, col-indent) {
			continue
		}
		return l.mk(line, indent+1, fmt.Sprintf("%s: is indented %d spaces, where no mapping takes a key", key, indent),
			fmt.Sprintf("indent it %d spaces, in line with %s: on line %d (and the lines under it %d more each)", col, above[3], n, col-indent))
	}
	return nil
}

// Reindent moves line (1-based) and the lines under it (indented deeper,
// or blank) right by by spaces: the fix misindented's hint describes.
func Reindent(lines []string, line, by int) []string {
	out := slices.Clone(lines)
	indent := len(out[line-1]) - len(strings.TrimLeft(out[line-1], " "))
	pad := strings.Repeat(" ", by)
	out[line-1] = pad + out[line-1]
	for i := line; i < len(out); i++ {
		t := strings.TrimLeft(out[i], " ")
		if t != "" && len(out[i])-len(t) <= indent {
			break
		}
		if t != "" {
			out[i] = pad + out[i]
		}
	}
	return out
}

// loadsIndented says whether the file, with line moved right by by
// spaces, parses as YAML with no key out of its place at that line.
func (l *loader) loadsIndented(line, by int) bool {
	text := strings.Join(Reindent(l.lines, line, by), "\n")
	file, err := parser.ParseBytes([]byte(text), 0)
	if err != nil || len(file.Docs) == 0 || file.Docs[0].Body == nil {
		return false
	}
	probe := &loader{name: l.name, lines: strings.Split(text, "\n")}
	for _, e := range probe.unknownKeys(file.Docs[0].Body) {
		if e.Line == line {
			return false
		}
	}
	return true
}

func friendlyType(msg string) string {
	r := strings.NewReplacer("Go struct field ", "", "Go value of type ", "", "runner.", "", "map[string]interface {}", "mapping",
		"map[string]string", "mapping of text", "[]string", "list of text", "[]int", "list of numbers", "[]", "list of ")
	return r.Replace(msg)
}
