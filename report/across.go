package report

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/greenlight-run/greenlight/compare"
	"github.com/greenlight-run/greenlight/results"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// A phase that ran under each point of a swept service (its copies,
// decode.64.2048, decode.64.8192, ...) is answered once more as a whole,
// in a block after its last copy: "which server setting is best, and at
// what load?" Its tables are a sweep's, over the service's axes and then
// its own, each cell a point's mean with its interval; its charts run
// along its own axis, a line per service point. Each copy's block and CSV
// stay as they are, every row carrying the service's values.

// across is one phase as written, gathered from its copies.
type across struct {
	of     string   // the phase as written: decode
	svc    string   // the swept service: serve
	copies []string // its copies' ids, in run order
	axes   []string // the service's axes
}

// acrossGroups are the plan's phases copied per service point.
func acrossGroups(plan *campaign.Plan) []across {
	var out []across
	at := map[string]int{}
	for _, ph := range plan.Phases {
		pt := ph.Point
		if pt == nil || pt.Phase == pt.Service {
			continue
		}
		i, ok := at[pt.Phase]
		if !ok {
			i = len(out)
			at[pt.Phase] = i
			out = append(out, across{of: pt.Phase, svc: pt.Service})
			for _, v := range pt.Values {
				out[i].axes = append(out[i].axes, v.Axis)
			}
		}
		out[i].copies = append(out[i].copies, ph.ID)
	}
	return out
}

// gather is the phase as written made of its copies: a sweep whose axes
// are the service's then its own, each copy's steps units of it, and the
// copies' states as one, and how many rows they hold (none yet: nothing
// to say).
func (a across) gather(plan *campaign.Plan, st *runner.State) (*campaign.Phase, runner.PhaseState, int) {
	first := plan.Phase(a.copies[0])
	own := first.Sweep
	// The service's points are one axis here, "max_num_seqs · max_batched"
	// valued "64 · 2048": a row of each table, a line of each chart.
	svc := campaign.Axis{Name: strings.Join(a.axes, campaign.Joined)}
	for _, id := range a.copies {
		var vals []string
		for _, v := range plan.Phase(id).Point.Values {
			vals = append(vals, v.Value)
		}
		svc.Values = append(svc.Values, campaign.AxisValue{Name: strings.Join(vals, campaign.Joined)})
	}
	sw := &campaign.Sweep{Axes: []campaign.Axis{svc}, Repeat: 1, Order: "interleaved", Noise: campaign.DefaultNoise}
	ownUnits, ownPoints := []campaign.Unit{{Point: 0, Repeat: 1}}, 1
	if own != nil {
		sw.Axes = append(sw.Axes, own.Axes...)
		sw.Repeat, sw.Order, sw.Noise, sw.NoiseSet, ownUnits, ownPoints = own.Repeat, own.Order, own.Noise, own.NoiseSet, own.Units, own.Points
	}
	title := first.Point.Title
	syn := &campaign.Phase{ID: a.of, Title: title, Expect: first.Expect, Better: first.Better, BetterOf: first.BetterOf,
		Metrics: first.Metrics, MetricsByDefault: first.MetricsByDefault, Sweep: sw, Point: first.Point}
	if own != nil && len(own.Axes) > 0 {
		xi, _ := first.CurveAxes()
		syn.Curves = &campaign.Curves{X: own.Axes[xi].Name, Series: svc.Name}
		if c := first.Curves; c != nil {
			syn.Curves.Y, syn.Curves.LogX = c.Y, c.LogX
		}
	}
	ps := runner.PhaseState{ID: a.of, Title: title}
	rows := 0
	for k, id := range a.copies {
		ph, cs := plan.Phase(id), st.Phase(id)
		svcVals := []int{k}
		unit := func(u campaign.Unit) *campaign.Unit {
			return &campaign.Unit{Values: append(slices.Clone(svcVals), u.Values...), Point: k*ownPoints + u.Point, Repeat: u.Repeat}
		}
		for _, u := range ownUnits {
			sw.Units = append(sw.Units, *unit(u))
		}
		for i, step := range ph.AllSteps() {
			s := *step
			if step.Unit != nil {
				s.Unit = unit(*step.Unit)
			} else {
				s.Unit = unit(ownUnits[0])
			}
			syn.Steps = append(syn.Steps, &s)
			if cs != nil && i < len(cs.Steps) {
				ps.Steps = append(ps.Steps, cs.Steps[i])
				rows += len(cs.Steps[i].Results)
			} else {
				ps.Steps = append(ps.Steps, runner.StepState{})
			}
		}
	}
	sw.Points = len(a.copies) * ownPoints
	return syn, ps, rows
}

// acrossBlock is the phase's block across the service's points.
func acrossBlock(a across, syn *campaign.Phase, ps runner.PhaseState, charts map[string]string, tolerance float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s across %s's points (`%s`)\n\n", cell(syn.Title), a.svc, a.of)
	copies := a.copies
	if len(copies) > 6 {
		copies = []string{copies[0], copies[1], "…", copies[len(copies)-1]}
	}
	fmt.Fprintf(&b, "It ran once under each of %s's %d points (%s): %s. Each copy's block above has its own tables; its CSV has every row, the server's settings as columns.\n",
		a.svc, len(a.copies), strings.Join(a.axes, " × "), strings.Join(copies, ", "))
	b.WriteString(sweepTables(syn, ps, charts))
	b.WriteString(bestSettings(syn, ps, tolerance))
	return b.String()
}

// bestSettings answers "which server setting, and is it apart from the
// next?": per metric and per point of the phase's own, the best setting
// and the runner-up, each with its interval, and whether the intervals
// leave each other. Best is highest, or lowest where the metric is
// better lower (expect:, better:, or a time by its name: record.Way); a
// metric with no direction is said as highest.
func bestSettings(syn *campaign.Phase, ps runner.PhaseState, tolerance float64) string {
	metrics, vals := results.PointValues(syn, ps.Steps)
	svc := syn.Sweep.Axes[0]
	own := syn.Sweep.Points / len(svc.Values)
	names := make([]string, own) // the phase's own points, as the tables' columns say them
	for _, u := range syn.Sweep.Units {
		var parts []string
		for k := 1; k < len(syn.Sweep.Axes); k++ {
			parts = append(parts, syn.Sweep.Axes[k].Say(syn.Sweep.Axes[k].Values[u.Values[k]]))
		}
		names[u.Point%own] = strings.Join(parts, ",")
	}
	dirs := campaign.Better(syn)
	var b strings.Builder
	for _, m := range metrics {
		dir, basis := campaign.Way(dirs, m, true)
		lower := dir == campaign.Lower
		word := "highest"
		if lower {
			word = "lowest"
		}
		if basis != "" {
			kind := "a rate"
			if lower {
				kind = "a time"
			}
			word += ", " + kind + " " + basis
		}
		for c := 0; c < own; c++ {
			type setting struct {
				name string
				st   results.Stat
			}
			var got []setting
			for r, v := range svc.Values {
				if xs := vals[m][r*own+c]; len(xs) > 0 {
					got = append(got, setting{v.Name, results.StatOf("", xs)})
				}
			}
			if len(got) < 2 {
				continue
			}
			slices.SortStableFunc(got, func(x, y setting) int {
				if lower {
					return cmp.Compare(x.st.Mean, y.st.Mean)
				}
				return cmp.Compare(y.st.Mean, x.st.Mean)
			})
			if b.Len() == 0 {
				fmt.Fprintf(&b, "\n#### The best setting at each point\n\nEach metric's best (its `expect:` or `better:` direction, else the lowest for a time by its name, else the highest) and the next, and whether the best is better beyond noise, by the comparison's one verdict (Welch's t-test at 5%% where both ran twice or more, one run against the other's repeats by their prediction interval, else the campaign's tolerance of %s%%).\n\n| metric | at | best (%s) | next | apart? |\n|---|---|---|---|---|\n",
					FormatNumber(100*tolerance), cell(svc.Name))
			}
			best, next := got[0], got[1]
			l := compare.Judge(next.st, best.st, dir, compare.Options{Tolerance: tolerance})
			apart := "no: within noise (" + l.Basis + ")"
			switch l.Verdict {
			case compare.Better:
				apart = fmt.Sprintf("yes: %s apart (%s)", FormatNumber(math.Abs(best.st.Mean-next.st.Mean)), l.Basis)
			case compare.Same:
				apart = "no: within the tolerance (" + l.Basis + ")"
			}
			fmt.Fprintf(&b, "| %s (%s) | %s | %s: %s | %s: %s | %s |\n", cell(m), word, cell(firstOr(names[c], "all")),
				cell(best.name), statCell(best.st, best.st.N >= 2 && best.st.CV > syn.Sweep.Noise), cell(next.name), statCell(next.st, next.st.N >= 2 && next.st.CV > syn.Sweep.Noise), apart)
		}
	}
	return b.String()
}

// gathered is a phase gathered across its service's points, as the last
// write saw it.
type gathered struct {
	across
	ph   *campaign.Phase
	ps   runner.PhaseState
	rows int
}

// updateAcross gathers each phase run per service point from st, once a
// write, and draws its charts again when its rows changed (with the
// file's coalesced writes, as updateCharts).
func (w *Writer) updateAcross(st *runner.State) error {
	var errs []error
	w.gathered = w.gathered[:0]
	for _, a := range w.across {
		syn, ps, rows := a.gather(w.plan, st)
		w.gathered = append(w.gathered, gathered{a, syn, ps, rows})
		key := "across:" + a.of
		done := 0
		for _, s := range ps.Steps {
			if s.Status == runner.Done {
				done++
			}
		}
		if c, seen := w.charts[key]; rows == 0 || seen && c.rows == rows && c.done == done {
			continue // drawn again when its rows change, or a run of it ends
		}
		names, err := sweepCharts(w.path, syn, ps)
		w.charts[key] = charted{rows: rows, done: done, names: names}
		if err != nil {
			errs = append(errs, fmt.Errorf("charts of %s across %s: %w", a.of, a.svc, err))
		}
	}
	return errors.Join(errs...)
}

// acrossBlocks puts each gathered phase's block, once it has a row, after
// its last copy's.
func (w *Writer) acrossBlocks(bodies map[string]string, order []string) []string {
	for _, g := range w.gathered {
		if g.rows == 0 {
			continue
		}
		id := "across:" + g.of
		if first := w.plan.Phase(g.copies[0]); first.Sweep != nil && first.Sweep.Search != nil {
			bodies[id] = searchAcross(g.across, w.plan, w.st)
		} else {
			bodies[id] = acrossBlock(g.across, g.ph, g.ps, w.charts[id].names, w.plan.Compare.Tolerance)
		}
		last := slices.Index(order, "phase:"+g.copies[len(g.copies)-1])
		order = slices.Insert(order, last+1, id)
	}
	return order
}
