package report

import (
	"math"
	"strconv"
	"strings"

	"github.com/greenlight-run/greenlight/runner"
)

// cell makes any text safe inside a markdown table cell.
func cell(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\\", "\\\\")
	s = strings.ReplaceAll(s, "|", "\\|")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\n", "<br>")
	s = strings.ReplaceAll(s, "\r", " ")
	return s
}

// FormatNumber prints a result value the way a person compares them:
// integers whole, others with four significant digits, no exponent for
// everyday magnitudes.
func FormatNumber(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return strconv.FormatFloat(v, 'f', -1, 64)
	case v == math.Trunc(v) && math.Abs(v) < 1e21:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 1000:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case math.Abs(v) >= 1e-3:
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	return strconv.FormatFloat(v, 'e', 3, 64)
}

func formatValue(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case float64:
		return FormatNumber(x), true
	case bool:
		return strconv.FormatBool(x), false
	case string:
		return x, false
	}
	return "", false
}

// table renders rows with columns in first-seen order; numeric columns are
// right-aligned; a column with a check shows ✓ or ✗ and the reference.
func table(rows []runner.Row) string {
	var cols []string
	idx := map[string]int{}
	numeric := map[string]bool{}
	text := map[string]bool{}
	for _, r := range rows {
		for i, c := range r.Cols {
			if _, ok := idx[c]; !ok {
				idx[c] = len(cols)
				cols = append(cols, c)
			}
			if _, isNum := r.Values[i].(float64); isNum {
				numeric[c] = true
			} else if r.Values[i] != nil {
				text[c] = true
			}
		}
	}
	if len(cols) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("|")
	for _, c := range cols {
		b.WriteString(" " + cell(c) + " |")
	}
	b.WriteString("\n|")
	for _, c := range cols {
		if numeric[c] && !text[c] {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
	for _, r := range rows {
		vals := make([]string, len(cols))
		for i, c := range r.Cols {
			s, _ := formatValue(r.Values[i])
			for _, ch := range r.Checks {
				if ch.Expect.Column == c {
					mark := "✓"
					if !ch.Pass {
						mark = "✗"
					}
					s += " " + mark + " (" + ch.Expect.String() + ")"
				}
			}
			vals[idx[c]] = s
		}
		b.WriteString("|")
		for _, v := range vals {
			b.WriteString(" " + cell(v) + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}
