package report

// Each phase's GPUs over its span as one SVG beside the results file:
// utilization, memory, power and temperature against the time since the
// phase began (in seconds, minutes or hours, by its length), small
// multiples, one line per GPU, shaded red in every panel where a GPU
// throttled for trouble. Drawn once the phase has finished, from the
// sampler's history (greenlight report, which has none, keeps the file).

import (
	"bytes"
	"cmp"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/internal/files"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// windowed is a GPU history that gives a device's points over a window:
// *gpu.Sampler.
type windowed interface {
	Window(id gpu.DeviceID, from, to time.Time, max int) []gpu.Point
}

// gpuChartName is the file of a phase's GPU chart, beside the results file.
func gpuChartName(report, phase string) string {
	base := strings.TrimSuffix(filepath.Base(report), filepath.Ext(report))
	return base + "." + phase + ".gpus.svg"
}

// gpuChartPoints bounds the points drawn per GPU: a 36-hour phase sampled
// every second is drawn from 600 of them.
const gpuChartPoints = 600

type gpuPanel struct {
	title   string
	value   func(p gpu.Point) float64 // <0: no reading
	percent bool                      // a share: drawn 0 to 100
}

// shortLine is how few samples a GPU's line has before each is drawn as
// a point too.
const shortLine = 12

var gpuPanels = []gpuPanel{
	{"utilization (%)", func(p gpu.Point) float64 { return float64(p.Util) }, true},
	{"memory used (GiB)", func(p gpu.Point) float64 { return float64(p.MemUsed) }, false},
	{"power (W)", func(p gpu.Point) float64 { return float64(p.Power) }, false},
	{"temperature (°C)", func(p gpu.Point) float64 { return float64(p.Temp) }, false},
}

// gpuChart draws the GPUs' history over [from, to]; nil when no GPU has a
// point in it.
func gpuChart(title string, sums []gpu.Summary, h windowed, from, to time.Time, capped func(gpu.Device) bool) (svg []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			svg, err = nil, fmt.Errorf("drawing failed: %v", r)
		}
	}()
	type line struct {
		label  string
		pts    []gpu.Point
		capped bool // its power limit lowered: its SW power cap is trouble
	}
	var lines []line
	for _, s := range sums {
		if pts := h.Window(s.Device.ID(), from, to, gpuChartPoints); len(pts) > 0 {
			lines = append(lines, line{"GPU " + s.Device.Label(), pts, capped != nil && capped(s.Device)})
		}
	}
	if len(lines) == 0 {
		return nil, nil
	}
	// Time in the unit a person reads the phase's length in.
	span := to.Sub(from)
	unit, per := "minutes", time.Minute
	switch {
	case span < 2*time.Minute:
		unit, per = "seconds", time.Second
	case span > 2*time.Hour:
		unit, per = "hours", time.Hour
	}
	xmax := span.Seconds() / per.Seconds()
	var perGPU [][]gpu.Point
	var caps []bool
	for _, l := range lines {
		perGPU, caps = append(perGPU, l.pts), append(caps, l.capped)
	}
	spans := troubleSpans(perGPU, caps, from, to, per)
	plots := make([][]*plot.Plot, len(gpuPanels))
	for i, panel := range gpuPanels {
		pl := plot.New()
		pl.BackgroundColor = color.White
		pl.Title.Text = panel.title
		if i == 0 {
			pl.Title.Text = title + ": " + panel.title
		}
		pl.X.Label.Text = unit + " since the phase began"
		pl.X.Min, pl.X.Max = 0, xmax // the legend stands beside the panels
		pl.Add(plotter.NewGrid())
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, l := range lines {
			for _, p := range l.pts {
				if v := panel.value(p); v >= 0 {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
		if panel.percent {
			lo, hi = 0, 100 // a share is drawn whole, never -1 to 1
			pl.Y.Min, pl.Y.Max = 0, 100
		}
		if lo == hi {
			lo, hi = lo-1, hi+1 // as gonum pads a flat line
		}
		if len(spans) > 0 && lo <= hi {
			// Under the lines: a band over the panel's range for each span.
			for k, sp := range spans {
				band, err := plotter.NewPolygon(plotter.XYs{{X: sp[0], Y: lo}, {X: sp[1], Y: lo}, {X: sp[1], Y: hi}, {X: sp[0], Y: hi}})
				if err != nil {
					continue
				}
				band.Color = color.NRGBA{R: 230, G: 60, B: 60, A: 60}
				band.LineStyle.Width = 0
				pl.Add(band)
				if i == 0 && k == 0 {
					pl.Legend.Add("throttled: thermal, HW slowdown, power brake", band)
				}
			}
		}
		for j, l := range lines {
			var xy plotter.XYs
			for _, p := range l.pts {
				v := panel.value(p)
				if v < 0 {
					continue
				}
				x := p.T.Sub(from).Seconds() / per.Seconds()
				xy = append(xy, plotter.XY{X: x, Y: v})
			}
			if len(xy) == 0 {
				continue
			}
			ln, pts, err := plotter.NewLinePoints(xy)
			if err != nil {
				continue
			}
			ln.Color = plotColor(j)
			ln.Width = vg.Points(1)
			pl.Add(ln)
			if len(xy) < shortLine {
				// A phase of a few samples: each drawn, so that two of them
				// do not pass for a trend.
				pts.Color, pts.Shape = plotColor(j), draw.CircleGlyph{}
				pl.Add(pts)
			}
			if i == 0 {
				pl.Legend.Add(l.label, ln)
			}
		}
		pl.Legend.Top = true
		pl.Y.Tick.Marker = plainTicks{}
		plots[i] = []*plot.Plot{pl}
	}
	leg, lw := legendApart(plots[0][0]) // only the first panel has entries
	width, height := 8*vg.Inch, 9*vg.Inch
	c := vgsvg.New(width+lw, height)
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	if lw > 0 {
		leg.Draw(draw.Crop(dc, width, 0, 0, -vg.Points(28)))
	}
	canvases := plot.Align(plots, draw.Tiles{Rows: len(gpuPanels), Cols: 1, PadY: vg.Points(6), PadTop: vg.Points(4), PadBottom: vg.Points(4)}, draw.Crop(dc, 0, -lw, 0, 0))
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return withFallbackFonts(b.Bytes()), nil
}

// updateGPUChart draws a finished phase's GPU chart once per attempt;
// the name is "" when there is none (no history, no reading).
func (w *Writer) updateGPUChart(_ *campaign.Phase, p *runner.PhaseState, _ *runner.State) error {
	ph := w.plan.Phase(p.ID)
	if ph == nil || !p.Status.Finished() || p.Started.IsZero() || p.Ended.IsZero() {
		return nil
	}
	name := gpuChartName(w.path, p.ID)
	key := fmt.Sprintf("%d/%s", p.Attempt, p.Ended.Format(time.RFC3339Nano))
	if w.gpuCharts[p.ID] == key {
		return nil
	}
	h, ok := w.gpus.(windowed)
	if !ok {
		return nil // greenlight report: the chart drawn while it ran stays
	}
	svg, err := gpuChart(ph.Label(), w.gpuSummary(ph, *p, p.Ended), h, p.Started, p.Ended, func(d gpu.Device) bool {
		c, ok := w.conds.GPU(d)
		return ok && c.Capped()
	})
	w.gpuCharts[p.ID] = key
	if err != nil || svg == nil {
		return err
	}
	return files.WriteAtomic(filepath.Join(filepath.Dir(w.path), name), svg)
}

// gpuChartLink is the phase's GPU chart as it is embedded, when the file
// is there.
func (w *Writer) gpuChartLink(ph *campaign.Phase, p runner.PhaseState) string {
	name := gpuChartName(w.path, p.ID)
	if !p.Status.Finished() {
		return ""
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(w.path), name)); err != nil {
		return ""
	}
	return fmt.Sprintf("\n![GPUs during %s](%s)\n", cell(ph.Label()), name)
}

// plainTicks are gonum's default ticks labelled as the results file
// writes numbers: 75, not 75.00.
type plainTicks struct{}

func (plainTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = FormatNumber(ticks[i].Value)
		}
	}
	return ticks
}

// troubleSpans are the stretches, in the chart's x unit, where a GPU's
// reading says it throttled for trouble: each such reading stands for the
// time to its GPU's next one (its last, one interval more, within the
// phase), overlapping stretches merged.
func troubleSpans(perGPU [][]gpu.Point, capped []bool, from, to time.Time, per time.Duration) [][2]float64 {
	x := func(t time.Time) float64 { return t.Sub(from).Seconds() / per.Seconds() }
	var spans [][2]float64
	for g, pts := range perGPU {
		for j, p := range pts {
			if !p.Troubled(g < len(capped) && capped[g]) {
				continue
			}
			var end time.Time
			switch {
			case j+1 < len(pts):
				end = pts[j+1].T
			case j > 0:
				end = p.T.Add(p.T.Sub(pts[j-1].T)) // the last: one interval, as the one before
			default:
				end = p.T
			}
			spans = append(spans, [2]float64{max(0, x(p.T)), min(x(to), x(end))})
		}
	}
	slices.SortFunc(spans, func(a, b [2]float64) int { return cmp.Compare(a[0], b[0]) })
	var out [][2]float64
	for _, sp := range spans {
		if n := len(out); n > 0 && sp[0] <= out[n-1][1] {
			out[n-1][1] = math.Max(out[n-1][1], sp[1])
			continue
		}
		out = append(out, sp)
	}
	return out
}
