package campaign

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// A value of the wrong kind (text where a list goes, a list where a number
// goes) is said at the key whose value it is, in a person's words, never
// at a neighbour and never in Go's type names.

// mismatch is the FileError for a value of the wrong kind at line, col.
func (l *loader) mismatch(line, col int, got, want string) *FileError {
	key, kl, kc := l.keyOf(line, col)
	if key == "" {
		return l.mk(line, col, fmt.Sprintf("%s is written here, where %s goes", got, want), kindHint(want))
	}
	if key == "gpus" && strings.HasPrefix(want, "a list") {
		want = "a list of GPU indices, or none" // a phase's gpus:
	}
	return l.mk(kl, kc, fmt.Sprintf("%s takes %s; it has %s", key+":", want, got), kindHint(want))
}

// typeMismatch reads go-yaml's two type errors: got and want in words.
func typeMismatch(err error) (got, want string, ok bool) {
	var node *yaml.UnexpectedNodeTypeError
	var typ *yaml.TypeError
	switch {
	case errors.As(err, &node):
		return nodeWords(node.Actual), nodeWords(node.Expected), true
	case errors.As(err, &typ):
		got := "text"
		if typ.SrcType != nil {
			got = typeWords(typ.SrcType)
		}
		return got, typeWords(typ.DstType), true
	}
	return "", "", false
}

func nodeWords(t ast.NodeType) string {
	switch t {
	case ast.MappingType, ast.MappingValueType:
		return "a mapping (keys with values)"
	case ast.SequenceType:
		return "a list"
	case ast.IntegerType, ast.FloatType, ast.InfinityType:
		return "a number"
	case ast.BoolType:
		return "true or false"
	case ast.NullType:
		return "nothing"
	}
	return "text"
}

// typeWords says a Go type as a campaign file's reader knows it.
func typeWords(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping (keys with values)"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "text"
	}
	return "a value"
}

func kindHint(want string) string {
	switch {
	case strings.HasPrefix(want, "a list"):
		return "write a list: `[a, b]` on the line, or `- a` items on the lines below, indented"
	case strings.HasPrefix(want, "a mapping"):
		return "write keys with values: `{key: value}` on the line, or `key: value` lines below, indented"
	case strings.Contains(want, "number"):
		return "write a number, unquoted"
	case want == "text":
		return "write text; quote it ('...') if it starts with { or [ or holds \": \""
	}
	return "check the value against the README's campaign file reference"
}

// keyBefore is the key right before a value on its line, in a block
// mapping or a flow one ({nodes: two}).
var keyBefore = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*):\s*$`)

// keyOf is the key whose value starts at line, col: on that line before
// col, else the nearest line above indented less than col.
func (l *loader) keyOf(line, col int) (string, int, int) {
	if line >= 1 && line <= len(l.lines) && col >= 1 && col-1 <= len(l.lines[line-1]) {
		if m := keyBefore.FindStringSubmatchIndex(l.lines[line-1][:col-1]); m != nil {
			return l.lines[line-1][m[2]:m[3]], line, m[2] + 1
		}
	}
	for n := min(line, len(l.lines)); n >= 1 && n > line-200; n-- {
		src := l.lines[n-1]
		m := keyLine.FindStringSubmatch(src)
		if m == nil {
			continue
		}
		kc := len(m[1]) + len(m[2]) + 1
		if n == line && kc < col || n < line && kc < col {
			return m[3], n, kc
		}
	}
	return "", 0, 0
}
