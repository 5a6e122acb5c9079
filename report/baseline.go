package report

import (
	"fmt"

	"github.com/greenlight-run/greenlight/compare"
	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// baseline is what the campaign is held against (baseline: in its file):
// compared again at each write, from the rows the record holds.
type baseline struct {
	rec  *record.Record // nil when it could not be read
	path string
	why  string // why it could not be read
	opts compare.Options
	res  *compare.Result
}

// SetBaseline holds the campaign against rec, read from path; rec nil
// with why says, in the results file, why it could not be.
func (w *Writer) SetBaseline(path string, rec *record.Record, why string, opts compare.Options) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.baseline = &baseline{rec: rec, path: path, why: why, opts: opts}
}

func (b *baseline) compare(cur *record.Record) {
	if b.rec == nil {
		return
	}
	r := compare.Compare(b.rec, cur, b.opts)
	b.res = &r
}

// result is the comparison as of the last write; nil without one.
func (b *baseline) result() *compare.Result {
	if b == nil {
		return nil
	}
	return b.res
}

// baselineLimit is how many lines of the comparison the results file
// shows; the better, worse and changed first.
const baselineLimit = 100

// block is the results file's "Compared with" block.
func (b *baseline) block() string {
	if b.rec == nil {
		return fmt.Sprintf("## Compared with a baseline\n\n⚠ The baseline `%s` could not be read: %s.\n", b.path, cell(b.why))
	}
	if b.res == nil {
		return ""
	}
	return fmt.Sprintf("## Compared with %s\n\nThe baseline: `%s`, kept current as results arrive. Welch's t-test at 5%% where both sides have repeats, else a tolerance of %s%%.\n\n%s",
		cell(b.rec.Campaign.Name), b.path, FormatNumber(b.opts.Tolerance*100), b.res.Markdown(baselineLimit))
}

// deltaCell is the key result's change against the baseline, for the
// header's table: the comparison's line for the phase's key metric at
// the point that gave it.
func deltaCell(cmp *compare.Result, ph *campaign.Phase, phase, metric string, step int) string {
	if metric == "" || ph == nil {
		return ""
	}
	point := ""
	if all := ph.AllSteps(); ph.Sweep != nil && len(ph.Sweep.Axes) > 0 && step >= 0 && step < len(all) && all[step].Unit != nil {
		point = ph.Sweep.Key(*all[step].Unit)
	}
	for _, l := range cmp.Lines {
		if l.Phase == phase && l.Metric == metric && l.Point == point {
			return compare.Short(l)
		}
	}
	return "—"
}
