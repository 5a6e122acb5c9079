package campaign

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
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
	if e := l.strandedKeys(kl); e != nil {
		return e
	}
	if key == "gpus" && strings.HasPrefix(want, "a list") {
		want = "a list of GPU indices, or none" // a phase's gpus:
	}
	return l.mk(kl, kc, fmt.Sprintf("%s takes %s; it has %s", key+":", want, got), kindHint(want))
}

// strandedKeys is, for a key of the wrong kind at line kl, the run of
// keys it ends that are all keys of another block (count: and sources:,
// gpus:'s) at the end of the mapping above them (env:): what deleting
// that block's own line (gpus:) leaves. Said at the run's first line, with
// the edit that puts the line back; nil unless that edit loads.
func (l *loader) strandedKeys(kl int) *FileError {
	if l.probe || kl < 2 || kl > len(l.lines) {
		return nil
	}
	ind := indentOf(l.lines[kl-1])
	parent, end := 0, 0
	var sibs []int // the mapping's key lines, at ind
	for j := kl; j >= 1 && parent == 0; j-- {
		src := l.lines[j-1]
		if t := strings.TrimSpace(src); t == "" || strings.HasPrefix(t, "#") || l.inBlock(j) {
			continue
		}
		switch {
		case indentOf(src) < ind:
			parent = j
		case indentOf(src) == ind && keyLine.MatchString(src):
			sibs = append([]int{j}, sibs...)
		}
	}
	for j := kl + 1; j <= len(l.lines); j++ {
		src := l.lines[j-1]
		if t := strings.TrimSpace(src); t == "" || strings.HasPrefix(t, "#") || l.inBlock(j) {
			continue
		}
		if indentOf(src) < ind {
			break
		}
		if indentOf(src) == ind && keyLine.MatchString(src) {
			sibs = append(sibs, j)
		}
		end = j
	}
	pm := keyLine.FindStringSubmatch(l.lines[max(parent, 1)-1])
	if parent == 0 || pm == nil || len(sibs) < 2 || end == 0 && sibs[len(sibs)-1] != kl {
		return nil
	}
	keyAt := func(j int) string { return keyLine.FindStringSubmatch(l.lines[j-1])[3] }
	types := slices.SortedFunc(maps.Keys(levels), func(a, b reflect.Type) int { return strings.Compare(levels[a], levels[b]) })
	for _, t := range types {
		level, name := levels[t], blockKeyOf(t)
		fields := fieldsOf(t)
		if name == "" || name == pm[3] {
			continue
		}
		first := len(sibs)
		for first > 0 && fields[keyAt(sibs[first-1])] != nil {
			first--
		}
		if first == 0 || first == len(sibs) || sibs[first] > kl {
			continue // the whole mapping is that block's, or the key is not in the run
		}
		fix := &Fix{Line: sibs[first], N: 0, With: []string{strings.Repeat(" ", len(pm[1])+len(pm[2])) + name + ":"}}
		if !l.loadsWith(fix) {
			continue
		}
		var keys []string
		for _, j := range sibs[first:] {
			keys = append(keys, keyAt(j)+":")
		}
		e := l.mk(sibs[first], ind+1, fmt.Sprintf("lines %d to %d read as the keys of %s (%s), but sit in %s: (line %d)", sibs[first], sibs[len(sibs)-1], level, strings.Join(keys, ", "), pm[3], parent),
			fmt.Sprintf("a `%s:` line may be missing above this one: put it back, level with %s:", name, pm[3]))
		e.Fix = fix
		return e
	}
	return nil
}

// blockKeyOf is the key whose value is a mapping of type t (gpus: for
// GPUsSpec), "" when no one key is.
func blockKeyOf(t reflect.Type) string {
	name := ""
	for parent := range levels {
		for k, ft := range fieldsOf(parent) {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft == t {
				if name != "" && name != k {
					return ""
				}
				name = k
			}
		}
	}
	return name
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

// listKeys are the keys whose value is a list of mappings (steps:,
// stages:, phases:, metrics:), from the file's types.
var listKeys = func() []string {
	seen := map[string]bool{}
	for t := range levels {
		for k, ft := range fieldsOf(t) {
			if ft.Kind() == reflect.Slice && (ft.Elem().Kind() == reflect.Struct || ft.Elem().Kind() == reflect.Map) {
				seen[k] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}()

// strandedItems is, for a value of the wrong kind at line n inside a list
// item, the run of items it is in that belong to another list: what a
// lost list key line (steps:) leaves, its items read on as those of the
// list above (metrics:). Said at the first of them, with the edit that
// puts the key line back; nil unless that edit loads.
func (l *loader) strandedItems(n int) *FileError {
	if l.probe || n < 2 || n > len(l.lines) {
		return nil
	}
	// The list item line n is in: the nearest item above, shallower.
	item, c := 0, 0
	for j := n; j >= 1 && j > n-200; j-- {
		src := l.lines[j-1]
		if t := strings.TrimSpace(src); t == "" || strings.HasPrefix(t, "#") || l.blockKeyColumn(j) >= 0 {
			continue
		}
		if strings.HasPrefix(strings.TrimLeft(src, " "), "- ") && (j == n || indentOf(src) < indentOf(l.lines[n-1])) {
			item, c = j, indentOf(src)
			break
		}
	}
	if item == 0 {
		return nil
	}
	// Its siblings above, back to the list's key.
	items, parent := []int{item}, 0
	for j := item - 1; j >= 1; j-- {
		src := l.lines[j-1]
		if t := strings.TrimSpace(src); t == "" || strings.HasPrefix(t, "#") || l.blockKeyColumn(j) >= 0 || indentOf(src) > c {
			continue
		}
		if indentOf(src) == c && strings.HasPrefix(strings.TrimLeft(src, " "), "- ") {
			items = append(items, j)
			continue
		}
		parent = j
		break
	}
	pm := keyLine.FindStringSubmatch(l.lines[max(parent, 1)-1])
	if parent == 0 || pm == nil || !opensBlock(l.lines[parent-1]) || len(items) < 2 {
		return nil
	}
	pad := strings.Repeat(" ", len(pm[1])+len(pm[2]))
	// From the item n is in back to the second of the list: the first
	// whose key line put back above it makes the file load.
	for _, at := range items[:len(items)-1] {
		for _, k := range listKeys {
			if k == pm[3] {
				continue
			}
			fix := &Fix{Line: at, N: 0, With: []string{pad + k + ":"}}
			if !l.loadsWith(fix) {
				continue
			}
			e := l.mk(at, c+1, fmt.Sprintf("the list items from here on read as %s:'s (line %d), but they are %s:'s", pm[3], parent, k),
				fmt.Sprintf("a `%s:` line may be missing above this one: put it back, level with %s:", k, pm[3]))
			e.Fix = fix
			return e
		}
	}
	return nil
}
