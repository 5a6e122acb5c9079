package report

// How close to the hardware: each point of a phase with roofline: against
// the board's roofline, at three denominators: the vendor's spec peak, the
// peak at the SM clock NVML sampled while the point's runs ran, and the
// ceiling a calibration phase measured. The clock a finished step held is
// fixed once (clocks.json in the state dir), so `greenlight report` says
// what the runner said.

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/measure"
	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// roofPoint is one point's runs against the roof.
type roofPoint struct {
	point         string
	flops, bytes  float64 // one run's, the mean over its rows
	tflops, gbs   float64 // achieved, the mean over its rows
	mhz           float64 // the SM clock held, the mean over its steps; 0 unknown
	runs          int
	errs          []string
	noBoardReason string
}

func (r roofPoint) intensity() float64 { return r.flops / r.bytes }

// roof is the attainable TFLOP/s at an intensity under a compute peak
// (TFLOP/s) and a memory bandwidth (GB/s), and which of the two binds.
func roof(peak, gbs, intensity float64) (float64, string) {
	mem := gbs * intensity / 1000
	if peak <= mem {
		return peak, "compute"
	}
	return mem, "memory"
}

// stepMHz is the mean SM clock of a step's GPUs while it ran, from its
// facts; 0 before its end, or when no reading had it.
func (w *Writer) stepMHz(p runner.PhaseState, s runner.StepState) float64 {
	if f := w.factsOf(p, s); f != nil {
		return f.SMClockMHz
	}
	return 0
}

// board is the campaign's GPU board, from the conditions (the first GPU
// the phase uses, else the first): false, with why, when none is known.
func (w *Writer) board(ph *campaign.Phase) (gpu.Board, string, bool) {
	if w.conds == nil || len(w.conds.First.GPUs) == 0 {
		return gpu.Board{}, "the GPUs' names are not known (no conditions read)", false
	}
	c := w.conds.First.GPUs[0]
	for _, g := range w.conds.First.GPUs {
		if g.Host == "" && slices.Contains(measure.PhaseGPUs(ph), g.Index) {
			c = g
			break
		}
	}
	b, ok := gpu.BoardOf(c.Name)
	if !ok {
		var known []string
		for _, k := range gpu.Boards {
			known = append(known, k.Key)
		}
		return b, fmt.Sprintf("%s is not a board greenlight has figures for (it knows %s): its roofline is not guessed", cell(c.Name), strings.Join(known, ", ")), false
	}
	return b, "", true
}

// roofPoints are a roofline phase's points, in the order they ran.
func (w *Writer) roofPoints(ph *campaign.Phase, p runner.PhaseState) []roofPoint {
	r := ph.Roofline
	units := ph.AllSteps()
	var out []roofPoint
	at := map[string]int{}
	for i, s := range p.Steps {
		if len(s.Results) == 0 {
			continue
		}
		point := stepPoint(ph, units, i, s)
		k, ok := at[point]
		if !ok {
			k = len(out)
			at[point] = k
			out = append(out, roofPoint{point: point})
		}
		rp := &out[k]
		mhz := w.stepMHz(p, s)
		axes := unitVars(ph, units, i)
		for _, row := range s.Results {
			vals := campaign.With(rowNumbers(row), axes)
			flops, e1 := r.Flops.Eval(vals)
			bytes, e2 := r.Bytes.Eval(vals)
			secs, e3 := r.Seconds.Eval(vals)
			if err := errorsOf(e1, e2, e3); err != "" {
				if !slices.Contains(rp.errs, err) {
					rp.errs = append(rp.errs, err)
				}
				continue
			}
			if secs <= 0 || flops < 0 || bytes <= 0 {
				rp.errs = append(rp.errs, fmt.Sprintf("a run of %s s, %s FLOPs, %s bytes is no run", FormatNumber(secs), FormatNumber(flops), FormatNumber(bytes)))
				continue
			}
			n := float64(rp.runs)
			rp.flops = (rp.flops*n + flops) / (n + 1)
			rp.bytes = (rp.bytes*n + bytes) / (n + 1)
			rp.tflops = (rp.tflops*n + flops/secs/1e12) / (n + 1)
			rp.gbs = (rp.gbs*n + bytes/secs/1e9) / (n + 1)
			if mhz > 0 {
				rp.mhz = (rp.mhz*n + mhz) / (n + 1)
			}
			rp.runs++
		}
	}
	return out
}

func errorsOf(errs ...error) string {
	for _, e := range errs {
		if e != nil {
			return e.Error()
		}
	}
	return ""
}

// rooflineOf is a roofline phase's points against the board's roofline,
// the record's and the block's alike; nil for a phase without roofline:
// or without a run yet.
func (w *Writer) rooflineOf(ph *campaign.Phase, p runner.PhaseState, st *runner.State) (*record.Roofline, []string) {
	r := ph.Roofline
	if r == nil {
		return nil, nil
	}
	pts := w.roofPoints(ph, p)
	if len(pts) == 0 {
		return nil, nil
	}
	out := &record.Roofline{Dtype: r.Dtype, Formulas: [3]string{r.Flops.Text, r.Bytes.Text, r.Seconds.Text}}
	var notes []string
	for _, rp := range pts {
		for _, e := range rp.errs {
			notes = append(notes, fmt.Sprintf("%s: %s", rp.point, e))
		}
	}
	board, why, ok := w.board(ph)
	if !ok {
		out.Unknown = why
		return out, notes
	}
	spec, err := board.PeakTFLOPS(r.Dtype, board.SpecMHz)
	if err != nil {
		out.Unknown = err.Error()
		return out, notes
	}
	out.Board, out.SpecTF, out.MemGBs = board.Key, spec, board.MemGBs
	if r.Ceiling != "" && st != nil {
		if cp, cph := st.Phase(r.Ceiling), w.plan.Phase(r.Ceiling); cp != nil && cph != nil && cph.Roofline != nil {
			for _, c := range w.roofPoints(cph, *cp) {
				out.CeilTF, out.CeilGBs = math.Max(out.CeilTF, c.tflops), math.Max(out.CeilGBs, c.gbs)
			}
		}
	}
	for _, rp := range pts {
		if rp.runs == 0 {
			continue
		}
		ai := rp.intensity()
		specRoof, bound := roof(spec, board.MemGBs, ai)
		pt := record.RoofPoint{Point: rp.point, Runs: rp.runs, TFLOPS: rp.tflops, GBs: rp.gbs, Intensity: ai, Bound: bound, SpecPct: 100 * rp.tflops / specRoof}
		if rp.mhz > 0 {
			peak, _ := board.PeakTFLOPS(r.Dtype, rp.mhz)
			clockRoof, _ := roof(peak, board.MemGBs, ai)
			pt.ClockMHz, pt.ClockPct = math.Round(rp.mhz), 100*rp.tflops/clockRoof
		}
		if out.CeilTF > 0 {
			ceilRoof, _ := roof(out.CeilTF, out.CeilGBs, ai)
			pt.CeilPct = 100 * rp.tflops / ceilRoof
		}
		out.Points = append(out.Points, pt)
	}
	return out, notes
}

// keyRoof is the key result's point against the roof, for the header:
// "61 % of the spec roof, 56 % at 1980 MHz"; "" without one.
func (w *Writer) keyRoof(p runner.PhaseState) string {
	ph := w.plan.Phase(p.ID)
	if ph == nil || ph.Roofline == nil {
		return ""
	}
	_, _, step := keyOf(ph, p, nil)
	if step < 0 {
		return ""
	}
	point := stepPoint(ph, ph.AllSteps(), step, p.Steps[step])
	rl, _ := w.rooflineOf(ph, p, nil)
	if rl == nil {
		return ""
	}
	for _, pt := range rl.Points {
		if pt.Point != point {
			continue
		}
		s := fmt.Sprintf("%.0f %% of the spec roof", pt.SpecPct)
		if pt.ClockPct > 0 {
			s += fmt.Sprintf(", %.0f %% at %s MHz", pt.ClockPct, FormatNumber(pt.ClockMHz))
		}
		if overRoof(pt.SpecPct) || overRoof(pt.ClockPct) {
			s = "⚠ " + s + ": above the roof, a broken measurement"
		}
		return s
	}
	return ""
}

// overRoof is a share above 100%, past rounding: a broken measurement.
func overRoof(pct float64) bool { return pct > 100.5 }

// rooflineSection is a roofline phase's block: a row a point.
func (w *Writer) rooflineSection(ph *campaign.Phase, p runner.PhaseState, st *runner.State) string {
	rl, notes := w.rooflineOf(ph, p, st)
	if rl == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n### Roofline: how close to the hardware\n\n")
	if rl.Unknown != "" {
		fmt.Fprintf(&b, "No roofline: %s.\n", cell(rl.Unknown))
		return b.String()
	}
	board, _ := gpu.BoardByKey(rl.Board)
	fmt.Fprintf(&b, "%s, %s: %s TFLOP/s at %s MHz (%d SMs × %s FLOP a clock each), memory %s GB/s (%s).",
		board.Key, rl.Dtype, FormatNumber(rl.SpecTF), FormatNumber(board.SpecMHz), board.SMs, FormatNumber(board.FlopsPerClock[rl.Dtype]), FormatNumber(rl.MemGBs), cell(board.Source))
	if c := ph.Roofline.Ceiling; c != "" {
		if rl.CeilTF > 0 {
			fmt.Fprintf(&b, " The ceiling %s measured: %s TFLOP/s, %s GB/s.", c, FormatNumber(rl.CeilTF), FormatNumber(rl.CeilGBs))
		} else {
			fmt.Fprintf(&b, " The ceiling phase %s has no row yet.", c)
		}
	}
	b.WriteString("\n\n| Point | Runs | TFLOP/s | GB/s | FLOP/byte | Bound by | Of the spec roof | SM clock held | Of the roof at that clock | Of the ceiling |\n|---|---:|---:|---:|---:|---|---:|---:|---:|---:|\n")
	var broken []string
	pct := func(point string, v float64) string {
		if v <= 0 {
			return "—"
		}
		if overRoof(v) {
			if !slices.Contains(broken, point) {
				broken = append(broken, point)
			}
			return fmt.Sprintf("⚠ %.0f %%", v)
		}
		return fmt.Sprintf("%.0f %%", v)
	}
	for _, pt := range rl.Points {
		clock := "not read"
		if pt.ClockMHz > 0 {
			clock = FormatNumber(pt.ClockMHz) + " MHz"
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", cell(pt.Point), pt.Runs, FormatNumber(pt.TFLOPS), FormatNumber(pt.GBs),
			FormatNumber(pt.Intensity), pt.Bound, pct(pt.Point, pt.SpecPct), clock, pct(pt.Point, pt.ClockPct), pct(pt.Point, pt.CeilPct))
	}
	if name := w.charts[p.ID].names[rooflineKey]; name != "" {
		fmt.Fprintf(&b, "\n![%s against its roofline](%s)\n", cell(ph.Label()), name)
	}
	fmt.Fprintf(&b, "\nEach run's FLOPs are `%s`, its bytes `%s`, its time `%s` s; achieved is their ratio, the mean over the point's runs. "+
		"A roof is the lower of the compute peak and bandwidth × FLOP/byte; the peak at the clock held is the SMs × FLOP a clock × the SM clock NVML read while the point ran (memory bandwidth as specified).\n",
		codeText(rl.Formulas[0]), codeText(rl.Formulas[1]), codeText(rl.Formulas[2]))
	if len(broken) > 0 {
		fmt.Fprintf(&b, "\n⚠ Above 100%% of a roof at %s: a broken measurement, not a record (check flops:, bytes: and seconds: against what a run does).\n", strings.Join(broken, ", "))
	}
	for _, n := range notes {
		fmt.Fprintf(&b, "\n- %s\n", cell(n))
	}
	return b.String()
}

// rooflineKey is the roofline chart among a phase's charts.
const rooflineKey = "\x00roofline"

// rooflineChart draws a phase's points on its board's roofline, log-log:
// the roof at the spec peak, and at the mean SM clock the points held; nil
// with no point.
func rooflineChart(ph *campaign.Phase, rl *record.Roofline) (svg []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			svg, err = nil, fmt.Errorf("drawing failed: %v", r)
		}
	}()
	if rl == nil || rl.Board == "" || len(rl.Points) == 0 {
		return nil, nil
	}
	board, _ := gpu.BoardByKey(rl.Board)
	pl := plot.New()
	pl.BackgroundColor = color.White
	pl.Title.Text = fmt.Sprintf("%s against the %s roofline (%s)", ph.Label(), rl.Board, rl.Dtype)
	pl.X.Label.Text, pl.Y.Label.Text = "arithmetic intensity, FLOP/byte", "TFLOP/s"
	pl.X.Scale, pl.Y.Scale = plot.LogScale{}, plot.LogScale{}
	pl.X.Tick.Marker, pl.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	pl.Add(plotter.NewGrid())
	lo, hi := math.Inf(1), math.Inf(-1)
	var mhz float64
	n := 0
	for _, p := range rl.Points {
		lo, hi = math.Min(lo, p.Intensity), math.Max(hi, p.Intensity)
		if p.ClockMHz > 0 {
			mhz += p.ClockMHz
			n++
		}
	}
	ridge := rl.SpecTF * 1000 / rl.MemGBs
	lo, hi = math.Min(lo, ridge)/4, math.Max(hi, ridge)*4
	line := func(peak float64) plotter.XYs {
		var xy plotter.XYs
		for x := lo; x <= hi*1.0001; x *= 1.25 {
			y, _ := roof(peak, rl.MemGBs, x)
			xy = append(xy, plotter.XY{X: x, Y: y})
		}
		return xy
	}
	if l, err := plotter.NewLine(line(rl.SpecTF)); err == nil {
		l.Color, l.Width = plotColor(0), vg.Points(1.5)
		pl.Add(l)
		pl.Legend.Add(fmt.Sprintf("roof at the spec peak, %s TFLOP/s at %s MHz", FormatNumber(rl.SpecTF), FormatNumber(board.SpecMHz)), l)
	}
	if n > 0 {
		at := mhz / float64(n)
		if peak, err := board.PeakTFLOPS(rl.Dtype, at); err == nil {
			if l, err := plotter.NewLine(line(peak)); err == nil {
				l.Color, l.Width, l.Dashes = plotColor(1), vg.Points(1.5), []vg.Length{vg.Points(4), vg.Points(3)}
				pl.Add(l)
				pl.Legend.Add(fmt.Sprintf("roof at the clock held, %s TFLOP/s at %s MHz (the points' mean)", FormatNumber(peak), FormatNumber(math.Round(at))), l)
			}
		}
	}
	pts := make(plotter.XYs, len(rl.Points))
	labels := make([]string, len(rl.Points))
	for i, p := range rl.Points {
		pts[i] = plotter.XY{X: p.Intensity, Y: math.Max(p.TFLOPS, 1e-6)}
		labels[i] = p.Point
	}
	labelledPoints(pl, pts, labels, color.RGBA{R: 40, G: 40, B: 40, A: 255}, "a point (mean of its runs)")
	pl.Legend.Top, pl.Legend.Left = true, true
	return svgOf(pl)
}

// stepPoint names step i of a phase as its rows are grouped: its sweep
// point ("m=64"), else its name.
func stepPoint(ph *campaign.Phase, units []*campaign.Step, i int, s runner.StepState) string {
	var unit *campaign.Unit
	if i < len(units) {
		unit = units[i].Unit
	}
	if point, _, _ := pointOf(ph, unit); point != "" {
		return point
	}
	return s.Name
}

// unitVars are the axis values the rows of step i may read in an
// expression (campaign.Sweep.ExprVars); nil outside a sweep.
func unitVars(ph *campaign.Phase, units []*campaign.Step, i int) map[string]any {
	if i >= len(units) || units[i].Unit == nil {
		return nil
	}
	return ph.Sweep.ExprVars(*units[i].Unit)
}

// rowNumbers are a row's numeric columns by name, as expressions read
// them.
func rowNumbers(row runner.Row) map[string]any {
	vals := make(map[string]any, len(row.Cols))
	for j, c := range row.Cols {
		if f, ok := row.Values[j].(float64); ok {
			vals[c] = f
		}
	}
	return vals
}

// undrawn are the header's words for each analysis block that has rows
// to read but could not be drawn from them (a roofline or floor whose
// expressions read nothing the rows have, a board not known, a model's
// config.json missing): a block said only inside itself is missed.
func (w *Writer) undrawn(st *runner.State) []string {
	var out []string
	for _, p := range st.Phases {
		ph := w.plan.Phase(p.ID)
		if ph == nil || !slices.ContainsFunc(p.Steps, func(s runner.StepState) bool { return len(s.Results) > 0 }) {
			continue
		}
		if ph.Roofline != nil {
			rl, notes := w.rooflineOf(ph, p, st)
			drawn := rl != nil && rl.Unknown == "" && len(rl.Points) > 0
			switch {
			case rl != nil && rl.Unknown != "":
				out = append(out, fmt.Sprintf("%s: its roofline could not be drawn: %s", ph.Label(), rl.Unknown))
			case !drawn:
				why := "no row gave its FLOPs, bytes and seconds"
				if len(notes) > 0 {
					why = notes[0]
				}
				out = append(out, fmt.Sprintf("%s: its roofline could not be drawn: %s", ph.Label(), why))
			}
		}
		if ph.Floor != nil {
			if fl := w.floorOf(ph, p, st); fl != nil && fl.Unknown != "" && len(fl.Points) == 0 {
				out = append(out, fmt.Sprintf("%s: its floor could not be drawn: %s", ph.Label(), fl.Unknown))
			}
		}
	}
	return out
}
