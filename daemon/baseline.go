package daemon

import (
	"fmt"
	"github.com/greenlight-run/greenlight/runner/link"
	"path/filepath"
	"strings"

	"github.com/greenlight-run/greenlight/compare"
	"github.com/greenlight-run/greenlight/internal/statedir"
	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/report"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// openBaseline reads the record the campaign is held against (baseline:
// a record, a results file, or a campaign file whose results file is
// found as every command finds it).
func openBaseline(plan *campaign.Plan) (*record.Record, error) {
	path := plan.Compare.Baseline
	if ext := filepath.Ext(path); strings.EqualFold(ext, ".yaml") || strings.EqualFold(ext, ".yml") {
		bp, err := campaign.Load(path)
		if err != nil {
			return nil, fmt.Errorf("%s is not a campaign file that loads: %v", path, err)
		}
		if dir, _, err := statedir.Resolve(bp, ""); err == nil {
			if saved := link.SavedReport(dir); saved != "" {
				bp.Report = saved
			}
		}
		path = bp.Report
	}
	if filepath.Clean(record.Name(path)) == filepath.Clean(record.Name(plan.Report)) {
		return nil, fmt.Errorf("%s is this campaign's own record: point baseline: at a previous campaign's", path)
	}
	return compare.Load(path)
}

// heldAgainst is the campaign's baseline, opened.
type heldAgainst struct {
	base *record.Record // nil without one that reads
	note string         // what is said at the start
	warn bool           // the note is a warning: unreadable, or still running
	err  error
	opts compare.Options
	live *compare.Live // says each new result's change; nil without a base
}

// baselineFor opens the baseline and says what the campaign will do with
// it.
func baselineFor(plan *campaign.Plan) heldAgainst {
	h := heldAgainst{opts: compare.Options{Tolerance: plan.Compare.Tolerance, Rename: plan.Compare.Rename}}
	if plan.Compare.Baseline == "" {
		return h
	}
	if h.base, h.err = openBaseline(plan); h.err != nil {
		h.note, h.warn = fmt.Sprintf("baseline: %v: the results are not compared", h.err), true
		return h
	}
	h.note = fmt.Sprintf("compared with %s (%s, %d results) as results arrive", h.base.Campaign.Name, plan.Compare.Baseline, len(h.base.Rows))
	switch h.base.Campaign.State {
	case "running", "paused", "frozen":
		h.note += fmt.Sprintf("; it was still %s when its record was written: compared as it stood", h.base.Campaign.State)
		h.warn = true
	}
	h.live = compare.NewLive(h.base, plan, h.opts)
	return h
}

// annotate is the runner's word beside each new result; nil without a
// baseline.
func (h heldAgainst) annotate() func(phase, point string, row runner.Row) string {
	if h.live == nil {
		return nil
	}
	return func(phase, point string, row runner.Row) string {
		return h.live.Say(phase, point, row.Cols, row.Values)
	}
}

// give hands the baseline to the results file's writer.
func (h heldAgainst) give(plan *campaign.Plan, w *report.Writer) {
	if plan.Compare.Baseline == "" {
		return
	}
	why := ""
	if h.err != nil {
		why = h.err.Error()
	}
	w.SetBaseline(plan.Compare.Baseline, h.base, why, h.opts)
}

// GiveBaseline hands the campaign's baseline to a writer that rebuilds
// its results file (greenlight report); the words say what came of it.
func GiveBaseline(plan *campaign.Plan, w *report.Writer) (note string, warn bool) {
	h := baselineFor(plan)
	h.give(plan, w)
	return h.note, h.warn
}

// BaselineWords says what a campaign's baseline is, or why it cannot be
// read (for validate); warn when it is a warning.
func BaselineWords(plan *campaign.Plan) (string, bool) {
	h := baselineFor(plan)
	return strings.TrimPrefix(h.note, "baseline: "), h.warn
}
