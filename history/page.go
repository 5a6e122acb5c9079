package history

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/internal/safe"
)

// A page of the history: what moved, a chart per moved series (its
// campaigns' means with their runs' spread, each change point a dashed
// line, the two sides' means drawn across), and what changed in the
// conditions with each, ranked. The charts are written beside the page.

// WritePage writes the page to path and its charts beside it; it returns
// the files written.
func (h *History) WritePage(path string) ([]string, error) {
	base := strings.TrimSuffix(path, filepath.Ext(path))
	var b strings.Builder
	lines := h.Lines()
	fmt.Fprintf(&b, "# History: %s\n\n%s\n\n", cell(h.Campaigns[0].Name), cell(lines[0]))
	written := []string{path}
	bySeries := map[int][]Change{}
	var order []int
	for _, c := range h.Changes {
		if _, ok := bySeries[c.Series]; !ok {
			order = append(order, c.Series)
		}
		bySeries[c.Series] = append(bySeries[c.Series], c)
	}
	if len(order) == 0 {
		b.WriteString("No series moved.\n")
	}
	for n, si := range order {
		s := h.Series[si]
		fmt.Fprintf(&b, "## %s\n\n", cell(s.Name()))
		for _, c := range bySeries[si] {
			at := h.Campaigns[c.Campaign]
			fmt.Fprintf(&b, "- %+.1f%%%s (%s → %s, p %.2g), %s, at `%s` (%s)", c.ChangePct, c.IntervalWords(), format.Number(c.Mean1), format.Number(c.Mean2), c.P, c.Verdict,
				cell(at.Path), at.Started.Format("2006-01-02 15:04"))
			switch {
			case len(c.Conditions) > 0:
				fmt.Fprintf(&b, ": with it, %s", cell(strings.Join(c.Conditions, "; ")))
			case len(c.Near) > 0:
				fmt.Fprintf(&b, ": nothing changed between the two campaigns, but %s", cell(strings.Join(c.Near, "; ")))
			}
			b.WriteString("\n")
		}
		name := fmt.Sprintf("%s.%d.svg", base, n+1)
		svg, err := h.chart(s, bySeries[si])
		if err != nil {
			return written, err
		}
		if err := os.WriteFile(name, svg, 0o644); err != nil {
			return written, err
		}
		written = append(written, name)
		fmt.Fprintf(&b, "\n![%s](%s)\n\n", cell(s.Name()), filepath.Base(name))
	}
	if len(h.Causes) > 0 {
		b.WriteString("## What changed in the conditions\n\nRanked by the series that moved with each (at it, or a campaign either side):\n\n| Change | At | Series moved |\n|---|---|---:|\n")
		for _, c := range h.Causes {
			fmt.Fprintf(&b, "| %s | `%s` | %d |\n", cell(c.What), cell(h.Campaigns[c.Campaign].Path), c.Moved)
		}
	}
	if len(h.Said) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, s := range h.Said {
			fmt.Fprintf(&b, "- %s\n", cell(s))
		}
	}
	return written, os.WriteFile(path, []byte(b.String()), 0o644)
}

// cell is text safe in a table cell or a list item of the page.
func cell(s string) string { return safe.Markdown(safe.Text(s, safe.CSV)) }

// chart is a series over its campaigns: each mean with its runs' spread
// (± a standard deviation), each change a dashed line with the two
// sides' means drawn across their campaigns.
func (h *History) chart(s *Series, changes []Change) ([]byte, error) {
	pl := plot.New()
	pl.BackgroundColor = color.White
	pl.Title.Text = s.Name()
	pl.X.Label.Text = "campaign (in the order they started)"
	pl.Y.Label.Text = s.Metric
	pts := make(plotter.XYs, len(s.Values))
	errs := make(plotter.YErrors, len(s.Values))
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, v := range s.Values {
		pts[i] = plotter.XY{X: float64(v.Campaign + 1), Y: v.Mean}
		errs[i] = struct{ Low, High float64 }{v.SD, v.SD}
		lo, hi = math.Min(lo, v.Mean-v.SD), math.Max(hi, v.Mean+v.SD)
	}
	line, dots, err := plotter.NewLinePoints(pts)
	if err != nil {
		return nil, err
	}
	line.Color, dots.Color = color.RGBA{31, 119, 180, 255}, color.RGBA{31, 119, 180, 255}
	pl.Add(line, dots)
	if bars, err := plotter.NewYErrorBars(struct {
		plotter.XYs
		plotter.YErrors
	}{pts, errs}); err == nil {
		bars.Color = color.RGBA{31, 119, 180, 160}
		pl.Add(bars)
	}
	red := color.RGBA{214, 39, 40, 255}
	from := float64(s.Values[0].Campaign + 1)
	for i, c := range changes {
		x := float64(c.Campaign) + 0.5
		v, _ := plotter.NewLine(plotter.XYs{{X: x, Y: lo}, {X: x, Y: hi}})
		v.Color, v.Dashes = red, []vg.Length{vg.Points(4), vg.Points(3)}
		pl.Add(v)
		to := float64(s.Values[len(s.Values)-1].Campaign + 1)
		if i+1 < len(changes) {
			to = float64(changes[i+1].Campaign)
		}
		before, _ := plotter.NewLine(plotter.XYs{{X: from, Y: c.Mean1}, {X: x, Y: c.Mean1}})
		after, _ := plotter.NewLine(plotter.XYs{{X: x, Y: c.Mean2}, {X: to, Y: c.Mean2}})
		before.Color, after.Color = color.RGBA{127, 127, 127, 255}, red
		pl.Add(before, after)
		if i == 0 {
			pl.Legend.Add(fmt.Sprintf("change %+.1f%% at %d", c.ChangePct, c.Campaign+1), v)
		}
		from = x
	}
	pl.Legend.Add("campaign mean ± its runs' SD", line, dots)
	pl.Legend.Top, pl.Legend.Left = true, true
	pl.Legend.XOffs = vg.Points(8)
	pl.X.Min, pl.X.Max = float64(s.Values[0].Campaign)+0.5, float64(s.Values[len(s.Values)-1].Campaign)+1.5
	pl.Y.Max = hi + 0.35*(hi-lo) // room for the legend above the values
	pl.Y.Min = lo - 0.08*(hi-lo) // the lowest value off the axis, not on it
	const w, hgt = 7 * vg.Inch, 4 * vg.Inch
	c := vgsvg.New(w, hgt)
	pl.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
