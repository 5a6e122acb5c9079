package runner

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/runner/campaign"

	"github.com/greenlight-run/greenlight/internal/safe"
)

// Reading what a step writes to $GREENLIGHT_RESULTS and $GREENLIGHT_SUMMARY.

// drainResults reads the results file to its end: once a step has ended,
// what it wrote is all there, however much of it there is.
func (sr *stepRun) drainResults(now time.Time) {
	for {
		before := sr.out.resOff
		sr.readResults(now)
		if sr.out.resOff == before {
			return
		}
	}
}

// maxResultLine is the longest results line kept: a row of a table, even
// one with a 10 MB value (cut when shown), is far shorter.
const maxResultLine = 32 << 20

func (sr *stepRun) readResults(now time.Time) {
	data, off := readFrom(sr.files.results, sr.out.resOff)
	if len(data) == 0 {
		return
	}
	sr.out.resOff = off
	data = append(sr.out.resRest, data...)
	sr.out.resRest = nil
	// One event for what one read brought: a burst of 20,000 rows is a
	// handful of events, not 20,000 snapshots of the whole campaign.
	first := len(sr.pr.state.Steps[sr.step.Index].Results)
	defer func() { sr.flushTimes(); sr.announceRows(first) }()
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if len(data) > maxResultLine {
				// No row is that long: a step writing binary or one endless
				// line. Say so once per line and skip to its end.
				if !sr.out.resSkipping {
					sr.r.warn(fmt.Sprintf("%s step %d wrote a line to $GREENLIGHT_RESULTS of over %s: skipped", sr.pr.ph.ID, sr.step.Index+1, format.Bytes(maxResultLine)))
				}
				sr.out.resSkipping = true
				return
			}
			sr.out.resRest = append([]byte(nil), data...)
			return
		}
		line := bytes.TrimSpace(data[:i])
		data = data[i+1:]
		if sr.out.resSkipping {
			sr.out.resSkipping = false // the end of the line that was too long
			continue
		}
		if len(line) == 0 {
			continue
		}
		cols, vals, err := decodeObject(line)
		if err != nil {
			sr.r.warn(fmt.Sprintf("%s step %d wrote a line to $GREENLIGHT_RESULTS that is not a JSON object (%s): %s",
				sr.pr.ph.ID, sr.step.Index+1, safe.Line(err.Error(), safe.Value), safe.Line(string(line), safe.Value)))
			continue
		}
		sr.addRow(Row{Phase: sr.pr.ph.ID, Step: sr.step.Index, Time: now, Cols: cols, Values: vals}, false)
	}
}

// announceRows publishes the rows added since first: each of a few, or
// one event for many.
func (sr *stepRun) announceRows(first int) {
	r := sr.r
	rows := sr.pr.state.Steps[sr.step.Index].Results
	if len(rows)-first <= 0 {
		return
	}
	if len(rows)-first <= 5 {
		for i := first; i < len(rows); i++ {
			sr.emitRow(rows[i])
		}
		return
	}
	last := rows[len(rows)-1]
	for i := first; i < len(rows)-1; i++ {
		sr.annotate(rows[i]) // the baseline's comparison counts them all
	}
	r.emit(Event{Kind: ResultRecorded, Phase: sr.pr.ph.ID, Step: sr.step.Index,
		Message: fmt.Sprintf("%s: %s%d results (%d in all), the last %s", sr.pr.ph.ID, sr.annotate(last), len(rows)-first, len(rows), rowText(last))})
}

// annotate is the word said with a new result (its change against a
// baseline), first so that a narrow window shows it: "WORD · ", or "".
func (sr *stepRun) annotate(row Row) string {
	f := sr.r.opts.Annotate
	if f == nil {
		return ""
	}
	point := ""
	if sw, u := sr.pr.ph.Sweep, sr.step.Unit; sw != nil && u != nil && len(sw.Axes) > 0 {
		point = sw.Key(*u)
	}
	if w := f(sr.pr.ph.ID, point, row); w != "" {
		return w + " · "
	}
	return ""
}

func (sr *stepRun) emitRow(row Row) {
	r := sr.r
	r.emit(Event{Kind: ResultRecorded, Phase: sr.pr.ph.ID, Step: sr.step.Index, Message: fmt.Sprintf("%s: %sresult %s", sr.pr.ph.ID, sr.annotate(row), rowText(row))})
}

func (sr *stepRun) addRow(row Row, announce bool) {
	pr := sr.pr
	if j := sr.job; j != nil && j.dropRows {
		return // the run Slurm requeued, completing: its rows are not the step's (the next run writes them)
	}
	row = sr.withPoint(row)
	for _, list := range [][]campaign.Expect{pr.ph.Expect, sr.step.Expect} {
		for _, e := range list {
			for i, c := range row.Cols {
				if c != e.Column {
					continue
				}
				if v, ok := row.Values[i].(float64); ok {
					ch := Check{Expect: e, Value: v, Pass: e.Check(v)}
					row.Checks = append(row.Checks, ch)
					if !ch.Pass {
						pr.state.ExpectFailed++
					}
				}
			}
		}
	}
	ss := &pr.state.Steps[sr.step.Index]
	row.Time = sr.rowTime(len(ss.Results), row.Time)
	ss.Results = append(ss.Results, row)
	if announce { // one row at a time (a log line, a saved file): its time is kept now
		sr.flushTimes()
		sr.emitRow(row)
	}
}

func rowText(row Row) string {
	parts := make([]string, len(row.Cols))
	for i, c := range row.Cols {
		parts[i] = safe.Line(fmt.Sprintf("%s=%v", c, row.Values[i]), safe.Value)
	}
	return strings.Join(parts, " ")
}

func (sr *stepRun) readSummary() {
	data, off := readFrom(sr.files.summary, sr.out.sumOff)
	if len(data) == 0 {
		return
	}
	sr.out.sumOff = off
	ss := &sr.pr.state.Steps[sr.step.Index]
	ss.Summary += string(data)
	sr.summaryAppended(len(data))
}

func readFrom(path string, off int64) ([]byte, int64) {
	if fi, err := os.Stat(path); err != nil || fi.Size() <= off {
		return nil, off
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, off
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, off
	}
	data, _ := io.ReadAll(io.LimitReader(f, maxReadPerPoll))
	return data, off + int64(len(data))
}

// summaryAppended announces what a step added to its summary.
func (sr *stepRun) summaryAppended(n int) {
	r := sr.r
	r.emit(Event{Kind: SummaryAppended, Phase: sr.pr.ph.ID, Step: sr.step.Index, Message: fmt.Sprintf("%s: summary +%d bytes", sr.pr.ph.ID, n)})
}
