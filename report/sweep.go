package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/greenlight-run/greenlight/results"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// A sweep phase's record: one table per metric, the first axis down, the
// other axes' points across, each cell the mean over the point's repeats
// with its 95% confidence interval (Student's t), and ⚠ where the
// repeats disagree beyond the phase's noise limit. Every repeat is in the
// phase's CSV.

// sweepTables is the phase's results by point.
func sweepTables(ph *campaign.Phase, p runner.PhaseState, charts map[string]string) string {
	rp := results.PhaseOf(ph, &p, p.Ended)
	return sweepTablesOf(ph, &rp, charts)
}

// sweepTablesOf is sweepTables of the phase's results model.
func sweepTablesOf(ph *campaign.Phase, rp *results.Phase, charts map[string]string) string {
	sw := ph.Sweep
	metrics := rp.MetricNames()
	if len(metrics) == 0 {
		return ""
	}
	// The point of each (first-axis value, other axes' combination).
	var colKeys []string
	cols := map[string]int{}
	at := map[[2]int]*results.Point{} // (row, col) -> point
	for _, u := range sw.Units {
		if u.Repeat != 1 {
			continue
		}
		rest := make([]string, 0, len(sw.Axes))
		for k := 1; k < len(sw.Axes); k++ {
			rest = append(rest, sw.Axes[k].Say(sw.Axes[k].Values[u.Values[k]]))
		}
		key := strings.Join(rest, ",")
		c, ok := cols[key]
		if !ok {
			c = len(colKeys)
			cols[key] = c
			colKeys = append(colKeys, key)
		}
		row := 0
		if len(sw.Axes) > 0 {
			row = u.Values[0]
		}
		at[[2]int{row, c}] = rp.Point(sw.Key(u))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n### Results by point\n\n%s; each cell the mean over the point's repeats ± the half-width of its 95%% confidence interval (Student's t; one run shows its value), ⚠ where the repeats' coefficient of variation is over %s, ⚑ where runs were taken under bad conditions (the Warnings and the CSV's stamp say why; a search leaves them out). Every repeat is a row of the phase's CSV.\n",
		gridWords(sw), sw.NoiseWords())
	first := "point"
	if len(sw.Axes) > 0 {
		first = sw.Axes[0].Name
	}
	nrows := 1
	if len(sw.Axes) > 0 {
		nrows = len(sw.Axes[0].Values)
	}
	for _, m := range metrics {
		fmt.Fprintf(&b, "\n#### %s\n\n| %s |", cell(m), cell(first))
		for _, k := range colKeys {
			fmt.Fprintf(&b, " %s |", cell(firstOr(k, m)))
		}
		b.WriteString("\n|---|" + strings.Repeat("---:|", len(colKeys)) + "\n")
		for r := 0; r < nrows; r++ {
			name := "all"
			if len(sw.Axes) > 0 {
				name = sw.Axes[0].Values[r].Name
			}
			fmt.Fprintf(&b, "| %s |", cell(name))
			for c := range colKeys {
				pt := at[[2]int{r, c}]
				if pt == nil {
					b.WriteString(" |")
					continue
				}
				fmt.Fprintf(&b, " %s |", pointCell(pt, m))
			}
			b.WriteString("\n")
		}
		if c := charts[m]; c != "" {
			xi, _ := ph.CurveAxes()
			fmt.Fprintf(&b, "\n![%s by %s](%s)\n", cell(m), cell(sw.Axes[xi].Name), c)
		}
	}
	var precise, skipped []string
	for _, pt := range rp.Points {
		switch pt.State {
		case results.Precise:
			precise = append(precise, fmt.Sprintf("%s after %d runs", pt.Key, pt.Runs))
		case results.Skipped:
			skipped = append(skipped, skipWords(&pt))
		}
	}
	if len(precise) > 0 {
		// repeat: {until:}: each point stopped as precise, and after how
		// many runs (the units it did not need are skipped).
		fmt.Fprintf(&b, "\nStopped as precise (%s): %s; the runs they did not need were not run.\n", sw.Repeats.Rule(), strings.Join(precise, "; "))
	}
	if len(skipped) > 0 {
		fmt.Fprintf(&b, "\nSkipped by you (✂ in the tables): %s.\n", strings.Join(skipped, "; "))
	}
	if c := charts[paretoKey]; c != "" && ph.Plot != nil {
		fmt.Fprintf(&b, "\n#### %s against %s\n\nEach point's mean; the line joins the points no other beats on both (its Pareto front).\n\n![%s against %s](%s)\n", cell(ph.Plot.Y), cell(ph.Plot.X), cell(ph.Plot.Y), cell(ph.Plot.X), c)
	}
	return b.String()
}

// pointCell is a point's cell for metric m: its stat, marked by its
// state where that is not plain done (skipped by you after some runs,
// stopped by a stop, failed), or the state itself where it has no runs.
func pointCell(pt *results.Point, m string) string {
	s, ok := pt.Stat(m)
	if !ok {
		switch pt.State {
		case results.Cut:
			return "cut (until: failed)"
		case results.Skipped:
			return "skipped by you"
		case results.NotProbed:
			return "not probed"
		case results.Failed, results.Stopped, results.Running:
			return string(pt.State)
		}
		return "—"
	}
	out := statCell(s, s.Noisy)
	if pt.Stamped > 0 {
		out += fmt.Sprintf(" ⚑ %d stamped", pt.Stamped)
	}
	switch pt.State {
	case results.Skipped:
		out += fmt.Sprintf(" ✂ skipped after %d of %d runs", pt.Runs, pt.Planned)
	case results.Failed, results.Stopped, results.Running, results.Pending, results.Cut:
		out += fmt.Sprintf(" (%s, %d of %d runs)", pt.State, pt.Runs, pt.Planned)
	}
	return out
}

// skipWords says a point skipped by you: after how many runs, and when.
func skipWords(pt *results.Point) string {
	w := fmt.Sprintf("%s after %d of %d runs", pt.Key, pt.Runs, pt.Planned)
	if sk := pt.Skip; sk != nil && sk.At != nil {
		w += " at " + sk.At.Local().Format("15:04:05")
	}
	return w
}

// statCell is a point's mean ± its interval, with n and the noise mark.
func statCell(s results.Stat, noisy bool) string {
	if s.N < 2 {
		return FormatNumber(s.Mean)
	}
	mean := FormatNumber(s.Mean)
	half := FormatNumber(s.Half)
	if !strings.ContainsAny(mean, "eE") {
		// The interval to the mean's own precision: 0.01277 ± 0.00014.
		dec := 0
		if i := strings.IndexByte(mean, '.'); i >= 0 {
			dec = len(mean) - i - 1
		}
		half = strconv.FormatFloat(s.Half, 'f', dec, 64)
		if s.Half > 0 && strings.Trim(half, "0.") == "" {
			// Narrower than the mean's last digit: "± <0.0001", not "± 0.0000".
			half = "<" + strconv.FormatFloat(math.Pow(10, -float64(dec)), 'f', dec, 64)
		}
	}
	out := fmt.Sprintf("%s ± %s (n=%d)", mean, half, s.N)
	if noisy {
		out += fmt.Sprintf(" ⚠ CV %.1f%%", s.CV*100)
	}
	return out
}

// gridWords says the grid: its axes, their sizes, the repeats and order.
func gridWords(sw *campaign.Sweep) string {
	var axes []string
	for _, a := range sw.Axes {
		names := make([]string, len(a.Values))
		for i, v := range a.Values {
			names[i] = v.Name
		}
		if len(names) > 8 {
			names = append(slices.Clone(names[:3]), "…", names[len(names)-1])
		}
		axes = append(axes, fmt.Sprintf("%s (%s)", a.Name, strings.Join(names, ", ")))
	}
	w := fmt.Sprintf("%d point(s)", sw.Points)
	if len(axes) > 0 {
		w = fmt.Sprintf("%d points over %s", sw.Points, strings.Join(axes, " × "))
	}
	if r := sw.Repeats; r.Precision > 0 {
		w += fmt.Sprintf(", each run until every metric's 95%% interval is within %s of its mean (%d to %d runs), %s", r.Share(), r.Min, r.Max, sw.Order)
	} else {
		w += fmt.Sprintf(", each run %d time(s), %s", sw.Repeat, sw.Order)
	}
	if sw.Until != "" {
		w += ", until: failed along " + sw.Axes[len(sw.Axes)-1].Name
	}
	return cell(w)
}

// noisyLines are the header's word on noisy points: one line a sweep
// phase whose complete points' runs disagree beyond its noise limit,
// naming them (the first few; its block marks each). A point still
// running is not judged: a third run may settle the first two. A search
// is judged by its intervals, not by this.
func noisyLines(plan *campaign.Plan, st *runner.State, model *results.Model) []string {
	var out []string
	for _, p := range st.Phases {
		ph := plan.Phase(p.ID)
		if ph == nil || ph.Sweep == nil {
			continue
		}
		sw := ph.Sweep
		rp := model.Phase(p.ID)
		if rp == nil || rp.Noise == nil || len(rp.Noise.Noisy) == 0 {
			continue
		}
		noisy, points := rp.Noise.Noisy, len(rp.Points)
		list := strings.Join(noisy[:min(len(noisy), 5)], "; ")
		if len(noisy) > 5 {
			list += fmt.Sprintf("; and %d more", len(noisy)-5)
		}
		out = append(out, fmt.Sprintf("%s: %d of %d points noisy (their runs disagree beyond %s): %s; its block marks each",
			ph.Label(), len(noisy), points, sw.NoiseWords(), list))
	}
	return out
}
