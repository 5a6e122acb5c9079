package report

// A chart as the results file shows it: SVG at its size, the legend
// beside the plot, and fonts a browser without gonum's falls back from.
// Every chart of the record (a sweep's, the trade-off, the GPUs', a
// search's) is written through svgOf.

import (
	"bytes"
	"image/color"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// svgOf is a chart as SVG, at the size the results file shows its charts.
func svgOf(pl *plot.Plot) ([]byte, error) {
	const w, h = 7 * vg.Inch, 4.5 * vg.Inch
	pl.Title.Text = wrapTitle(pl.Title.Text, func(s string) vg.Length { return pl.Title.TextStyle.Width(s) }, w-vg.Inch/2)
	leg, lw := legendApart(pl)
	c := vgsvg.New(w+lw, h)
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	pl.Draw(draw.Crop(dc, 0, -lw, 0, 0))
	if lw > 0 {
		leg.Draw(draw.Crop(dc, w, 0, 0, -vg.Points(28))) // below the title's line
	}
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return withFallbackFonts(b.Bytes()), nil
}

// wrapTitle breaks a chart's title into lines no wider than room (a
// title wider than the chart was cut at both ends), at spaces, a word
// longer than a line on a line of its own.
func wrapTitle(title string, width func(string) vg.Length, room vg.Length) string {
	if title == "" || width(title) <= room {
		return title
	}
	var lines []string
	cur := ""
	for _, w := range strings.Fields(title) {
		switch {
		case cur == "":
			cur = w
		case width(cur+" "+w) <= room:
			cur += " " + w
		default:
			lines = append(lines, cur)
			cur = w
		}
	}
	return strings.Join(append(lines, cur), "\n")
}

// legendApart takes pl's legend off its plotting area, to be drawn beside
// it (a legend inside sits over lines): the legend, and the width it
// needs, with slack for a viewer's font a little wider than the one
// measured; 0 when it has no entry.
func legendApart(pl *plot.Plot) (plot.Legend, vg.Length) {
	leg := pl.Legend
	empty := plot.NewLegend()
	empty.TextStyle = leg.TextStyle
	pl.Legend = empty
	leg.Top, leg.Left, leg.XOffs, leg.YOffs = true, true, vg.Points(4), 0
	leg.Padding = vg.Points(2)
	r := leg.Rectangle(draw.Canvas{})
	if r.Max.X-r.Min.X <= 0 {
		return leg, 0
	}
	return leg, (r.Max.X-r.Min.X)*1.15 + vg.Points(12)
}

// withFallbackFonts names, after the font gonum measured its text with
// (Liberation Serif), the fonts of the same metrics a viewer is likelier
// to have: a browser without it would take its default serif, wider and
// taller, and legend lines would run into each other.
func withFallbackFonts(svg []byte) []byte {
	return bytes.ReplaceAll(svg, []byte("font-family:Liberation Serif;"), []byte("font-family:'Liberation Serif','Times New Roman',Times,'Nimbus Roman',serif;"))
}
