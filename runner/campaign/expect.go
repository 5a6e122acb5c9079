package campaign

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Expect is a reference a result column is checked against: a comparison
// (">= 55") or a value with a tolerance ({value: 57, rel: 5%}).
type Expect struct {
	Column string
	Op     string // ">=", ">", "<=", "<", "==", or "~" for a tolerance
	Value  float64
	Abs    float64 // absolute tolerance for "~"
	Rel    float64 // relative tolerance for "~", as a fraction
}

// Check reports whether v meets the reference.
func (e Expect) Check(v float64) bool {
	switch e.Op {
	case ">=":
		return v >= e.Value
	case ">":
		return v > e.Value
	case "<=":
		return v <= e.Value
	case "<":
		return v < e.Value
	case "==":
		return v == e.Value
	case "~":
		tol := math.Max(e.Abs, e.Rel*math.Abs(e.Value))
		return math.Abs(v-e.Value) <= tol
	}
	return false
}

func (e Expect) String() string {
	if e.Op != "~" {
		return e.Op + " " + trimFloat(e.Value)
	}
	switch {
	case e.Rel > 0 && e.Abs > 0:
		return fmt.Sprintf("%s ± %s or %s%%", trimFloat(e.Value), trimFloat(e.Abs), trimFloat(e.Rel*100))
	case e.Rel > 0:
		return fmt.Sprintf("%s ± %s%%", trimFloat(e.Value), trimFloat(e.Rel*100))
	default:
		return fmt.Sprintf("%s ± %s", trimFloat(e.Value), trimFloat(e.Abs))
	}
}

func trimFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// parseExpects turns the raw `expect` mapping into sorted Expects.
// It returns the first bad column and why.
func parseExpects(raw map[string]any) ([]Expect, string, error) {
	cols := make([]string, 0, len(raw))
	for c := range raw {
		cols = append(cols, c)
	}
	sort.Strings(cols)
	var out []Expect
	for _, c := range cols {
		e, err := parseExpect(c, raw[c])
		if err != nil {
			return nil, c, err
		}
		out = append(out, e)
	}
	return out, "", nil
}

func parseExpect(col string, v any) (Expect, error) {
	e := Expect{Column: col}
	switch x := v.(type) {
	case string:
		s := strings.TrimSpace(x)
		for _, op := range []string{">=", "<=", "==", ">", "<"} {
			if strings.HasPrefix(s, op) {
				f, err := strconv.ParseFloat(strings.TrimSpace(s[len(op):]), 64)
				if err != nil {
					return e, fmt.Errorf("expect %q: %q is not a number", col, strings.TrimSpace(s[len(op):]))
				}
				e.Op, e.Value = op, f
				return e, nil
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return e, fmt.Errorf("expect %q: write a comparison like \">= 55\" or {value: 57, rel: 5%%}", col)
		}
		e.Op, e.Value = "==", f
		return e, nil
	case int, int64, uint64, float64:
		e.Op, e.Value = "==", toFloat(x)
		return e, nil
	case map[string]any:
		e.Op = "~"
		val, ok := x["value"]
		if !ok {
			return e, fmt.Errorf("expect %q: a tolerance needs value, e.g. {value: 57, rel: 5%%}", col)
		}
		f, ok := num(val)
		if !ok {
			return e, fmt.Errorf("expect %q: value must be a number", col)
		}
		e.Value = f
		for k, tv := range x {
			switch k {
			case "value":
			case "abs":
				a, ok := num(tv)
				if !ok || a < 0 {
					return e, fmt.Errorf("expect %q: abs must be a non-negative number", col)
				}
				e.Abs = a
			case "rel":
				r, err := parseRel(tv)
				if err != nil {
					return e, fmt.Errorf("expect %q: %v", col, err)
				}
				e.Rel = r
			default:
				return e, fmt.Errorf("expect %q: unknown key %q (use value, abs, rel)", col, k)
			}
		}
		if e.Abs == 0 && e.Rel == 0 {
			return e, fmt.Errorf("expect %q: give a tolerance, abs or rel", col)
		}
		return e, nil
	}
	return e, fmt.Errorf("expect %q: write a comparison like \">= 55\" or {value: 57, rel: 5%%}", col)
}

func parseRel(v any) (float64, error) {
	if s, ok := v.(string); ok {
		s = strings.TrimSpace(s)
		pct := strings.HasSuffix(s, "%")
		f, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
		if err != nil || f < 0 {
			return 0, fmt.Errorf("rel %q: write it like 5%% or 0.05", s)
		}
		if pct {
			f /= 100
		}
		return f, nil
	}
	f, ok := num(v)
	if !ok || f < 0 {
		return 0, fmt.Errorf("rel must be a percentage like 5%% or a fraction like 0.05")
	}
	return f, nil
}

func num(v any) (float64, bool) {
	switch v.(type) {
	case int, int64, uint64, float64:
		return toFloat(v), true
	}
	return 0, false
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}
