package report

import (
	"strconv"
	"strings"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/internal/safe"
	"github.com/greenlight-run/greenlight/runner"
)

// cell makes text safe inside a markdown table cell or list item: control
// bytes shown as escapes, and the table's own syntax escaped.
func cell(s string) string { return safe.Markdown(safe.Text(s, safe.CSV)) }

// valueCell is cell for a step's value: also cut to a readable size.
func valueCell(s string) string { return safe.Markdown(safe.Text(s, safe.Value)) }

// FormatNumber prints a result value the way a person compares them
// (format.Number).
func FormatNumber(v float64) string { return format.Number(v) }

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

// columns is the union of a table's columns in first-seen order, and
// which hold numbers and which text. It grows row by row.
type columns struct {
	names   []string
	idx     map[string]int
	numeric map[string]bool
	text    map[string]bool
}

func newColumns() *columns {
	return &columns{idx: map[string]int{}, numeric: map[string]bool{}, text: map[string]bool{}}
}

// add takes in a row's columns; it reports whether a new one appeared.
func (c *columns) add(r *runner.Row) bool {
	grew := false
	for i, name := range r.Cols {
		if _, ok := c.idx[name]; !ok {
			c.idx[name] = len(c.names)
			c.names = append(c.names, name)
			grew = true
		}
		if _, isNum := r.Values[i].(float64); isNum {
			c.numeric[name] = true
		} else if r.Values[i] != nil {
			c.text[name] = true
		}
	}
	return grew
}

// table renders rows in full with columns in first-seen order.
func table(rows []runner.Row) string {
	cols := newColumns()
	for i := range rows {
		cols.add(&rows[i])
	}
	var b strings.Builder
	if !tableHead(&b, cols) {
		return ""
	}
	for i := range rows {
		tableRow(&b, cols, &rows[i])
	}
	return b.String()
}

// tableHead writes the header and alignment rows; numeric columns are
// right-aligned. It reports false when there are no columns.
func tableHead(b *strings.Builder, cols *columns) bool {
	if len(cols.names) == 0 {
		return false
	}
	b.WriteString("|")
	for _, c := range cols.names {
		b.WriteString(" " + valueCell(c) + " |")
	}
	b.WriteString("\n|")
	for _, c := range cols.names {
		if cols.numeric[c] && !cols.text[c] {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
	return true
}

// tableRow writes one row; a column with a check shows ✓ or ✗ and the
// reference.
func tableRow(b *strings.Builder, cols *columns, r *runner.Row) {
	vals := make([]string, len(cols.names))
	for i, c := range r.Cols {
		s, _ := formatValue(r.Values[i])
		s = safe.Text(s, safe.Value)
		for _, ch := range r.Checks {
			if ch.Expect.Column == c {
				mark := "✓"
				if !ch.Pass {
					mark = "✗"
				}
				s += " " + mark + " (" + ch.Expect.String() + ")"
			}
		}
		if j, ok := cols.idx[c]; ok {
			vals[j] = s
		}
	}
	b.WriteString("|")
	for _, v := range vals {
		b.WriteString(" " + safe.Markdown(v) + " |")
	}
	b.WriteString("\n")
}
