package campaign

// What a row's expressions (roofline:, floor:, plot:) read beside the
// row's own columns: the point's axes. A structured axis is a record its
// expressions reach into (shape.m), and its fields read bare (m) where no
// other axis has a field of that name; the row's own column of a name
// wins over an axis's.

import (
	"slices"
	"strconv"
)

// ExprVars are the axis values a unit's rows may read in an expression: each
// axis at the unit's value (a number where it is one), a structured
// axis's record, and its fields bare where they are unambiguous. nil
// outside a sweep.
func (s *Sweep) ExprVars(u Unit) map[string]any {
	if s == nil || len(u.Values) != len(s.Axes) {
		return nil
	}
	out := map[string]any{}
	bare := s.bareFields()
	for i, a := range s.Axes {
		v := a.Values[u.Values[i]]
		if len(v.Fields) == 0 {
			out[a.Name] = number(v.Name)
			continue
		}
		rec := map[string]any{"name": v.Name}
		for k, f := range v.Fields {
			rec[k] = number(f)
			if bare[k] == a.Name {
				out[k] = rec[k]
			}
		}
		out[a.Name] = rec
	}
	return out
}

// bareFields are the fields of structured axes that read bare: field ->
// its one axis (a field two axes have reads only as axis.field).
func (s *Sweep) bareFields() map[string]string {
	out, twice := map[string]string{}, map[string]bool{}
	for _, a := range s.Axes {
		seen := map[string]bool{}
		for _, v := range a.Values {
			for k := range v.Fields {
				if seen[k] {
					continue
				}
				seen[k] = true
				if _, dup := out[k]; dup && out[k] != a.Name {
					twice[k] = true
				}
				out[k] = a.Name
			}
		}
	}
	for k := range twice {
		delete(out, k)
	}
	for _, a := range s.Axes {
		delete(out, a.Name) // an axis's own name is the axis
	}
	return out
}

// VarNames are the names an expression may read from the axes: each
// axis, each structured axis's fields as axis.field, and those fields
// bare where unambiguous; sorted.
func (s *Sweep) VarNames() []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, a := range s.Axes {
		out = append(out, a.Name)
		seen := map[string]bool{}
		for _, v := range a.Values {
			for k := range v.Fields {
				if !seen[k] {
					seen[k] = true
					out = append(out, a.Name+"."+k)
				}
			}
		}
	}
	for k := range s.bareFields() {
		out = append(out, k)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// number is a value as an expression reads it: a number where it is one.
func number(s string) any {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	return s
}

// With is a row's values with the point's axis values beside them: the
// row's own columns win.
func With(row, vars map[string]any) map[string]any {
	if len(vars) == 0 {
		return row
	}
	out := make(map[string]any, len(row)+len(vars))
	for k, v := range vars {
		out[k] = v
	}
	for k, v := range row {
		out[k] = v
	}
	return out
}
