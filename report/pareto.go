package report

// A sweep's trade-off (plot: {x, y, label}): each point's mean of one
// metric against another's, labelled by an axis, and the Pareto front:
// the points no other point beats on both.

import (
	"fmt"
	"image/color"
	"sort"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// paretoKey is the trade-off chart among a phase's charts.
const paretoKey = "\x00pareto"

type tradePoint struct {
	x, y  float64
	label string
}

// paretoFront is the points no other beats on both metrics, in x order;
// lowerX and higherY say which way each is better.
func paretoFront(pts []tradePoint, lowerX, higherY bool) []tradePoint {
	sorted := append([]tradePoint(nil), pts...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].x != sorted[j].x {
			return (sorted[i].x < sorted[j].x) == lowerX
		}
		return (sorted[i].y > sorted[j].y) == higherY
	})
	var front []tradePoint
	for _, p := range sorted { // from the best x on: kept when its y beats all before it
		if len(front) == 0 || (p.y > front[len(front)-1].y) == higherY && p.y != front[len(front)-1].y {
			front = append(front, p)
		}
	}
	sort.Slice(front, func(i, j int) bool { return front[i].x < front[j].x })
	return front
}

// paretoChart draws plot: of a sweep phase from its rows' values by
// column and point (results.PointValues, gathered once a write for its
// charts); nil when fewer than two points have both metrics.
func paretoChart(ph *campaign.Phase, vals map[string]map[int][]float64) (svg []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			svg, err = nil, fmt.Errorf("drawing failed: %v", r)
		}
	}()
	pc, sw := ph.Plot, ph.Sweep
	// A concurrency the rows asked for is drawn as the one they achieved,
	// where their requests say it: a point is where its load was.
	xCol, yCol := achievedFor(pc.X, vals), achievedFor(pc.Y, vals)
	labelAxis := -1
	for i, a := range sw.Axes {
		if a.Name == pc.Label {
			labelAxis = i
		}
	}
	var pts []tradePoint
	seen := map[int]bool{}
	for _, u := range sw.Units {
		if seen[u.Point] {
			continue
		}
		seen[u.Point] = true
		xs, ys := vals[xCol][u.Point], vals[yCol][u.Point]
		if len(xs) == 0 || len(ys) == 0 {
			continue
		}
		label := sw.Key(u)
		if labelAxis >= 0 {
			label = sw.Axes[labelAxis].Values[u.Values[labelAxis]].Name
		}
		pts = append(pts, tradePoint{stat.Mean(xs, nil), stat.Mean(ys, nil), label})
	}
	if len(pts) < 2 {
		return nil, nil
	}
	lowerX, higherY := tradeWays(ph)
	front := paretoFront(pts, lowerX, higherY)

	pl := plot.New()
	pl.BackgroundColor = color.White
	pl.Title.Text = fmt.Sprintf("%s: %s against %s", ph.Label(), pc.Y, pc.X)
	pl.X.Label.Text, pl.Y.Label.Text = axisWords(pc.X, xCol), axisWords(pc.Y, yCol)
	pl.Add(plotter.NewGrid())
	all := make(plotter.XYs, len(pts))
	var labels []string
	for i, q := range pts {
		all[i] = plotter.XY{X: q.x, Y: q.y}
		labels = append(labels, q.label)
	}
	labelledPoints(pl, all, labels, color.RGBA{R: 120, G: 120, B: 120, A: 255}, "a point (mean of its repeats)")
	fr := make(plotter.XYs, len(front))
	for i, q := range front {
		fr[i] = plotter.XY{X: q.x, Y: q.y}
	}
	if ln, sc, err := plotter.NewLinePoints(fr); err == nil {
		ln.Color, sc.Color = plotColor(0), plotColor(0)
		sc.Shape = draw.CircleGlyph{}
		sc.Radius = vg.Points(4)
		pl.Add(ln, sc)
		pl.Legend.Add("Pareto front", ln, sc)
	}
	// Room for the labels of the last points (the legend stands beside).
	xmin, xmax, ymin, ymax := plotter.XYRange(all)
	pl.X.Max = xmax + 0.08*(xmax-xmin)
	pl.Y.Max = ymax + 0.04*(ymax-ymin)
	pl.X.Tick.Marker, pl.Y.Tick.Marker = plainTicks{}, plainTicks{}
	return svgOf(pl)
}

// labelledPoints draws points as dots of c, each labelled to its right,
// in the legend as legend.
func labelledPoints(pl *plot.Plot, pts plotter.XYs, labels []string, c color.Color, legend string) {
	if sc, err := plotter.NewScatter(pts); err == nil {
		sc.Color, sc.Shape, sc.Radius = c, draw.CircleGlyph{}, vg.Points(3)
		pl.Add(sc)
		pl.Legend.Add(legend, sc)
	}
	if l, err := plotter.NewLabels(plotter.XYLabels{XYs: pts, Labels: labels}); err == nil {
		for i := range l.TextStyle {
			l.TextStyle[i].XAlign = draw.XLeft
		}
		l.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(2)}
		pl.Add(l)
	}
}

// tradeWays are which way plot:'s x and y are better: said (expect:,
// better:), else by their names as the model reads them (a time lower, a
// rate higher), else lower x and higher y.
func tradeWays(ph *campaign.Phase) (lowerX, higherY bool) {
	better := campaign.Better(ph)
	dir := func(m string, def campaign.Direction) campaign.Direction {
		if d, _ := campaign.Way(better, m, true); d != "" {
			return d
		}
		return def
	}
	return dir(ph.Plot.X, campaign.Lower) == campaign.Lower, dir(ph.Plot.Y, campaign.Higher) == campaign.Higher
}

// achievedFor is the column a chart draws for col: the concurrency the
// rows achieved (runner.ColAchieved, from their requests) for the
// max_concurrency they asked for, where every point that has one has the
// other; col itself otherwise.
func achievedFor(col string, vals map[string]map[int][]float64) string {
	if col != "max_concurrency" || len(vals[runner.ColAchieved]) == 0 {
		return col
	}
	for point := range vals[col] {
		if len(vals[runner.ColAchieved][point]) == 0 {
			return col
		}
	}
	return runner.ColAchieved
}

// axisWords is an axis's label: the column drawn, and the one asked for
// where they differ.
func axisWords(asked, drawn string) string {
	if asked == drawn {
		return drawn
	}
	return drawn + " (for " + asked + " requested)"
}
