package report

import (
	"fmt"
	"strings"

	"github.com/greenlight-run/greenlight/runner"
)

// A results table of a few dozen rows is shown whole. Past that the
// markdown keeps the first and last rows, says how many there are, and
// adds per-column statistics; the full table is the phase's CSV.
const (
	fullRows = 40
	edgeRows = 10
)

// tableKey names one step's results in one try of its phase: a retry
// starts a new table.
type tableKey struct {
	phase        string
	phaseAttempt int
	step         int
	stepAttempt  int
}

// resultTable follows one step's rows as they arrive: the union of their
// columns and each numeric column's statistics. Rows are taken in once, so
// the cost of all writes together grows with the rows, not their square.
type resultTable struct {
	n     int
	cols  *columns
	stats map[string]*colStats
}

func newResultTable() *resultTable {
	return &resultTable{cols: newColumns(), stats: map[string]*colStats{}}
}

// take reads the rows it has not seen yet.
func (t *resultTable) take(rows []runner.Row) {
	for i := t.n; i < len(rows); i++ {
		r := &rows[i]
		t.cols.add(r)
		for j, c := range r.Cols {
			v, ok := r.Values[j].(float64)
			if !ok {
				continue
			}
			s := t.stats[c]
			if s == nil {
				s = &colStats{}
				t.stats[c] = s
			}
			s.add(v)
		}
		for _, ch := range r.Checks {
			if s := t.stats[ch.Expect.Column]; s != nil {
				if ch.Pass {
					s.pass++
				} else {
					s.fail++
				}
			}
		}
	}
	t.n = len(rows)
}

// render is the markdown for rows; csv is the phase's full table, linked.
func (t *resultTable) render(rows []runner.Row, csv string) string {
	var b strings.Builder
	if len(rows) <= fullRows {
		b.WriteString(table(rows))
		return b.String()
	}
	fmt.Fprintf(&b, "**%d rows**: the first %d and the last %d are shown", len(rows), edgeRows, edgeRows)
	if csv != "" {
		fmt.Fprintf(&b, "; every row is in [%s](%s)", csv, csv)
	}
	b.WriteString(".\n\n")
	tableHead(&b, t.cols)
	for i := range rows[:edgeRows] {
		tableRow(&b, t.cols, &rows[i])
	}
	b.WriteString("|")
	for range t.cols.names {
		b.WriteString(" ⋮ |")
	}
	b.WriteString("\n")
	for i := len(rows) - edgeRows; i < len(rows); i++ {
		tableRow(&b, t.cols, &rows[i])
	}
	b.WriteString("\n| Column | Rows | Min | Median | Max | Checks |\n|---|---:|---:|---:|---:|---|\n")
	for _, c := range t.cols.names {
		s := t.stats[c]
		if s == nil || s.count == 0 {
			continue
		}
		checks := ""
		if s.pass+s.fail > 0 {
			checks = fmt.Sprintf("✓ %d · ✗ %d", s.pass, s.fail)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s |\n", valueCell(c), s.count,
			FormatNumber(s.min), FormatNumber(s.median()), FormatNumber(s.max), checks)
	}
	return b.String()
}

// tables holds the result tables being followed, by step and try.
type tables map[tableKey]*resultTable

// render returns the markdown for one step's rows, taking in new rows.
func (ts tables) render(k tableKey, rows []runner.Row, csv string) string {
	t := ts[k]
	if t == nil || t.n > len(rows) {
		t = newResultTable()
		ts[k] = t
	}
	t.take(rows)
	return t.render(rows, csv)
}
