package campaign

import (
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// The strict decoder stops at the first unknown key; a person fixing a
// file wants them all at once. unknownKeys walks the file's mappings
// against the spec's types and reports each key a mapping cannot have
// (up to maxErrs), with the nearest key of that mapping, or, for a key
// that belongs to another level (`gate:` under a step), where it goes.

const maxErrs = 20

// levels names each mapping of the campaign file for hints.
var levels = map[reflect.Type]string{
	reflect.TypeOf(CampaignSpec{}):   "the campaign (top level)",
	reflect.TypeOf(PhaseSpec{}):      "a phase",
	reflect.TypeOf(StepSpec{}):       "a step",
	reflect.TypeOf(ServiceSpec{}):    "a service",
	reflect.TypeOf(ReadySpec{}):      "ready:",
	reflect.TypeOf(ResultsSpec{}):    "results:",
	reflect.TypeOf(StageSpec{}):      "a stage",
	reflect.TypeOf(PreflightSpec{}):  "preflight:",
	reflect.TypeOf(SlurmSpec{}):      "slurm:",
	reflect.TypeOf(GPUsSpec{}):       "gpus:",
	reflect.TypeOf(ConditionsSpec{}): "conditions:",
	reflect.TypeOf(CompareSpec{}):    "compare:",
	reflect.TypeOf(MetricsSpec{}):    "metrics:",
	reflect.TypeOf(PlotSpec{}):       "plot:",
	reflect.TypeOf(CaptureSpec{}):    "capture:",
	reflect.TypeOf(SearchSpec{}):     "search:",
}

// anyKeys are the struct types that decode a mapping of any keys (a
// metric's name to its direction).
var anyKeys = map[reflect.Type]bool{reflect.TypeOf(BetterSpec{}): true, reflect.TypeOf(MetricSpec{}): true}

// fieldsOf are a struct type's YAML keys and their types.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if tag := strings.Split(f.Tag.Get("yaml"), ",")[0]; tag != "" && tag != "-" {
			m[tag] = f.Type
		}
	}
	return m
}

// whereKey lists the levels that have key.
func whereKey(key string) []string {
	var at []string
	for t, name := range levels {
		if _, ok := fieldsOf(t)[key]; ok {
			at = append(at, name)
		}
	}
	sort.Strings(at)
	return at
}

func (l *loader) unknownKeys(root ast.Node) FileErrors {
	var errs FileErrors
	var walk func(n ast.Node, t reflect.Type)
	walk = func(n ast.Node, t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if n == nil || len(errs) >= maxErrs {
			return
		}
		if a, ok := n.(*ast.AnchorNode); ok {
			walk(a.Value, t)
			return
		}
		switch t.Kind() {
		case reflect.Slice:
			if seq, ok := n.(*ast.SequenceNode); ok {
				for _, v := range seq.Values {
					walk(v, t.Elem())
				}
			}
			return
		case reflect.Struct:
			if anyKeys[t] {
				return
			}
		default:
			return // maps (env:, expect:) take any key; scalars have none
		}
		var pairs []*ast.MappingValueNode
		switch m := n.(type) {
		case *ast.MappingNode:
			pairs = m.Values
		case *ast.MappingValueNode:
			pairs = []*ast.MappingValueNode{m}
		default:
			return // a scalar where a struct goes (gpus: 8, slurm: off): the decoder judges it
		}
		fields := fieldsOf(t)
		for _, kv := range pairs {
			tok := kv.Key.GetToken()
			if tok == nil {
				continue
			}
			key := tok.Value
			ft, ok := fields[key]
			if ok {
				l.fieldLines[tok.Position.Line] = true
				walk(kv.Value, ft)
				continue
			}
			if len(errs) >= maxErrs {
				return
			}
			here := levels[t]
			if here == "" {
				here = "this mapping"
			}
			hint, fix := "", (*Fix)(nil)
			switch elsewhere := whereKey(key); {
			case len(elsewhere) > 0:
				hint = fmt.Sprintf("%s is a key of %s, not of %s: move it there", key, strings.Join(elsewhere, " or "), here)
			default:
				if near := closestIn(key, fields, pairs); near != "" {
					hint = fmt.Sprintf("did you mean %q?", near)
					fix = l.renamed(tok.Position.Line, tok.Position.Column, key, near)
					if fix != nil && !l.probe && !l.loadsWith(fix) {
						// The key renamed still does not load (repeat: {max: 3}
						// needs until:); a one-key mapping whose value the key
						// above takes as it is (repeat: 3) may have been meant.
						if f, value := l.unwrapped(tok.Position.Line); f != nil && l.loadsWith(f) {
							hint, fix = fmt.Sprintf("write the value alone, %s (a mapping here takes %s)", value, strings.Join(fieldNames(fields), ", ")), f
						}
					}
				} else {
					hint = fmt.Sprintf("remove it; %s takes: %s", here, strings.Join(fieldNames(fields), ", "))
				}
			}
			e := l.mk(tok.Position.Line, tok.Position.Column, fmt.Sprintf("unknown key %q in %s", key, here), hint)
			e.Fix = fix
			errs = append(errs, e)
		}
	}
	walk(root, reflect.TypeOf(CampaignSpec{}))
	return errs
}

// closestIn is the key of fields nearest to s, within two edits (a swap
// of two letters is one), leaving out the keys the mapping already has:
// a person misspells a key they have not written yet. A tie goes to the
// key that keeps s's first letter, then to the one nearer s's length.
func closestIn(s string, fields map[string]reflect.Type, have []*ast.MappingValueNode) string {
	written := map[string]bool{}
	for _, kv := range have {
		if tok := kv.Key.GetToken(); tok != nil {
			written[tok.Value] = true
		}
	}
	var keys []string
	for _, k := range fieldNames(fields) {
		if !written[k] {
			keys = append(keys, k)
		}
	}
	return nearest(s, keys)
}

// renamed is the fix that writes want for the key at line, col.
func (l *loader) renamed(line, col int, key, want string) *Fix {
	if line < 1 || line > len(l.lines) {
		return nil
	}
	src := l.lines[line-1]
	i := col - 1
	if i < 0 || i+len(key) > len(src) || src[i:i+len(key)] != key {
		return nil
	}
	return &Fix{Line: line, N: 1, With: []string{src[:i] + want + src[i+len(key):]}}
}

func fieldNames(m map[string]reflect.Type) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// tabIndents reports every line indented with a tab: YAML forbids them
// there, and go-yaml's own words for it do not say so.
func (l *loader) tabIndents() FileErrors {
	var errs FileErrors
	for i, line := range l.lines {
		for j, r := range line {
			if r == '\t' {
				errs = append(errs, l.mk(i+1, j+1, "a tab in the indentation: tabs are not allowed here", "indent with spaces (YAML counts spaces, and a tab is not one)"))
				break
			}
			if r != ' ' {
				break
			}
		}
		if len(errs) >= maxErrs {
			break
		}
	}
	return errs
}

// oneKeyFlow is `key: {k: value}` on one line: a mapping of one key.
var oneKeyFlow = regexp.MustCompile(`^(\s*(?:-\s+)?[A-Za-z_][A-Za-z0-9_]*):\s*\{\s*[A-Za-z_][A-Za-z0-9_]*:\s*([^,{}\[\]]+?)\s*\}\s*(#.*)?$`)

// unwrapped is the fix that writes line n's one-key flow mapping as its
// value alone (repeat: {a: 3} -> repeat: 3), and that value; nil when
// the line is no such mapping.
func (l *loader) unwrapped(n int) (*Fix, string) {
	if n < 1 || n > len(l.lines) {
		return nil, ""
	}
	m := oneKeyFlow.FindStringSubmatch(l.lines[n-1])
	if m == nil {
		return nil, ""
	}
	return &Fix{Line: n, N: 1, With: []string{m[1] + ": " + m[2]}}, strings.TrimSpace(m[1]) + ": " + m[2]
}
