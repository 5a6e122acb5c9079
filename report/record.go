package report

// Writing the machine-readable record (package record) beside the
// results file, in the same coalesced writes as the file and its CSVs.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/internal/files"
	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/results"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// recordBook keeps the record's rows encoded per step, so that a write
// after one new result encodes that step's rows, not all 20,000.
type recordBook struct {
	steps   map[stepKey]encodedStep
	written time.Time // the file's last write
	status  string    // the phases' statuses it was written with
	rows    int       // the rows it was written with
}

// recordIdle is how often a record with no new row and no change of
// status is written again (its stamps may have moved): an idle campaign
// rewrote it at every 5 s header write, a fifth of an idle runner's CPU.
const recordIdle = 30 * time.Second

// recordEvery is how often, at most, a burst of results rewrites the
// record: it is the whole campaign (MBs at 20,000 rows), and the CSVs and
// the journal hold each row already. A phase's change of status, and the
// campaign's end, write it at once, fsynced.
const recordEvery = 2 * time.Second

type stepKey struct {
	phase            string
	attempt, step, a int
}

type encodedStep struct {
	rows    int
	stamp   string
	gpu     *record.GPUFacts // the step's facts its rows were encoded with
	recs    []record.Row     // the step's rows as the record's, for a comparison with a baseline
	json    []byte           // the first encoded of the step's rows, each followed by ",\n"
	encoded int
}

// writeRecord writes the record beside the results file, atomically.
func (w *Writer) writeRecord(st *runner.State) error {
	if w.record.steps == nil {
		w.record.steps = map[stepKey]encodedStep{}
	}
	rec := record.Record{Kind: record.KindName, Schema: record.Schema, Conditions: w.conds,
		Campaign: record.Campaign{Name: w.plan.Name, File: w.plan.File, Report: w.path, State: string(st.Headline()),
			Started: st.Started, Ended: st.Ended, Written: time.Now().UTC()}}
	var status strings.Builder
	for _, p := range st.Phases {
		fmt.Fprintf(&status, "%s=%s/%d,", p.ID, p.Status, p.Attempt)
	}
	status.WriteString(string(st.Headline()))
	final := st.Finished || status.String() != w.record.status
	n := 0
	for _, p := range st.Phases {
		for _, s := range p.Steps {
			n += len(s.Results)
		}
	}
	since := time.Since(w.record.written)
	due := final || since >= recordEvery && (n != w.record.rows || since >= recordIdle)
	if _, err := os.Stat(filepath.Dir(w.path)); !due && since >= recordEvery && err != nil {
		due = true // its folder went: the write that fails says so now, not in 30 s
	}
	if !due && w.baseline == nil {
		return nil // nothing reads the rows before the file is due
	}
	var rows bytes.Buffer
	var all []record.Row
	live := map[stepKey]bool{}
	model := w.model(st)
	for _, p := range st.Phases {
		ph := w.plan.Phase(p.ID)
		if ph == nil {
			continue
		}
		rp := record.Phase{ID: p.ID, Title: p.Title, Status: string(p.Status), Reason: p.Reason, Attempt: p.Attempt,
			Started: p.Started, Ended: p.Ended, Better: campaign.Better(ph), Metrics: ph.MetricNames()}
		if sw := ph.Sweep; sw != nil {
			for _, a := range sw.Axes {
				rp.Axes = append(rp.Axes, a.Name)
			}
			rp.Repeat, rp.Noise = sw.Repeat, sw.Noise
			if sw.Search != nil {
				rp.Repeat = 0 // a search's runs are its own: Model.Search
			}
		}
		rp.Model = model.Phase(p.ID)
		if len(rp.Better) == 0 {
			rp.Better = nil
		}
		if w.traces != nil {
			rp.Captures = w.traces.captures(p)
		}
		rp.Roofline, _ = w.rooflineOf(ph, p, st)
		rp.Floor = w.floorOf(ph, p, st)
		rec.Phases = append(rec.Phases, rp)
		units := ph.AllSteps()
		for i, s := range p.Steps {
			if len(s.Results) == 0 {
				continue
			}
			key := stepKey{p.ID, p.Attempt, i, s.Attempt}
			live[key] = true
			stamp := w.stepStamp(&p, i)
			gpu := gpuFacts(w.factsOf(p, s))
			enc, ok := w.record.steps[key]
			// Its facts come at its end: rows encoded before are encoded
			// again, with them.
			if !ok || enc.rows > len(s.Results) || enc.stamp != strings.Join(stamp, "\n") || !sameGPU(enc.gpu, gpu) {
				enc = encodedStep{stamp: strings.Join(stamp, "\n"), gpu: gpu} // encoded again, whole
			}
			var unit *campaign.Unit
			if i < len(units) {
				unit = units[i].Unit
			}
			if w.baseline != nil && enc.rows < len(s.Results) { // the comparison reads them as the record's rows
				enc.recs = append(enc.recs, recordRows(ph, unit, s.Index, s.Results[enc.rows:], stamp, gpu)...)
			}
			enc.rows = len(s.Results)
			if due { // encoded when the file is written, each row once, straight from the runner's
				point, repeat, skip := pointOf(ph, unit)
				for _, row := range s.Results[enc.encoded:] {
					head := record.Row{Phase: ph.ID, Step: s.Index + 1, Point: point, Repeat: repeat, Time: row.Time.UTC(), Stamp: stamp, Checks: recordChecks(row), GPU: gpu}
					enc.json = append(record.AppendColumns(enc.json, head, row.Cols, row.Values, skip), ",\n"...)
				}
				enc.encoded = len(s.Results)
				rows.Write(enc.json)
			}
			w.record.steps[key] = enc
			if w.baseline != nil {
				all = append(all, enc.recs...)
			}
		}
	}
	for k := range w.record.steps {
		if !live[k] {
			delete(w.record.steps, k)
		}
	}
	if w.baseline != nil {
		rec.Rows = all
		w.baseline.compare(&rec)
		rec.Rows = nil
	}
	if !due {
		return nil
	}
	head, err := json.MarshalIndent(rec, "", " ")
	if err != nil {
		return err
	}
	// The rows go in where the empty list was marshalled: "rows": null.
	i := bytes.LastIndex(head, []byte(`"rows": null`))
	if i < 0 {
		return errors.New("record: rows not found in the marshalled head")
	}
	var out bytes.Buffer
	out.Write(head[:i])
	out.WriteString("\"rows\": [\n")
	out.Write(bytes.TrimSuffix(rows.Bytes(), []byte(",\n")))
	out.WriteString("\n ]")
	out.Write(head[i+len(`"rows": null`):])
	out.WriteByte('\n')
	if err := files.Replace(filepath.Join(filepath.Dir(w.path), filepath.Base(record.Name(w.path))), out.Bytes(), final); err != nil {
		return err
	}
	w.record.written, w.record.status, w.record.rows = time.Now(), status.String(), n
	return nil
}

// pointOf is a sweep unit's point and repeat, and the columns that are
// its point's, not values.
func pointOf(ph *campaign.Phase, unit *campaign.Unit) (point string, repeat int, skip map[string]bool) {
	skip = ph.PointColumns()
	if sw := ph.Sweep; sw != nil && unit != nil && len(sw.Axes) > 0 {
		point = sw.Key(*unit)
	}
	if unit != nil {
		repeat = unit.Repeat
	}
	return point, repeat, skip
}

// recordRows are rows of step idx as the record's.
// sameGPU says two steps' facts, as rows carry them, are the same.
func sameGPU(a, b *record.GPUFacts) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// gpuFacts are a step's facts as the record's rows carry them; nil when
// it has none, or none with a reading.
func gpuFacts(f *runner.StepFacts) *record.GPUFacts {
	if f == nil || f.Readings == 0 {
		return nil
	}
	g := &record.GPUFacts{Readings: f.Readings, PowerW: f.PowerW, PowerGPUs: f.PowerGPUs, EnergyWh: f.EnergyWh, EnergyFrom: f.EnergyFrom, SMClockMHz: f.SMClockMHz, SMSamples: f.SMClockSamples}
	if !f.ReadFrom.IsZero() {
		g.ReadFrom = f.ReadFrom.UTC()
	}
	return g
}

func recordRows(ph *campaign.Phase, unit *campaign.Unit, idx int, rows []runner.Row, stamp []string, gpu *record.GPUFacts) []record.Row {
	point, _, skip := pointOf(ph, unit)
	out := make([]record.Row, 0, len(rows))
	for _, row := range rows {
		rr := record.Row{Phase: ph.ID, Step: idx + 1, Point: point, Time: row.Time.UTC(), Values: map[string]any{}, Stamp: stamp, GPU: gpu}
		if unit != nil {
			rr.Repeat = unit.Repeat
		}
		for j, c := range row.Cols {
			if skip[c] {
				continue
			}
			v := row.Values[j]
			if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
				v = nil // JSON has no NaN: a value that is not a number is none
			}
			rr.Values[c] = v
		}
		rr.Checks = recordChecks(row)
		out = append(out, rr)
	}
	return out
}

// recordChecks are a row's checks as the record's.
func recordChecks(row runner.Row) []record.Check {
	var out []record.Check
	for _, c := range row.Checks {
		out = append(out, record.Check{Metric: c.Expect.Column, Expect: c.Expect.String(), Value: c.Value, Pass: c.Pass})
	}
	return out
}

// model is the results model of st (package results), made once a state:
// the record's phases and the blocks read the same one.
func (w *Writer) model(st *runner.State) *results.Model {
	if w.models.st != st || w.models.m == nil {
		w.models.st, w.models.m = st, results.Of(w.plan, st)
	}
	return w.models.m
}
