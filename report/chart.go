package report

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/greenlight-run/greenlight/internal/files"
	"github.com/greenlight-run/greenlight/results"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/search"
)

// A sweep's curves as SVG beside the results file, one chart per metric
// (those plot: y: names, when it names them): x the first axis or plot:
// x: (log scale when its values are positive and span two decades or
// more, or as log_x: says), one series per point of the other axes
// (plot: series: named first in each series' name), the mean of
// each point with its 95% interval as an error bar, a point whose
// repeats disagree beyond the noise limit circled in red, and a limit
// the phase expects drawn as a dashed line. Plain SVG with a white
// background, written by gonum's plot.

// chartName is the file of a phase's chart of metric, beside the results
// file.
func chartName(report, phase, metric string) string {
	base := strings.TrimSuffix(filepath.Base(report), filepath.Ext(report))
	return base + "." + phase + "." + campaign.SafeName(metric) + ".svg"
}

// chartSeries is one line of a chart: a point of the other axes.
type chartSeries struct {
	name  string
	x     []float64
	stats []results.Stat
	noisy []bool    // the model's verdict of each point
	asked []float64 // where the chart draws the load achieved: each point's asked-for x
}

// sweepChart draws metric of a sweep phase; nil when there is nothing to
// draw yet. vals are its rows' values by column and point
// (results.PointValues): where every point's rows asked for its x as
// their max_concurrency and say the concurrency they achieved, a point is
// drawn where its load was, at the achieved concurrency (a server capped
// at 24 draws its 32 at 24).
func sweepChart(ph *campaign.Phase, rp *results.Phase, metric string, vals map[string]map[int][]float64) (svg []byte, err error) {
	// A chart never takes the runner down with it: a plotting library's
	// panic on odd data is this chart's error, said once.
	defer func() {
		if r := recover(); r != nil {
			svg, err = nil, fmt.Errorf("drawing failed: %v", r)
		}
	}()
	sw := ph.Sweep
	if len(sw.Axes) == 0 {
		return nil, nil
	}
	lay := ph.Layout()
	xAxis, xs, numeric, logX := lay.Axis, lay.X, lay.Numeric, lay.LogX
	keys := map[int]string{}
	for _, u := range sw.Units {
		keys[u.Point] = sw.Key(u)
	}
	achieved := achievedX(lay, vals)
	var series []chartSeries
	for _, l := range lay.Lines {
		s := chartSeries{name: firstOr(l.Name, metric)}
		for _, pt := range l.Points {
			mp := rp.Point(keys[pt.Point])
			if mp == nil {
				continue
			}
			if st, ok := mp.Stat(metric); ok && st.N > 0 {
				x := pt.X
				if a, ok := achieved[pt.Point]; ok {
					x = a
					s.asked = append(s.asked, pt.X)
				}
				s.x = append(s.x, x)
				s.stats = append(s.stats, st)
				s.noisy = append(s.noisy, st.Noisy)
			}
		}
		series = append(series, s)
	}
	pl := plot.New()
	pl.Title.Text = fmt.Sprintf("%s: %s by %s", ph.Label(), metric, xAxis.Name)
	pl.X.Label.Text, pl.Y.Label.Text = xAxis.Name, metric
	if achieved != nil {
		pl.X.Label.Text = axisWords(xAxis.Name, runner.ColAchieved)
	}
	pl.BackgroundColor = color.White
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	for _, a := range achieved {
		lo, hi = math.Min(lo, a), math.Max(hi, a)
	}
	// The x axis spans the whole grid from the first point on, so that
	// the chart does not jump as points land (and a log axis never sees
	// the padding gonum puts around a single point).
	pl.X.Min, pl.X.Max = dodge(lo, 0, len(series), xs, logX), dodge(hi, len(series)-1, len(series), xs, logX)
	if lo == hi {
		pl.X.Min, pl.X.Max = lo-1, hi+1
	}
	pl.Y.Tick.Marker = plainTicks{}
	switch {
	case numeric && len(xs) <= maxValueTicks && spreadApart(xs, logX):
		// Ticks on the swept values themselves (1, 4, 8, 16), not 3/9/15.
		if logX {
			pl.X.Scale = plot.LogScale{}
		}
		var ticks []plot.Tick
		for _, x := range xs {
			ticks = append(ticks, plot.Tick{Value: x, Label: FormatNumber(x)})
		}
		pl.X.Tick.Marker = plot.ConstantTicks(ticks)
	case logX:
		pl.X.Scale = plot.LogScale{}
		pl.X.Tick.Marker = plot.LogTicks{Prec: -1}
	default:
		pl.X.Tick.Marker = plainTicks{}
	}
	if !numeric {
		var ticks []plot.Tick
		for i, v := range xAxis.Values {
			ticks = append(ticks, plot.Tick{Value: float64(i + 1), Label: v.Name})
		}
		pl.X.Tick.Marker = plot.ConstantTicks(ticks)
	}
	named, others := chartNamed(ph, metric, series)
	type entry struct {
		name  string
		thumb []plot.Thumbnailer
	}
	legend := make([]entry, len(series)) // by rank
	var grey *plotter.Line
	var top []plot.Plotter // the named lines, drawn over the grey ones
	drawn := 0
	var noisy plotter.XYs
	for i, s := range series {
		if len(s.x) == 0 {
			continue
		}
		drawn++
		pts := make(plotter.XYs, len(s.x))
		errs := make(plotter.YErrors, len(s.x))
		for j := range s.x {
			pts[j] = plotter.XY{X: dodge(s.x[j], i, len(series), xs, logX), Y: s.stats[j].Mean}
			errs[j] = struct{ Low, High float64 }{s.stats[j].Half, s.stats[j].Half}
		}
		rank, ok := named[i]
		if !ok { // a crowded chart's unnamed line: thin and grey
			if line, err := plotter.NewLine(pts); err == nil {
				line.Color, line.Width = color.Gray{Y: 200}, vg.Points(0.6)
				pl.Add(line)
				grey = line
			}
			continue
		}
		for j := range s.x {
			if s.noisy[j] {
				noisy = append(noisy, pts[j])
			}
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		if len(s.asked) == len(pts) {
			// Drawn where its load was: each point says what it asked for,
			// so that one the server held back reads as such.
			labels := make([]string, len(pts))
			for j, a := range s.asked {
				labels[j] = FormatNumber(a) + " asked"
			}
			if l, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: labels}); err == nil {
				for k := range l.TextStyle {
					l.TextStyle[k].XAlign = draw.XLeft
				}
				l.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(2)}
				top = append(top, l)
			}
		}
		c := plotColor(rank)
		line.Color, points.Color = c, c
		points.Shape = draw.CircleGlyph{}
		top = append(top, line, points)
		legend[rank] = entry{s.name, []plot.Thumbnailer{line, points}}
		if bars, err := plotter.NewYErrorBars(struct {
			plotter.XYer
			plotter.YErrorer
		}{pts, errs}); err == nil {
			bars.Color = c
			top = append(top, bars)
		}
	}
	pl.Add(top...)
	for _, e := range legend {
		if e.thumb != nil {
			pl.Legend.Add(e.name, e.thumb...)
		}
	}
	if grey != nil {
		pl.Legend.Add(others, grey)
	}
	if drawn == 0 {
		return nil, nil
	}
	if len(noisy) > 0 {
		marks, err := plotter.NewScatter(noisy)
		if err == nil {
			marks.Shape = draw.RingGlyph{}
			marks.Radius = vg.Points(6)
			marks.Color = color.RGBA{R: 220, A: 255}
			pl.Add(marks)
			pl.Legend.Add("noisy: repeats disagree", marks)
		}
	}
	for _, e := range append(append([]campaign.Expect{}, ph.Expect...), stepExpects(ph)...) {
		if e.Column != metric || (e.Op != "<=" && e.Op != "<" && e.Op != ">=" && e.Op != ">") {
			continue
		}
		limit := plotter.XYs{{X: lo, Y: e.Value}, {X: hi, Y: e.Value}}
		l, err := plotter.NewLine(limit)
		if err != nil {
			continue
		}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		l.Color = color.RGBA{R: 200, G: 60, B: 60, A: 255}
		pl.Add(l)
		pl.Legend.Add(fmt.Sprintf("expect %s %s", e.Op, FormatNumber(e.Value)), l)
	}
	if ss := sw.Search; ss != nil {
		searchLines(pl, ph, rp, metric, lo, hi, func(v int) (float64, bool) {
			for _, l := range lay.Lines {
				for _, pt := range l.Points {
					if a, ok := achieved[pt.Point]; ok && pt.X == float64(v) {
						return a, true
					}
				}
			}
			return float64(v), false
		})
	}
	return svgOf(pl)
}

// achievedX is each point's achieved concurrency (the mean of its rows'
// runner.ColAchieved), for a chart to draw it at: nil unless every point
// with rows asked for its x as max_concurrency (so the axis is the
// concurrency asked for) and says what it achieved.
func achievedX(lay campaign.CurveLayout, vals map[string]map[int][]float64) map[int]float64 {
	if len(vals[runner.ColAchieved]) == 0 {
		return nil
	}
	out := map[int]float64{}
	for _, l := range lay.Lines {
		for _, pt := range l.Points {
			asked, got := vals["max_concurrency"][pt.Point], vals[runner.ColAchieved][pt.Point]
			if len(asked) == 0 && len(got) == 0 {
				continue // no row yet
			}
			if len(got) == 0 || len(asked) == 0 || slices.ContainsFunc(asked, func(a float64) bool { return a != pt.X }) {
				return nil
			}
			out[pt.Point] = stat.Mean(got, nil)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// maxValueTicks is how many swept values get a tick each; past it the
// axis has round numbers.
const maxValueTicks = 12

// spreadApart says the swept values lie far enough apart on their scale
// for a label each: the narrowest gap at least a twentieth of the range
// (1, 16, 256, 2048 on a linear axis crowd at its left: round numbers
// serve it better).
func spreadApart(xs []float64, logX bool) bool {
	sorted := slices.Sorted(slices.Values(xs))
	pos := func(x float64) float64 {
		if logX {
			return math.Log(x)
		}
		return x
	}
	span := pos(sorted[len(sorted)-1]) - pos(sorted[0])
	for k := 1; k < len(sorted); k++ {
		if pos(sorted[k])-pos(sorted[k-1]) < span/20 {
			return false
		}
	}
	return true
}

// dodge moves line i of n a little along x, so that the error bars of
// lines at the same swept value stand apart: a fraction of the narrowest
// gap between values (on a log axis, of its ratio).
func dodge(x float64, i, n int, xs []float64, logX bool) float64 {
	if n < 2 || len(xs) < 2 {
		return x
	}
	gap := math.Inf(1)
	sorted := slices.Sorted(slices.Values(xs))
	for k := 1; k < len(sorted); k++ {
		d := sorted[k] - sorted[k-1]
		if logX && sorted[k-1] > 0 {
			d = math.Log(sorted[k] / sorted[k-1])
		}
		if d > 0 {
			gap = math.Min(gap, d)
		}
	}
	if math.IsInf(gap, 1) {
		return x
	}
	span := sorted[len(sorted)-1] - sorted[0]
	if logX && sorted[0] > 0 {
		span = math.Log(sorted[len(sorted)-1] / sorted[0])
	}
	// A few points a line at most: bars apart, lines still on their values.
	step := math.Min(span*0.006, gap*0.3/float64(n))
	off := (float64(i) - float64(n-1)/2) * step
	if logX {
		return x * math.Exp(off)
	}
	return x + off
}

// maxNamed is how many lines a chart names; past it the chart names the
// best of them and draws the rest in grey (the table has every one).
const maxNamed = 8

// chartNamed chooses the lines a crowded chart names: the maxNamed
// highest at their last point (the lowest where the metric is better
// lower), each with its rank; and the legend's words for the rest. All
// of them, and "", when there are few.
func chartNamed(ph *campaign.Phase, metric string, series []chartSeries) (map[int]int, string) {
	var with []int
	for i, s := range series {
		if len(s.x) > 0 {
			with = append(with, i)
		}
	}
	named := map[int]int{}
	if len(with) <= maxNamed {
		for _, i := range with {
			named[i] = i
		}
		return named, ""
	}
	dir, _ := campaign.Way(campaign.Better(ph), metric, true)
	last := func(i int) float64 { st := series[i].stats; return st[len(st)-1].Mean }
	slices.SortStableFunc(with, func(a, b int) int {
		if dir == campaign.Lower {
			return cmp.Compare(last(a), last(b))
		}
		return cmp.Compare(last(b), last(a))
	})
	for r, i := range with[:maxNamed] {
		named[i] = r
	}
	word := "highest"
	if dir == campaign.Lower {
		word = "lowest"
	}
	return named, fmt.Sprintf("%d more in grey (named: the %d %s at their last point)", len(with)-maxNamed, maxNamed, word)
}

func stepExpects(ph *campaign.Phase) []campaign.Expect {
	var out []campaign.Expect
	seen := map[string]bool{}
	for _, s := range ph.Steps {
		for _, e := range s.Expect {
			if k := e.Column + e.Op + FormatNumber(e.Value); !seen[k] {
				seen[k] = true
				out = append(out, e)
			}
		}
	}
	return out
}

// plotColor is series i's color: a palette that reads on white.
func plotColor(i int) color.Color {
	palette := []color.RGBA{{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {148, 103, 189, 255},
		{140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255}, {188, 189, 34, 255}, {23, 190, 207, 255}}
	return palette[i%len(palette)]
}

// sweepCharts writes a sweep phase's charts beside the results file and
// returns the names written, by metric.
func sweepCharts(report string, ph *campaign.Phase, p runner.PhaseState) (map[string]string, error) {
	if ph.Sweep == nil {
		return nil, nil
	}
	rp := results.PhaseOf(ph, &p, p.Ended)
	_, vals := results.PointValues(ph, p.Steps)
	metrics := rp.MetricNames()
	out := map[string]string{}
	var errs []error
	for _, m := range metrics {
		if c := ph.Curves; c != nil && len(c.Y) > 0 && !slices.Contains(c.Y, m) {
			continue // plot: y: chose the metrics charted
		}
		if ss := ph.Sweep.Search; ss != nil && !slices.ContainsFunc(ss.SLO, func(t search.Term) bool { return t.Metric == m }) {
			continue // a search charts its SLO's metrics
		}
		svg, err := sweepChart(ph, &rp, m, vals)
		if err != nil {
			errs = append(errs, fmt.Errorf("chart of %s: %w", m, err))
			continue
		}
		if svg == nil {
			continue
		}
		name := chartName(report, ph.ID, m)
		if err := files.WriteAtomic(filepath.Join(filepath.Dir(report), name), svg); err != nil {
			errs = append(errs, err)
			continue
		}
		out[m] = name
	}
	if ph.Plot != nil {
		svg, err := paretoChart(ph, vals)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("chart of %s against %s: %w", ph.Plot.Y, ph.Plot.X, err))
		case svg != nil:
			name := chartName(report, ph.ID, "pareto")
			if err := files.WriteAtomic(filepath.Join(filepath.Dir(report), name), svg); err != nil {
				errs = append(errs, err)
			} else {
				out[paretoKey] = name
			}
		}
	}
	if len(errs) > 0 {
		return out, errs[0]
	}
	return out, nil
}

// charted is what a sweep phase's charts were last drawn from.
type charted struct {
	rows, attempt int
	done          int               // its steps done: a run counts once its unit is done, not as its row lands
	names         map[string]string // metric -> SVG beside the results file
	sig           string            // what a chart drawn from more than its phase's rows was drawn from (budget.go)
}

// updateCharts draws a sweep phase's charts again when its rows changed
// (this runs with the file's coalesced writes, never on the loop).
func (w *Writer) updateCharts(_ *campaign.Phase, p *runner.PhaseState, _ *runner.State) error {
	ph := w.plan.Phase(p.ID)
	if ph != nil && ph.Sweep == nil && readsNCCLTests(ph) {
		return w.updateBusChart(ph, p)
	}
	if ph == nil || ph.Sweep == nil {
		return nil
	}
	rows, done := 0, 0
	for _, s := range p.Steps {
		rows += len(s.Results)
		// A run counts once its unit is done (results.PointUnits), a
		// search's limit moves as a probe ends, a roofline's clock is fixed
		// as a step ends: each is drawn again then, not as a row lands.
		if s.Status == runner.Done {
			done++
		}
	}
	if c, ok := w.charts[p.ID]; rows == 0 || ok && c.rows == rows && c.attempt == p.Attempt && c.done == done {
		return nil
	}
	names, err := sweepCharts(w.path, ph, *p)
	if ph.Roofline != nil {
		rl, _ := w.rooflineOf(ph, *p, nil)
		svg, rerr := rooflineChart(ph, rl)
		switch {
		case rerr != nil:
			err = cmp.Or(err, fmt.Errorf("the roofline chart: %w", rerr))
		case svg != nil:
			name := chartName(w.path, ph.ID, "roofline")
			if werr := files.WriteAtomic(filepath.Join(filepath.Dir(w.path), name), svg); werr != nil {
				err = cmp.Or(err, werr)
			} else {
				if names == nil {
					names = map[string]string{}
				}
				names[rooflineKey] = name
			}
		}
	}
	w.charts[p.ID] = charted{rows: rows, attempt: p.Attempt, done: done, names: names}
	return err
}
