package campaign

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// How a sweep's points lie on its charts, the same for the SVG beside the
// results file and the window's: the axis the lines run along, where each
// of its values sits, the x scale, and a line per point of the other axes.

// CurveAxes is the axis a sweep's curves run along (plot: x, else the
// first) and the others, in the order each line's name gives them
// (plot: series first).
func (ph *Phase) CurveAxes() (x int, rest []int) {
	sw, c := ph.Sweep, ph.Curves
	for i, a := range sw.Axes {
		if c != nil && a.Name == c.X {
			x = i
		}
	}
	for i, a := range sw.Axes {
		if i != x && c != nil && a.Name == c.Series {
			rest = append(rest, i)
		}
	}
	for i, a := range sw.Axes {
		if i != x && (c == nil || a.Name != c.Series) {
			rest = append(rest, i)
		}
	}
	return x, rest
}

// Curves laid out: Axis is the one the lines run along; X[i] is where
// its i-th value sits (the number, or 1, 2, ... for names, Numeric false);
// LogX is the scale; Lines are the points of the other axes, in grid
// order, each with its grid points in x order.
type CurveLayout struct {
	Axis    Axis
	X       []float64
	Numeric bool
	LogX    bool
	Lines   []CurveLine
}

// CurveLine is one line: its name ("shape=down", "" when the sweep has
// one axis) and its points.
type CurveLine struct {
	Name   string
	Points []CurvePoint
}

// CurvePoint is a grid point (Unit.Point) at its x.
type CurvePoint struct {
	X     float64
	Point int
}

// Layout lays out the sweep's curves; the zero layout for a phase with no
// sweep.
func (ph *Phase) Layout() CurveLayout {
	sw := ph.Sweep
	if sw == nil || len(sw.Axes) == 0 {
		return CurveLayout{}
	}
	xi, rest := ph.CurveAxes()
	l := CurveLayout{Axis: sw.Axes[xi], X: make([]float64, len(sw.Axes[xi].Values)), Numeric: true}
	for i, v := range l.Axis.Values {
		f, err := strconv.ParseFloat(v.Name, 64)
		l.Numeric = l.Numeric && err == nil
		l.X[i] = f
	}
	if !l.Numeric {
		for i := range l.X {
			l.X[i] = float64(i + 1)
		}
	}
	lo, hi := slices.Min(l.X), slices.Max(l.X)
	l.LogX = l.Numeric && lo > 0 && hi/lo >= 100
	if c := ph.Curves; c != nil && c.LogX != nil {
		l.LogX = *c.LogX && l.Numeric && lo > 0 // asked, where a log scale can be drawn
	}
	line := map[string]int{}
	for _, u := range sw.Units {
		if u.Repeat != 1 {
			continue
		}
		var key []string
		for _, k := range rest {
			key = append(key, sw.Axes[k].Say(sw.Axes[k].Values[u.Values[k]]))
		}
		name := strings.Join(key, ",")
		i, ok := line[name]
		if !ok {
			i = len(l.Lines)
			line[name] = i
			l.Lines = append(l.Lines, CurveLine{Name: name})
		}
		l.Lines[i].Points = append(l.Lines[i].Points, CurvePoint{X: l.X[u.Values[xi]], Point: u.Point})
	}
	// Along an axis other than the first, the grid's order is not x's.
	for i := range l.Lines {
		slices.SortStableFunc(l.Lines[i].Points, func(a, b CurvePoint) int { return cmp.Compare(a.X, b.X) })
	}
	return l
}
