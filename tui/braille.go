package tui

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/greenlight-run/greenlight/internal/format"
)

// A line chart drawn in braille cells (2 x 4 dots each) with a y axis and
// its ticks on the left, x ticks under the plot and a legend: the window's
// chart of a sweep's metric or of the GPUs over a phase. Plain strings
// with a colour per series applied by the caller, so it tests as text.

// chartLine is one series: points in x order.
type chartLine struct {
	name   string
	xs, ys []float64
}

// chartTick is a label at a value of the x axis.
type chartTick struct {
	at    float64
	label string
}

// chartSpec is what to draw.
type chartSpec struct {
	title  string
	xLabel string // the x axis's name and unit ("m", "time")
	yLabel string // the metric and its unit ("tflops", "util %")
	logX   bool
	lines  []chartLine
	ticks  []chartTick // x ticks; nil: the points' own x values, thinned to fit
	yMin   *float64    // a fixed y floor (0 for a utilisation), nil: from the data
	yMax   *float64
	keys   string // the keys the screen answers to, said under the x axis where room is
}

// brailleBits are the dot bits of a cell's 2 x 4 dots, by [x][y].
var brailleBits = [2][4]rune{{0x01, 0x02, 0x04, 0x40}, {0x08, 0x10, 0x20, 0x80}}

// drawChart draws c in w columns and h rows. paint colours a series'
// text (its index); identity when nil. Fewer than 8 rows or 30 columns:
// a line that says the window is too small.
func drawChart(c chartSpec, w, h int, paint func(i int, s string) string) []string {
	if paint == nil {
		paint = func(_ int, s string) string { return s }
	}
	if w < 30 || h < 8 {
		return []string{"the window is too small for a chart (at least 30 x 8)"}
	}
	xmin, xmax, ymin, ymax, any := bounds(c)
	if !any {
		return []string{c.title, "", "  no points yet: the chart fills in as they land"}
	}
	yTicks := []float64{ymax, (ymin + ymax) / 2, ymin}
	gw := 0
	for _, v := range yTicks {
		gw = max(gw, len(format.Number(round3(v))))
	}
	gw += 2             // " ┤"
	pw, ph := w-gw, h-5 // title, x axis, x ticks, x label, legend
	cells := make([][]rune, ph)
	owner := make([][]int, ph)
	for r := range cells {
		cells[r] = make([]rune, pw)
		owner[r] = make([]int, pw)
		for k := range owner[r] {
			owner[r][k] = -1
		}
	}
	tx := func(x float64) float64 {
		if c.logX {
			x, xmin, xmax := math.Log10(x), math.Log10(xmin), math.Log10(xmax)
			if xmax == xmin {
				return float64(pw)
			}
			return (x - xmin) / (xmax - xmin) * float64(2*pw-1)
		}
		if xmax == xmin {
			return float64(pw)
		}
		return (x - xmin) / (xmax - xmin) * float64(2*pw-1)
	}
	ty := func(y float64) float64 {
		if ymax == ymin {
			return float64(2 * ph)
		}
		return (ymax - y) / (ymax - ymin) * float64(4*ph-1)
	}
	dot := func(px, py, series int) {
		if px < 0 || py < 0 || px >= 2*pw || py >= 4*ph {
			return
		}
		r, k := py/4, px/2
		cells[r][k] |= brailleBits[px%2][py%4]
		owner[r][k] = series
	}
	for i, l := range c.lines {
		var last [2]int
		for j := range l.xs {
			if c.logX && l.xs[j] <= 0 || math.IsNaN(l.ys[j]) {
				continue
			}
			p := [2]int{int(math.Round(tx(l.xs[j]))), int(math.Round(ty(l.ys[j])))}
			if j > 0 {
				segment(last, p, func(x, y int) { dot(x, y, i) })
			}
			dot(p[0], p[1], i)
			last = p
		}
	}
	out := []string{c.title}
	for r := range ph {
		label := ""
		switch r {
		case 0:
			label = format.Number(round3(yTicks[0]))
		case ph / 2:
			label = format.Number(round3(ymin + (ymax-ymin)*float64(ph-1-r)/float64(ph-1)))
		case ph - 1:
			label = format.Number(round3(yTicks[2]))
		}
		axis := "│"
		if label != "" {
			axis = "┤"
		}
		var b strings.Builder
		b.WriteString(fmt.Sprintf("%*s %s", gw-2, label, axis))
		for k := range pw {
			ch := cells[r][k]
			if ch == 0 {
				b.WriteByte(' ')
				continue
			}
			b.WriteString(paint(owner[r][k], string(0x2800+ch)))
		}
		out = append(out, b.String())
	}
	axis, labels := xTickLine(c, pw, tx)
	out = append(out, strings.Repeat(" ", gw-1)+"└"+axis, strings.TrimRight(strings.Repeat(" ", gw)+labels, " "))
	xl := c.xLabel
	if c.logX {
		xl += " (log scale)"
	}
	under := strings.Repeat(" ", gw) + "x: " + xl + " · y: " + c.yLabel
	if c.keys != "" && len([]rune(under))+3+len([]rune(c.keys)) <= w {
		under += " · " + c.keys
	}
	out = append(out, under)
	out = append(out, legend(c.lines, w, paint))
	return out
}

// bounds are the ranges of the points drawn; any is false with none.
func bounds(c chartSpec) (xmin, xmax, ymin, ymax float64, any bool) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for _, l := range c.lines {
		for j := range l.xs {
			if c.logX && l.xs[j] <= 0 || math.IsNaN(l.ys[j]) || math.IsInf(l.ys[j], 0) {
				continue
			}
			xmin, xmax = math.Min(xmin, l.xs[j]), math.Max(xmax, l.xs[j])
			ymin, ymax = math.Min(ymin, l.ys[j]), math.Max(ymax, l.ys[j])
			any = true
		}
	}
	if !any {
		return
	}
	for _, t := range c.ticks {
		if !c.logX || t.at > 0 {
			xmin, xmax = math.Min(xmin, t.at), math.Max(xmax, t.at)
		}
	}
	if ymin > 0 && ymin < ymax/3 {
		ymin = 0 // a throughput from zero reads as it is
	}
	if c.yMin != nil {
		ymin = *c.yMin
	}
	if c.yMax != nil {
		ymax = math.Max(*c.yMax, ymax)
	}
	if ymax == ymin {
		ymin, ymax = ymin-1, ymax+1
	}
	return
}

// round3 keeps three significant digits, for tick labels.
func round3(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	p := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

// segment calls dot for each dot of the line from a to b (Bresenham).
func segment(a, b [2]int, dot func(x, y int)) {
	dx, dy := abs(b[0]-a[0]), -abs(b[1]-a[1])
	sx, sy := 1, 1
	if a[0] > b[0] {
		sx = -1
	}
	if a[1] > b[1] {
		sy = -1
	}
	e := dx + dy
	for x, y := a[0], a[1]; ; {
		dot(x, y)
		if x == b[0] && y == b[1] {
			return
		}
		if e2 := 2 * e; e2 >= dy {
			e += dy
			x += sx
		} else {
			e += dx
			y += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// xTickLine is the x axis under the plot: a ┬ at each tick that fits and
// its label from there, later ticks dropped where they would overlap.
func xTickLine(c chartSpec, pw int, tx func(float64) float64) (axis, labels string) {
	ticks := c.ticks
	if ticks == nil {
		var xs []float64
		for _, l := range c.lines {
			xs = append(xs, l.xs...)
		}
		slices.Sort(xs)
		xs = slices.Compact(xs)
		for _, x := range xs {
			if !c.logX || x > 0 {
				ticks = append(ticks, chartTick{x, format.Number(x)})
			}
		}
	}
	ax := []rune(strings.Repeat("─", pw))
	lb := []rune(strings.Repeat(" ", pw))
	free := 0
	for _, t := range ticks {
		col := int(math.Round(tx(t.at))) / 2
		if col < 0 || col >= pw || col < free {
			continue
		}
		lab := []rune(t.label)
		start := min(col, pw-len(lab)) // the last label ends at the axis's end
		if start < free || start < 0 {
			continue
		}
		ax[col] = '┬'
		copy(lb[start:], lab)
		free = start + len(lab) + 1
	}
	return string(ax), string(lb)
}

// legend names each series with its colour, as many as fit in w.
func legend(lines []chartLine, w int, paint func(i int, s string) string) string {
	var b strings.Builder
	used := 0
	for i, l := range lines {
		item := "⣿ " + l.name
		n := len([]rune(item)) + 2
		more := 0
		if i < len(lines)-1 {
			more = len(fmt.Sprintf("+%d more", len(lines)-i-1)) // room to say what is left out
		}
		if used+n+more > w {
			fmt.Fprintf(&b, "+%d more", len(lines)-i)
			break
		}
		b.WriteString(paint(i, "⣿") + " " + l.name + "  ")
		used += n
	}
	return strings.TrimRight(b.String(), " ")
}
