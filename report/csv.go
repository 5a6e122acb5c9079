package report

import (
	"bytes"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/internal/files"

	"github.com/greenlight-run/greenlight/internal/safe"
	"github.com/greenlight-run/greenlight/runner"
)

// phaseCSV keeps a phase's full results table in a CSV file beside the
// results file: one row per result of the phase's current try, columns
// `step`, `recorded` and then the union of the result columns. New rows
// are appended and fsynced; a new column or a new try rewrites the file
// atomically with the new header.
type phaseCSV struct {
	path    string
	attempt int
	written map[int]int // rows written, by step index
	tries   map[int]int // the step's try those rows came from
	cols    *columns
	// stamps are the validity stamps the rows were written with, by
	// step index: a stamp that changes (a throttle later in the step)
	// rewrites the file, so every row of a step says the same. The
	// column is there once any row of the phase has one.
	stamps  map[int]string
	stampOf func(step int) string
	stamped bool
}

// csvName is the CSV file of a phase, beside the results file.
func csvName(report, phase string) string {
	base := strings.TrimSuffix(filepath.Base(report), filepath.Ext(report))
	return base + "." + phase + ".csv"
}

// update brings the file up to date with the phase's rows.
func (c *phaseCSV) update(p *runner.PhaseState) error {
	fresh := c.written == nil || c.attempt != p.Attempt
	for _, s := range p.Steps {
		if c.written != nil && (c.written[s.Index] > len(s.Results) || c.written[s.Index] > 0 && c.tries[s.Index] != s.Attempt) {
			fresh = true
		}
		if c.written != nil && c.written[s.Index] > 0 && c.stamp(s.Index) != c.stamps[s.Index] {
			fresh = true
		}
		if len(s.Results) > 0 && !c.stamped && c.stamp(s.Index) != "" {
			fresh = true
		}
	}
	if fresh {
		return c.rewrite(p)
	}
	// The file's order is the steps' (what a rewrite gives): rows of a
	// step before the last one written (a unit kept from an edited grid
	// lands between) are not appended but written in their place.
	last := -1
	for i := range p.Steps {
		if c.written[p.Steps[i].Index] > 0 {
			last = i
		}
	}
	var newRows []*runner.Row
	for i := range p.Steps {
		s := &p.Steps[i]
		if i < last && c.written[s.Index] < len(s.Results) {
			return c.rewrite(p)
		}
		for j := c.written[s.Index]; j < len(s.Results); j++ {
			if c.cols.add(&s.Results[j]) {
				return c.rewrite(p)
			}
			newRows = append(newRows, &s.Results[j])
		}
	}
	if len(newRows) == 0 {
		return nil
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	for _, r := range newRows {
		w.Write(c.record(r))
	}
	w.Flush()
	f, err := os.OpenFile(c.path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return c.rewrite(p) // removed meanwhile: write it whole again
	}
	var size int64
	if fi, serr := f.Stat(); serr == nil {
		size = fi.Size()
	}
	n, err := f.Write(buf.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if err != nil && n > 0 {
		f.Truncate(size) // no torn row: the table stays whole, and is written again next time
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	c.mark(p)
	return nil
}

func (c *phaseCSV) rewrite(p *runner.PhaseState) error {
	c.cols = newColumns()
	for i := range p.Steps {
		for j := range p.Steps[i].Results {
			c.cols.add(&p.Steps[i].Results[j])
		}
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	c.stamped = false
	for _, s := range p.Steps {
		c.stamped = c.stamped || len(s.Results) > 0 && c.stamp(s.Index) != ""
	}
	head := append([]string{"step", "recorded"}, c.cols.names...)
	if c.stamped {
		head = append(head, "stamp")
	}
	w.Write(head)
	for i := range p.Steps {
		for j := range p.Steps[i].Results {
			w.Write(c.record(&p.Steps[i].Results[j]))
		}
	}
	w.Flush()
	if err := files.WriteAtomic(c.path, buf.Bytes()); err != nil {
		return err
	}
	c.attempt = p.Attempt
	c.mark(p)
	return nil
}

func (c *phaseCSV) mark(p *runner.PhaseState) {
	c.written, c.tries, c.stamps = map[int]int{}, map[int]int{}, map[int]string{}
	for _, s := range p.Steps {
		c.written[s.Index], c.tries[s.Index] = len(s.Results), s.Attempt
		if len(s.Results) > 0 {
			c.stamps[s.Index] = c.stamp(s.Index)
		}
	}
}

func (c *phaseCSV) stamp(step int) string {
	if c.stampOf == nil {
		return ""
	}
	return c.stampOf(step)
}

func (c *phaseCSV) record(r *runner.Row) []string {
	rec := make([]string, 2+len(c.cols.names), 3+len(c.cols.names))
	if c.stamped {
		rec = append(rec, safe.Text(c.stamp(r.Step), safe.CSV))
	}
	rec[0] = FormatNumber(float64(r.Step + 1))
	rec[1] = r.Time.Format(time.RFC3339Nano)
	for i, name := range r.Cols {
		s, _ := formatValue(r.Values[i])
		if f, ok := r.Values[i].(float64); ok {
			s = csvNumber(f)
		}
		rec[2+c.cols.idx[name]] = safe.Text(s, safe.CSV)
	}
	return rec
}

// csvNumber prints a value at full precision, integers without exponent:
// the CSV is for analysis.
func csvNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
