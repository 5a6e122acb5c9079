package report

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/greenlight-run/greenlight/results"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/search"
)

// A search phase's record: the limit found with its bracket, the SLO
// term that binds there, whether the margin falls off a cliff past it,
// each probe (value, runs, verdict, the SLO metrics' means), and a chart
// of each SLO metric against the axis with its limit drawn. All of it
// replayed from the units' rows (results.SearchProbes), as the runner
// decided.

// cliffRatio: past the limit, the binding term's margin falls this many
// times faster than the load grows (a share of its limit per share of
// load): a cliff, not a slope.
const cliffRatio = 3.0

// searchBlock is the search phase's limit and probes.
func searchBlock(ph *campaign.Phase, rp *results.Phase, charts map[string]string) string {
	ss := ph.Sweep.Search
	rs := rp.Search
	s := rs.Replay()
	r := s.Result()
	slo := ss.SLOWords()
	var b strings.Builder
	b.WriteString("\n### Limit\n\n")
	if rs.Slip != "" {
		fmt.Fprintf(&b, "**No limit: %s.**\n", rs.Slip)
		return b.String()
	}
	switch {
	case len(s.Probes) == 0:
		fmt.Fprintf(&b, "No probe has ended yet: the search of %s over [%d, %d] for %s starts at %d.\n", ss.Axis, ss.Lo, ss.Hi, slo, ss.Values[0])
		return b.String()
	case r.OK && r.Above == 0 && !r.Done:
		fmt.Fprintf(&b, "**%s %d** meets the SLO (%s), the largest so far: no probe has failed yet.", ss.Axis, r.Limit, slo)
	case r.OK && r.Above == 0:
		fmt.Fprintf(&b, "**%s %d**, the top of the range, meets the SLO (%s): the whole range passes; the limit is above it.", ss.Axis, r.Limit, slo)
	case r.OK:
		fmt.Fprintf(&b, "**%s %d** is the largest that meets the SLO (%s); %d %s: the limit lies in [%d, %d), %s apart.",
			ss.Axis, r.Limit, slo, r.Above, aboveWords(s, r.Above), r.Limit, r.Above, share(float64(r.Above-r.Limit)/float64(r.Limit)))
	case r.Above == ss.Values[0]:
		fmt.Fprintf(&b, "**No %s in [%d, %d] meets the SLO** (%s): the lowest, %d, %s.", ss.Axis, ss.Lo, ss.Hi, slo, r.Above, aboveWords(s, r.Above))
	default:
		fmt.Fprintf(&b, "**No %s in [%d, %d] meets the SLO** (%s).", ss.Axis, ss.Lo, ss.Hi, slo)
	}
	if !rs.Done {
		if v, _ := s.Next(); v > 0 {
			switch runner.Status(rp.Status) {
			case runner.Running:
				fmt.Fprintf(&b, " The search goes on: %d is probed now.", v)
			case runner.Stopped:
				fmt.Fprintf(&b, " The search was stopped: %d is probed next when the campaign runs again.", v)
			default:
				fmt.Fprintf(&b, " The search did not end (%s): %d was to be probed next.", rp.Status, v)
			}
		}
	}
	if rs.Found && rs.Binding != "" {
		fmt.Fprintf(&b, " At %d the binding term is %s, %s inside its limit.", rs.Limit, rs.Binding, share(rs.Margin))
	}
	if c := cliff(s, r); c != "" {
		b.WriteString(" " + c)
	}
	runs := rs.Runs
	fmt.Fprintf(&b, "\n\n%d probes (at most %d), %d runs: each probe run %d times, up to %d while its 95%% intervals straddle a limit; a run taken under bad conditions is run again and never decides. A grid to the same resolution (%s) has %d values.\n",
		len(s.Probes), ss.MaxProbes(), runs, ss.MinRepeats, ss.MaxRepeats, share(ss.Resolution), len(ss.Values))
	fmt.Fprintf(&b, "\n| # | %s | runs | verdict | binding term | margin |", cell(ss.Axis))
	for _, t := range ss.SLO {
		fmt.Fprintf(&b, " %s |", cell(t.Metric))
	}
	b.WriteString("\n|---:|---:|---:|---|---|---:|" + strings.Repeat("---:|", len(ss.SLO)) + "\n")
	for i, pr := range rs.Probes {
		fmt.Fprintf(&b, "| %d | %d | %d | %s | %s | %s |", i+1, pr.Value, pr.Runs, verdictWord(pr.Verdict), cell(pr.Binding), share(pr.Margin))
		for _, t := range ss.SLO {
			c := "—"
			for _, st := range pr.Stats {
				if st.Metric == t.Metric {
					c = statCell(results.Stat{N: st.N, Mean: st.Mean, Half: st.Half}, false)
				}
			}
			fmt.Fprintf(&b, " %s |", c)
		}
		b.WriteString("\n")
	}
	for _, t := range ss.SLO {
		if c := charts[t.Metric]; c != "" {
			fmt.Fprintf(&b, "\n![%s by %s](%s)\n", cell(t.Metric), cell(ss.Axis), c)
		}
	}
	return b.String()
}

// probeAt is the probe of value v, nil if none.
func probeAt(s *search.Search, v int) *search.Probe {
	for i := range s.Probes {
		if s.Probes[i].Value == v {
			return &s.Probes[i]
		}
	}
	return nil
}

// aboveWords says why the bracket's top bounds the limit: it failed, or
// its runs could not tell.
func aboveWords(s *search.Search, v int) string {
	if pr := probeAt(s, v); pr != nil && pr.Verdict == search.Indeterminate {
		return fmt.Sprintf("could not be told after %d runs (its 95%% interval straddles %s)", pr.Repeats, pr.Binding)
	}
	if pr := probeAt(s, v); pr != nil {
		return fmt.Sprintf("fails (%s, %s past it)", pr.Binding, share(-pr.Margin))
	}
	return "does not pass"
}

// cliff says, where the bracket's top failed, whether the binding term's
// margin falls off a cliff past the limit.
func cliff(s *search.Search, r search.Result) string {
	a, b := probeAt(s, r.Limit), probeAt(s, r.Above)
	if !r.OK || a == nil || b == nil || b.Verdict != search.Fail || r.Limit <= 0 {
		return ""
	}
	load := float64(r.Above-r.Limit) / float64(r.Limit)
	if fall := a.Margin - b.Margin; load > 0 && fall/load >= cliffRatio {
		return fmt.Sprintf("A cliff: from %s inside its limit at %d to %s past it at %d (%s more load): the server gives way past the limit rather than degrading with it.",
			share(a.Margin), r.Limit, share(-b.Margin), r.Above, share(load))
	}
	return ""
}

func verdictWord(v search.Verdict) string {
	switch v {
	case search.Pass:
		return "✓ pass"
	case search.Fail:
		return "✗ fail"
	}
	return "? can't tell"
}

func share(f float64) string { return fmt.Sprintf("%.1f%%", f*100) }

// searchKey is a search phase's key result: "limit concurrency 98 (108
// fails p99_tpot_ms <= 50)".
func searchKey(ph *campaign.Phase, rp *results.Phase) string {
	ss := ph.Sweep.Search
	rs := rp.Search
	s := rs.Replay()
	r := s.Result()
	r.Done = rs.Done
	switch {
	case rs.Slip != "":
		return "no limit: its SLO names a column no run wrote"
	case len(s.Probes) == 0:
		return ""
	case r.OK && r.Above == 0 && !r.Done:
		return fmt.Sprintf("limit %s ≥ %d so far", ss.Axis, r.Limit)
	case r.OK && r.Above == 0:
		return fmt.Sprintf("limit %s ≥ %d (the whole range passes)", ss.Axis, r.Limit)
	case r.OK:
		w := fmt.Sprintf("limit %s %d", ss.Axis, r.Limit)
		if b := probeAt(s, r.Above); b != nil && b.Verdict == search.Fail {
			w += fmt.Sprintf(" (%d fails %s)", r.Above, b.Binding)
		} else if r.Above > 0 {
			w += fmt.Sprintf(" (%d undecided)", r.Above)
		}
		if !r.Done {
			w += ", so far"
		}
		return w
	}
	return fmt.Sprintf("no %s in [%d, %d] meets the SLO", ss.Axis, ss.Lo, ss.Hi)
}

// searchAcross ranks the settings of a swept service by the limit the
// search found under each, with its bracket, and says which pairs the
// brackets tell apart: a setting whose limit is at or above another's
// failing value is ahead of it, whatever the noise; brackets that
// overlap cannot be told apart at this resolution.
func searchAcross(a across, plan *campaign.Plan, st *runner.State) string {
	type setting struct {
		name     string
		lo, hi   int // the limit lies in [lo, hi); hi 0: above the range's top
		ok, done bool
		binding  string
		probes   int
		axis     string
		first    int // the range's low end
	}
	var got []setting
	for _, id := range a.copies {
		ph, ps := plan.Phase(id), st.Phase(id)
		if ph == nil || ps == nil || ph.Sweep == nil || ph.Sweep.Search == nil {
			continue
		}
		ss := ph.Sweep.Search
		rs := results.PhaseOf(ph, ps, ps.Ended).Search
		if len(rs.Probes) == 0 || rs.Slip != "" {
			continue
		}
		one := setting{name: ph.Point.Key, lo: rs.Limit, hi: rs.Above, ok: rs.Found, done: rs.Done, probes: len(rs.Probes), axis: ss.Axis, first: ss.Lo}
		if !rs.Found {
			one.lo = ss.Lo - 1
		}
		if rs.Found && rs.Binding != "" {
			one.binding = rs.Binding
		}
		got = append(got, one)
	}
	if len(got) == 0 {
		return ""
	}
	slices.SortStableFunc(got, func(x, y setting) int { return cmp.Compare(y.lo, x.lo) })
	var b strings.Builder
	fmt.Fprintf(&b, "## %s across %s's points (`%s`)\n\n", cell(plan.Phase(a.copies[0]).Point.Title), a.svc, a.of)
	fmt.Fprintf(&b, "The search ran under each of %s's %d points (%s): each setting's limit of %s, best first, with the bracket it lies in.\n\n",
		a.svc, len(a.copies), strings.Join(a.axes, " × "), got[0].axis)
	fmt.Fprintf(&b, "| # | %s | limit | lies in | binding term at the limit | probes |\n|---:|---|---:|---|---|---:|\n", cell(strings.Join(a.axes, " · ")))
	bracket := func(x setting) string {
		switch {
		case !x.ok:
			return fmt.Sprintf("below %d", x.first)
		case x.hi == 0 && !x.done:
			return fmt.Sprintf("%d or more, so far", x.lo)
		case x.hi == 0:
			return fmt.Sprintf("%d or more: the whole range passes", x.lo)
		}
		return fmt.Sprintf("[%d, %d)", x.lo, x.hi)
	}
	for i, x := range got {
		limit := "none in range"
		if x.ok {
			limit = fmt.Sprint(x.lo)
		}
		if !x.done {
			limit += " (so far)"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %d |\n", i+1, cell(x.name), limit, bracket(x), cell(x.binding), x.probes)
	}
	// Pairs: x ahead of y for sure when x's limit is at or past the
	// value y failed at (or, y having no limit, x has one).
	var apart, close []string
	for i := range got {
		for j := i + 1; j < len(got); j++ {
			x, y := got[i], got[j]
			switch {
			case x.ok && (!y.ok || y.hi != 0 && x.lo >= y.hi):
				apart = append(apart, x.name+" > "+y.name)
			default:
				close = append(close, x.name+" ~ "+y.name)
			}
		}
	}
	if len(apart) > 0 {
		fmt.Fprintf(&b, "\nTold apart (the first's limit at or past the value the second failed at): %s.\n", strings.Join(apart, "; "))
	}
	if len(close) > 0 {
		fmt.Fprintf(&b, "\nNot told apart at this resolution (their brackets overlap): %s.\n", strings.Join(close, "; "))
	}
	return b.String()
}

// searchLines draws, on a search's chart of an SLO metric, the term's
// limit across and the limit found up the chart, at x(limit): where the
// chart draws that value (its achieved concurrency, said, where it draws
// the load achieved).
func searchLines(pl *plot.Plot, ph *campaign.Phase, rp *results.Phase, metric string, lo, hi float64, x func(v int) (float64, bool)) {
	red := color.RGBA{R: 200, G: 60, B: 60, A: 255}
	var limits []float64
	for _, t := range ph.Sweep.Search.SLO {
		if t.Metric != metric {
			continue
		}
		limits = append(limits, t.Limit)
		if l, err := plotter.NewLine(plotter.XYs{{X: lo, Y: t.Limit}, {X: hi, Y: t.Limit}}); err == nil {
			l.Dashes, l.Color = []vg.Length{vg.Points(4), vg.Points(3)}, red
			pl.Add(l)
			pl.Legend.Add("SLO "+string(t.Op)+" "+FormatNumber(t.Limit), l)
		}
	}
	// The limit read off the axis, not guessed between its neighbours.
	pl.Y.Tick.Marker = withTicks{pl.Y.Tick.Marker, limits}
	if r := rp.Search.Replay().Result(); r.OK {
		ymin, ymax := pl.Y.Min, pl.Y.Max
		for _, t := range ph.Sweep.Search.SLO {
			if t.Metric == metric {
				ymin, ymax = min(ymin, t.Limit), max(ymax, t.Limit)
			}
		}
		at, achieved := x(r.Limit)
		if l, err := plotter.NewLine(plotter.XYs{{X: at, Y: ymin}, {X: at, Y: ymax}}); err == nil {
			l.Dashes, l.Color = []vg.Length{vg.Points(1), vg.Points(2)}, color.RGBA{G: 130, B: 60, A: 255}
			pl.Add(l)
			words := fmt.Sprintf("limit found: %s %d", ph.Sweep.Search.Axis, r.Limit)
			if achieved {
				words += fmt.Sprintf(" (%s achieved)", FormatNumber(at))
			}
			pl.Legend.Add(words, l)
		}
	}
}

// withTicks is a tick marker with labelled ticks added at values (an
// SLO's limit); a labelled tick of its own too close to one (within a
// twentieth of the axis) loses its label.
type withTicks struct {
	plot.Ticker
	at []float64
}

func (w withTicks) Ticks(min, max float64) []plot.Tick {
	ts := w.Ticker.Ticks(min, max)
	for _, v := range w.at {
		if v < min || v > max {
			continue
		}
		for i := range ts {
			if ts[i].Label != "" && math.Abs(ts[i].Value-v) < (max-min)/20 {
				ts[i].Label = ""
			}
		}
		ts = append(ts, plot.Tick{Value: v, Label: FormatNumber(v)})
	}
	return ts
}
