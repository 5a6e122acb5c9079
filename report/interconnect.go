package report

// The interconnect, from a phase's nvbandwidth rows: each GPU pair's
// peer read and write bandwidth side by side, and the write/read ratio,
// flagged below 0.5: behind some PCIe switches posted writes collapse
// (52 GB/s read, 7 written) while reads stay fast, and nothing else says
// so.

import (
	"cmp"
	"fmt"
	"image/color"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/greenlight-run/greenlight/compare"
	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/internal/files"

	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/trace"
)

// writeCollapse is the write/read ratio under which a pair's writes are
// said to have collapsed.
const writeCollapse = 0.5

type pairBW struct{ read, write float64 }

// interconnectSection is the block of a phase whose steps read
// nvbandwidth's JSON: "" without a read and a write matrix of one kind.
func (*Writer) interconnectSection(ph *campaign.Phase, p runner.PhaseState, _ *runner.State) string {
	if !slices.ContainsFunc(ph.AllSteps(), func(s *campaign.Step) bool { return s.ResultsFormat == campaign.FormatNVBandwidth }) {
		return ""
	}
	// kind (the test's name without read/write) -> (src, dst) -> GB/s
	kinds := map[string]map[[2]int]*pairBW{}
	var order []string
	gpus := map[int]bool{}
	for _, s := range p.Steps {
		for _, row := range s.Results {
			v := rowValues(row)
			test, _ := v["test"].(string)
			src, ok1 := v["src"].(float64)
			dst, ok2 := v["dst"].(float64)
			gbs, ok3 := v["gbs"].(float64)
			if !ok1 || !ok2 || !ok3 {
				continue
			}
			var kind string
			var write bool
			switch {
			case strings.Contains(test, "_write_"):
				kind, write = strings.Replace(test, "_write_", "_", 1), true
			case strings.Contains(test, "_read_"):
				kind = strings.Replace(test, "_read_", "_", 1)
			default:
				continue
			}
			if kinds[kind] == nil {
				kinds[kind] = map[[2]int]*pairBW{}
				order = append(order, kind)
			}
			k := [2]int{int(src), int(dst)}
			if kinds[kind][k] == nil {
				kinds[kind][k] = &pairBW{}
			}
			if write {
				kinds[kind][k].write = gbs
			} else {
				kinds[kind][k].read = gbs
			}
			gpus[int(src)], gpus[int(dst)] = true, true
		}
	}
	var b strings.Builder
	for _, kind := range order {
		pairs := kinds[kind]
		both := 0
		for _, bw := range pairs {
			if bw.read > 0 && bw.write > 0 {
				both++
			}
		}
		if both == 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\n### The interconnect: peer reads and writes\n")
		}
		var ids []int
		for g := range gpus {
			ids = append(ids, g)
		}
		slices.Sort(ids)
		fmt.Fprintf(&b, "\n`%s`: GB/s from the row's GPU to the column's, read / write, and write ÷ read (⚠ under %.1f: the writes collapse while the reads do not, as behind some PCIe switches)\n\n|  |", codeText(kind), writeCollapse)
		for _, g := range ids {
			fmt.Fprintf(&b, " to GPU %d |", g)
		}
		b.WriteString("\n|---|" + strings.Repeat("---:|", len(ids)) + "\n")
		var collapsed []string
		for _, s := range ids {
			fmt.Fprintf(&b, "| GPU %d |", s)
			for _, d := range ids {
				bw := pairs[[2]int{s, d}]
				switch {
				case s == d || bw == nil:
					b.WriteString(" — |")
				case bw.read > 0 && bw.write > 0:
					ratio := bw.write / bw.read
					mark := ""
					if ratio < writeCollapse {
						mark = "⚠ "
						collapsed = append(collapsed, fmt.Sprintf("%d → %d", s, d))
					}
					fmt.Fprintf(&b, " %s / %s (%s%.2f) |", FormatNumber(bw.read), FormatNumber(bw.write), mark, ratio)
				default:
					fmt.Fprintf(&b, " %s / %s |", orDash(bw.read), orDash(bw.write))
				}
			}
			b.WriteString("\n")
		}
		if len(collapsed) > 0 {
			fmt.Fprintf(&b, "\n⚠ Posted writes collapsed on %d pair(s): %s. Collectives that write to peers (all-reduce over PCIe) run at the write's rate.\n", len(collapsed), strings.Join(collapsed, ", "))
		}
	}
	return b.String()
}

func orDash(v float64) string {
	if v <= 0 {
		return "—"
	}
	return FormatNumber(v)
}

// busKey is the bus bandwidth chart among a phase's charts.
const busKey = "\x00busbw"

func readsNCCLTests(ph *campaign.Phase) bool {
	return slices.ContainsFunc(ph.AllSteps(), func(s *campaign.Step) bool { return s.ResultsFormat == campaign.FormatNCCLTests })
}

// busCurves are a phase's nccl-tests rows as curves, one a step (a GPU
// count, an algorithm): size in bytes against out-of-place bus bandwidth.
func busCurves(ph *campaign.Phase, p runner.PhaseState) (labels []string, curves []plotter.XYs) {
	steps := ph.AllSteps()
	for i, s := range p.Steps {
		var xy plotter.XYs
		for _, row := range s.Results {
			var size, bus float64
			for j, c := range row.Cols {
				switch c {
				case "size_b":
					size, _ = row.Values[j].(float64)
				case "oop_busbw_gbs":
					bus, _ = row.Values[j].(float64)
				}
			}
			if size > 0 && bus > 0 {
				xy = append(xy, plotter.XY{X: size, Y: bus})
			}
		}
		if len(xy) < 2 {
			continue
		}
		label := fmt.Sprintf("step %d", i+1)
		if g := curveGPUs(s.Results); g > 0 {
			label += fmt.Sprintf(": %d GPUs", g)
		} else if i < len(steps) {
			label += ": " + steps[i].Label()
		}
		labels, curves = append(labels, label), append(curves, xy)
	}
	return labels, curves
}

// rowValues are a row's columns by name, as the format readers' helpers
// (runner.NCCLCollective, campaign.MeasurementOf) take them.
func rowValues(row runner.Row) map[string]any {
	v := make(map[string]any, len(row.Cols))
	for i, c := range row.Cols {
		v[c] = row.Values[i]
	}
	return v
}

// curveGPUs is the GPU count a step's nccl-tests rows say (the last row
// that tells it, runner.NCCLCollective); 0 when none does.
func curveGPUs(rows []runner.Row) int {
	g := 0
	for _, row := range rows {
		v := rowValues(row)
		if _, n, _ := runner.NCCLCollective(v); n > 0 {
			g = n
		}
	}
	return g
}

// updateBusChart draws a phase's bus bandwidth against message size,
// log-log, a curve a step, when its rows changed.
func (w *Writer) updateBusChart(ph *campaign.Phase, p *runner.PhaseState) (err error) {
	rows := 0
	for _, s := range p.Steps {
		rows += len(s.Results)
	}
	if c, ok := w.charts[p.ID]; rows == 0 || ok && c.rows == rows && c.attempt == p.Attempt {
		return nil
	}
	names := map[string]string{}
	w.charts[p.ID] = charted{rows: rows, attempt: p.Attempt, names: names}
	labels, curves := busCurves(ph, *p)
	if len(curves) == 0 {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("drawing the bus bandwidth failed: %v", r)
		}
	}()
	pl := plot.New()
	pl.BackgroundColor = color.White
	pl.Title.Text = fmt.Sprintf("%s: bus bandwidth by message size", ph.Label())
	pl.X.Label.Text, pl.Y.Label.Text = "message size", "bus bandwidth, GB/s (out-of-place)"
	pl.X.Scale, pl.Y.Scale = plot.LogScale{}, plot.LogScale{}
	pl.X.Tick.Marker, pl.Y.Tick.Marker = byteTicks{}, plot.LogTicks{Prec: -1}
	pl.Add(plotter.NewGrid())
	for i, xy := range curves {
		ln, sc, err := plotter.NewLinePoints(xy)
		if err != nil {
			continue
		}
		ln.Color, sc.Color = plotColor(i), plotColor(i)
		sc.Shape, sc.Radius = draw.CircleGlyph{}, vg.Points(2)
		pl.Add(ln, sc)
		pl.Legend.Add(labels[i], ln, sc)
	}
	pl.Legend.Top, pl.Legend.Left = true, true
	svg, err := svgOf(pl)
	if err != nil {
		return err
	}
	name := chartName(w.path, ph.ID, "busbw")
	if err := files.WriteAtomic(filepath.Join(filepath.Dir(w.path), name), svg); err != nil {
		return err
	}
	names[busKey] = name
	return nil
}

// byteTicks mark a log axis of bytes in binary units (1 KiB, 32 KiB,
// 1 MiB), at powers of two: labelled every 2^5 where the axis spans
// several of those, else every 2^2 or 2^1; the others unlabelled.
type byteTicks struct{}

func (byteTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= lo {
		return nil
	}
	a, b := int(math.Floor(math.Log2(lo))), int(math.Ceil(math.Log2(hi)))
	every := 5 // 32 B, 1 KiB, 32 KiB, 1 MiB: evenly spaced, the round ones among them
	switch span := b - a; {
	case span < 8:
		every = 1
	case span < 16:
		every = 2
	}
	var out []plot.Tick
	for e := a; e <= b; e++ {
		v := math.Exp2(float64(e))
		if v < lo || v > hi {
			continue
		}
		t := plot.Tick{Value: v}
		if e%every == 0 {
			t.Label = campaign.SizeText(v)
		}
		out = append(out, t)
	}
	return out
}

// busSection is a phase's all-reduce (or sibling) table in short: the
// small messages' time (8 to 64 KiB: what a decode step's all-reduce
// sends) and the largest's bus bandwidth, a step a row, and the chart.
func (w *Writer) busSection(ph *campaign.Phase, p runner.PhaseState, _ *runner.State) string {
	if !readsNCCLTests(ph) {
		return ""
	}
	steps := ph.AllSteps()
	var b strings.Builder
	for i, s := range p.Steps {
		small := map[float64]float64{}
		var big, bigBus, avg float64
		for _, row := range s.Results {
			v := map[string]float64{}
			for j, c := range row.Cols {
				if f, ok := row.Values[j].(float64); ok {
					v[c] = f
				}
			}
			if a, ok := v["avg_busbw_gbs"]; ok {
				avg = a
			}
			if size := v["size_b"]; size >= 8<<10 && size <= 64<<10 {
				small[size] = v["oop_time_us"]
			}
			if v["size_b"] > big {
				big, bigBus = v["size_b"], v["oop_busbw_gbs"]
			}
		}
		if big == 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\n### The collective by message size\n\n| Step | 8 KiB | 16 KiB | 32 KiB | 64 KiB | Largest | Its bus bandwidth | Average bus bandwidth |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
		}
		label := s.Name
		if i < len(steps) {
			label = steps[i].Label()
		}
		fmt.Fprintf(&b, "| %s |", cell(label))
		for _, k := range []float64{8 << 10, 16 << 10, 32 << 10, 64 << 10} {
			if t, ok := small[k]; ok {
				fmt.Fprintf(&b, " %s µs |", FormatNumber(t))
			} else {
				b.WriteString(" — |")
			}
		}
		fmt.Fprintf(&b, " %s | %s GB/s | %s GB/s |\n", campaign.SizeText(big), FormatNumber(bigBus), FormatNumber(avg))
	}
	if b.Len() == 0 {
		return ""
	}
	if name := w.charts[p.ID].names[busKey]; name != "" {
		fmt.Fprintf(&b, "\n![%s: bus bandwidth by message size](%s)\n", cell(ph.Label()), name)
	}
	b.WriteString("\nSmall messages' time is what a decode step's all-reduce pays (hidden size × tokens × 2 bytes); bus bandwidth is nccl-tests' (algbw × 2(n−1)/n for an all-reduce).\n")
	b.WriteString(w.smallAgainstBaseline(ph, p))
	b.WriteString(w.againstKind(ph, p))
	return b.String()
}

// againstKind holds each all-reduce curve of the phase against what
// boxes of its kind reach (gpu.BoxKinds, each figure with its source):
// its best bus bandwidth at 1 MiB and above, and its small-message time.
// A box under gpu.BelowKind of its kind's low figure is stamped with what
// usually causes it and how to check each. "" without a curve.
func (w *Writer) againstKind(ph *campaign.Phase, p runner.PhaseState) string {
	curves := w.allReduceCurves(&runner.State{Phases: []runner.PhaseState{p}})
	if len(curves) == 0 {
		return ""
	}
	board, why, ok := w.board(ph)
	var b strings.Builder
	b.WriteString("\n#### The box against its kind\n\n")
	if !ok {
		fmt.Fprintf(&b, "Not held against a kind: %s.\n", why)
		return b.String()
	}
	for _, c := range curves {
		n := float64(c.gpus)
		best, at := 0.0, 0.0
		for _, pt := range c.pts {
			if bus := pt.size / (pt.us * 1e-6) / 1e9 * 2 * (n - 1) / n; pt.size >= 1<<20 && bus > best {
				best, at = bus, pt.size
			}
		}
		k, known := gpu.KindOf(board.Key, c.gpus)
		switch {
		case !known:
			var kinds []string
			for _, x := range gpu.BoxKinds {
				kinds = append(kinds, fmt.Sprintf("%d× %s", x.GPUs, x.Board))
			}
			fmt.Fprintf(&b, "- %s: %d × %s is no kind greenlight has figures for (it has %s).\n", c.label, c.gpus, board.Key, strings.Join(kinds, ", "))
			continue
		case best == 0:
			fmt.Fprintf(&b, "- %s: no message of 1 MiB or more: its bus bandwidth is not held against its kind's (%s–%s GB/s).\n", c.label, FormatNumber(k.BusLo), FormatNumber(k.BusHi))
			continue
		}
		kind := fmt.Sprintf("%d× %s, %s: %s–%s GB/s bus bandwidth", k.GPUs, board.Key, k.Joined, FormatNumber(k.BusLo), FormatNumber(k.BusHi))
		if k.SmallUS > 0 {
			kind += fmt.Sprintf(", %s µs a small message", FormatNumber(k.SmallUS))
		}
		fmt.Fprintf(&b, "- %s: at best %s GB/s bus bandwidth (at %s), %.0f%% of its kind's low figure (%s; %s)", c.label, FormatNumber(best), campaign.SizeText(at), 100*best/k.BusLo, kind, k.Source)
		if k.SmallUS > 0 {
			fmt.Fprintf(&b, "; its small-message time %s µs", FormatNumber(c.latency()))
		}
		if best >= gpu.BelowKind*k.BusLo {
			b.WriteString(": within its kind.\n")
			continue
		}
		fmt.Fprintf(&b, ".\n  ⚠ Well below its kind (under %.0f%% of its low figure)", 100*gpu.BelowKind)
		if k.Untuned > 0 && math.Abs(best-k.Untuned) <= 0.15*k.Untuned {
			fmt.Fprintf(&b, "; near what such a box gives with NCCL's defaults (%s GB/s)", FormatNumber(k.Untuned))
		}
		b.WriteString(". What usually causes it, and how to check each:\n")
		for _, cause := range gpu.BelowKindCauses {
			fmt.Fprintf(&b, "  - %s\n", cell(cause))
		}
	}
	return b.String()
}

// smallKey is one step (or a sweep's point) and one message size.
type smallKey struct {
	at   string // "step 2", or a sweep's point
	size float64
}

// smallTimes are a phase's out-of-place times at 8 to 64 KiB, by step (or
// point) and size, each run's.
func smallTimes(rows func(yield func(at string, cols []string, vals []any))) map[smallKey][]float64 {
	out := map[smallKey][]float64{}
	rows(func(at string, cols []string, vals []any) {
		var size, t float64
		for j, c := range cols {
			f, _ := vals[j].(float64)
			switch c {
			case "size_b":
				size = f
			case "oop_time_us":
				t = f
			}
		}
		if size >= 8<<10 && size <= 64<<10 && t > 0 {
			k := smallKey{at, size}
			out[k] = append(out[k], t)
		}
	})
	return out
}

// smallAgainstBaseline holds the small messages' all-reduce time against
// the box's own baseline (the campaign's baseline: record, a previous
// campaign): Welch's t-test at 5% where both sides ran twice or more,
// else the baseline's tolerance; a time worse beyond noise is marked ✗,
// and said once in the phase's block. "" without a baseline or rows of
// this phase in it.
func (w *Writer) smallAgainstBaseline(ph *campaign.Phase, p runner.PhaseState) string {
	if w.baseline == nil || w.baseline.rec == nil {
		return ""
	}
	steps := ph.AllSteps()
	atOf := func(point string, step int) string {
		if point != "" {
			return point
		}
		return fmt.Sprintf("step %d", step)
	}
	cur := smallTimes(func(yield func(string, []string, []any)) {
		for i, s := range p.Steps {
			point := ""
			if i < len(steps) && ph.Sweep != nil && steps[i].Unit != nil && len(ph.Sweep.Axes) > 0 {
				point = ph.Sweep.Key(*steps[i].Unit)
			}
			for _, row := range s.Results {
				yield(atOf(point, i+1), row.Cols, row.Values)
			}
		}
	})
	old := smallTimes(func(yield func(string, []string, []any)) {
		for _, r := range w.baseline.rec.Rows {
			if r.Phase != ph.ID {
				continue
			}
			cols := make([]string, 0, len(r.Values))
			vals := make([]any, 0, len(r.Values))
			for k, v := range r.Values {
				cols, vals = append(cols, k), append(vals, v)
			}
			yield(atOf(r.Point, r.Step), cols, vals)
		}
	})
	var keys []smallKey
	for k := range cur {
		if len(old[k]) > 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	slices.SortFunc(keys, func(a, b smallKey) int {
		if c := strings.Compare(a.at, b.at); c != 0 {
			return c
		}
		return int(a.size - b.size)
	})
	o := w.baseline.opts
	var b strings.Builder
	worse := 0
	fmt.Fprintf(&b, "\n#### Small messages against the baseline\n\nThe out-of-place time at 8 to 64 KiB against the baseline's (`%s`), by the comparison's one verdict: Welch's t-test at %s%% where both sides ran twice or more, one run against the other side's repeats by their prediction interval, else a tolerance of %s%%; ✗ where it is slower beyond noise.\n\n| Step | Size | Baseline | Now | Change | Verdict |\n|---|---:|---:|---:|---:|---|\n",
		cell(filepath.Base(w.baseline.path)), FormatNumber(100*o.Level()), FormatNumber(o.Tolerance*100))
	for _, k := range keys {
		l := compare.Judge(compare.StatOf(old[k]), compare.StatOf(cur[k]), campaign.Lower, o)
		beyond := "beyond noise"
		if l.ByTolerance {
			beyond = "beyond the tolerance"
		}
		verdict := "within noise"
		switch l.Verdict {
		case compare.Better:
			verdict = "faster, " + beyond
		case compare.Worse:
			verdict, worse = "✗ slower, "+beyond, worse+1
		}
		change := "—" // a zero baseline: no share to say
		if !math.IsNaN(l.Change) {
			change = fmt.Sprintf("%+.1f%%", l.Change*100)
		}
		fmt.Fprintf(&b, "| %s | %s | %s µs (n=%d) | %s µs (n=%d) | %s | %s |\n", cell(k.at), campaign.SizeText(k.size), FormatNumber(l.Old.Mean), l.Old.N, FormatNumber(l.New.Mean), l.New.N, change, verdict)
	}
	if worse > 0 {
		fmt.Fprintf(&b, "\n**✗ %d small-message time(s) slower than the baseline beyond noise**: what a decode step's all-reduce pays; check the topology and NCCL settings against the baseline's conditions.\n", worse)
	}
	return b.String()
}

// allReduceKernel names a collective's all-reduce kernel: NCCL's
// (ncclDevKernel_AllReduce_Sum_bf16_RING_LL), vLLM's custom all-reduce
// (cross_device_reduce_1stage), PyTorch's symmetric-memory one.
var allReduceKernel = regexp.MustCompile(`(?i)all_?reduce|cross_device_reduce`)

// allReduceSection ties a capture's all-reduce kernels to the
// interconnect measured on the box: their share of the GPU's kernel time
// and of the profiler's step, their time per call, and beside it where
// that time falls on the campaign's all-reduce curve of the capture's own
// GPU count (the message size that takes as long, with the tokens it
// carries where a floor: names the model), or that no such curve ran, or
// that the time lies outside every size the curve measured. Each figure
// names what it rests on. "" when no trace holds an all-reduce kernel.
func (w *Writer) allReduceSection(p runner.PhaseState, sums []*trace.Summary, st *runner.State) string {
	tr := tracedAllReduce(sums)
	if tr.ranks == 0 {
		return ""
	}
	perCall := tr.us / float64(tr.calls)
	var b strings.Builder
	fmt.Fprintf(&b, "\n#### All-reduce in this capture\n\nAll-reduce kernels (NCCL's, vLLM's custom all-reduce): %.1f%% of the GPU's kernel time", 100*tr.us/tr.kernUS)
	if tr.stepped > 0 {
		fmt.Fprintf(&b, ", %.1f%% of a profiler step (%s µs of its median %s µs)", 100*tr.perStep/tr.stepUS, FormatNumber(tr.perStep/float64(tr.stepped)), FormatNumber(tr.stepUS/float64(tr.stepped)))
	}
	fmt.Fprintf(&b, "; %s µs a call over %d calls (%d rank(s)).", FormatNumber(perCall), tr.calls, tr.ranks)
	curves := w.allReduceCurves(st)
	if len(curves) == 0 {
		if w.readsAnyNCCLTests() {
			b.WriteString(" No all-reduce curve was measured in this campaign (its nccl-tests tables hold no all-reduce, or no size large enough to tell its GPU count): where this time falls on the bus is not known.")
		}
		b.WriteString("\n")
		return b.String()
	}
	group, groupBasis := w.captureGPUs(p, len(sums))
	if group == 0 {
		fmt.Fprintf(&b, " The capture's GPU count is not known (no capture: ranks, no tensor-parallel size in a service it uses, one trace): it is not held against the campaign's all-reduce curves (%s).\n", curveCounts(curves))
		return b.String()
	}
	var c *allReduceCurve
	for i := range curves {
		if curves[i].gpus == group && (c == nil || len(curves[i].pts) > len(c.pts)) {
			c = &curves[i]
		}
	}
	if c == nil {
		fmt.Fprintf(&b, " No all-reduce curve at %d GPUs ran (the capture's %d GPUs: %s; the campaign's curves: %s): a curve of another GPU count does not say what a call pays here.\n", group, group, groupBasis, curveCounts(curves))
		return b.String()
	}
	first, last := c.pts[0], c.pts[len(c.pts)-1]
	from := fmt.Sprintf("the %d-GPU curve of %s, its GPU count from %s; the capture's %d GPUs from %s", c.gpus, c.label, c.basis, group, groupBasis)
	switch {
	case perCall < first.us:
		fmt.Fprintf(&b, " That is below every size the curve measured: its smallest message, %s, takes %s µs (%s). The capture's calls are faster than NCCL's smallest message on this box: a custom all-reduce, or a time the curve cannot place.", campaign.SizeText(first.size), FormatNumber(first.us), from)
	case perCall > last.us:
		fmt.Fprintf(&b, " That is above every size the curve measured: its largest message, %s, takes %s µs (%s). The calls pay more than the bus moves in that time: synchronisation, stragglers, or a message larger than the curve.", campaign.SizeText(last.size), FormatNumber(last.us), from)
	default:
		at := first
		for _, pt := range c.pts {
			if pt.us <= perCall && pt.size > at.size {
				at = pt
			}
		}
		fmt.Fprintf(&b, " On this box all_reduce_perf at %d GPUs takes %s µs at %s (%s)", c.gpus, FormatNumber(at.us), campaign.SizeText(at.size), from)
		if h, of := w.hiddenSize(p.ID); h > 0 {
			fmt.Fprintf(&b, ": the message of %s tokens at hidden size %d (%s; hidden × tokens × 2 bytes)", FormatNumber(math.Round(at.size/float64(2*h))), h, of)
		}
		b.WriteString(". A decode step's calls slower than that size's time pay more than the bus: launch, synchronisation, or a smaller message than assumed.")
	}
	b.WriteString("\n")
	return b.String()
}

// traced is what a capture's traces say of its all-reduce kernels:
// their time and the kernels' (µs, over the ranks), their time a profiler
// step summed over the ranks that have steps (perStep, of stepped ranks;
// stepUS their steps' median times summed), their calls and the ranks
// that made any.
type traced struct {
	us, kernUS, perStep, stepUS float64
	calls, ranks, stepped       int
}

// perStepMs is the all-reduce a profiler step, the mean over the ranks
// with steps, in ms; false without one.
func (t traced) perStepMs() (float64, bool) {
	if t.stepped == 0 {
		return 0, false
	}
	return t.perStep / float64(t.stepped) / 1000, true
}

func tracedAllReduce(sums []*trace.Summary) traced {
	var out traced
	for _, s := range sums {
		var t float64
		n := 0
		for _, k := range s.Top {
			if allReduceKernel.MatchString(k.Name) {
				t, n = t+k.TotalUS, n+k.Count
			}
		}
		if n == 0 || s.KernelUS <= 0 {
			continue
		}
		out.ranks++
		out.us, out.kernUS, out.calls = out.us+t, out.kernUS+s.KernelUS, out.calls+n
		if s.Steps > 0 && s.StepUS > 0 {
			out.stepped++
			out.perStep += t / float64(s.Steps)
			out.stepUS += s.StepUS
		}
	}
	return out
}

// allReduceCurve is one all-reduce curve the campaign measured: a step's
// nccl-tests rows of one GPU count, by size.
type allReduceCurve struct {
	label string // "`interconnect` step 3 (all_reduce_perf -g 8)"
	gpus  int
	basis string // where the GPU count comes from
	pts   []curvePoint
}

type curvePoint struct{ size, us float64 }

// allReduceCurves are the campaign's all-reduce curves: from every step
// of a phase that reads nccl-tests' tables, whatever its run: says, the
// rows runner.NCCLCollective tells as an all-reduce, by GPU count; sizes
// ascending, out-of-place times.
func (w *Writer) allReduceCurves(st *runner.State) []allReduceCurve {
	var out []allReduceCurve
	for _, p := range st.Phases {
		ph := w.plan.Phase(p.ID)
		if ph == nil || !readsNCCLTests(ph) {
			continue
		}
		steps := ph.AllSteps()
		for i, s := range p.Steps {
			label := fmt.Sprintf("`%s` step %d", codeText(ph.ID), i+1)
			if i < len(steps) {
				label += " (" + cell(steps[i].Label()) + ")"
			}
			byGPUs := map[int]*allReduceCurve{}
			var sized []map[string]any
			for _, row := range s.Results {
				v := rowValues(row)
				if _, ok := v["size_b"].(float64); ok {
					sized = append(sized, v)
				}
			}
			// The GPU count of a table without a header is told by its
			// large messages; its small ones (0.00 GB/s) are of the same run.
			told, toldBasis := 0, ""
			for _, v := range sized {
				if c, g, basis := runner.NCCLCollective(v); c == "all_reduce" && g > 0 {
					told, toldBasis = g, basis
				}
			}
			for _, v := range sized {
				c, g, basis := runner.NCCLCollective(v)
				if c != "all_reduce" && (c != "" || v["redop"] != "sum") || told == 0 {
					continue
				}
				if g == 0 {
					g, basis = told, toldBasis
				}
				size, _ := v["size_b"].(float64)
				us, _ := v["oop_time_us"].(float64)
				if size <= 0 || us <= 0 {
					continue
				}
				if byGPUs[g] == nil {
					byGPUs[g] = &allReduceCurve{label: label, gpus: g, basis: basis}
				}
				byGPUs[g].pts = append(byGPUs[g].pts, curvePoint{size, us})
			}
			for _, g := range slices.Sorted(maps.Keys(byGPUs)) {
				c := byGPUs[g]
				slices.SortFunc(c.pts, func(a, b curvePoint) int { return cmp.Compare(a.size, b.size) })
				out = append(out, *c)
			}
		}
	}
	return out
}

// curveCounts is the curves' GPU counts in words: "2 GPUs (`ic` step 1),
// 4 GPUs (`ic` step 2)".
func curveCounts(curves []allReduceCurve) string {
	var parts []string
	for _, c := range curves {
		parts = append(parts, fmt.Sprintf("%d GPUs (%s)", c.gpus, c.label))
	}
	return strings.Join(parts, ", ")
}

// readsAnyNCCLTests says whether a phase of the campaign reads
// nccl-tests' tables.
func (w *Writer) readsAnyNCCLTests() bool {
	return slices.ContainsFunc(w.plan.Phases, readsNCCLTests)
}

// captureGPUs is the GPU count of a capture's all-reduce group, and
// what says so: the tensor-parallel size of the service its phase uses
// (the all-reduce's group, whatever the pipeline stages), else its
// capture: ranks, else its traces, one a rank, where there are several;
// 0 when nothing says.
func (w *Writer) captureGPUs(p runner.PhaseState, traces int) (int, string) {
	if tp, _, said := w.plan.ParallelOf(p.ID); tp > 1 {
		return tp, said
	}
	if ph := w.plan.Phase(p.ID); ph != nil && ph.Capture != nil && ph.Capture.Ranks > 0 {
		if ph.Capture.Inferred != "" {
			return ph.Capture.Ranks, ph.Capture.Inferred
		}
		return ph.Capture.Ranks, fmt.Sprintf("its capture: ranks: %d", ph.Capture.Ranks)
	}
	if traces > 1 {
		return traces, fmt.Sprintf("its %d traces, one a rank", traces)
	}
	return 0, ""
}

// hiddenSize is the hidden size of the model the capture's phase
// serves (the model: of a service it uses), else of the model a floor:
// names, with what says so; 0 when none does or its config.json cannot be
// read.
func (w *Writer) hiddenSize(phaseID string) (int, string) {
	for _, n := range w.plan.UsedPhases(phaseID) {
		if svc := w.plan.Phase(n); svc != nil && svc.Service != nil && svc.Service.Model != "" {
			if c, err := w.modelConfig(svc.Service.Model); err == nil && c.Hidden > 0 {
				return c.Hidden, "the config.json of " + n + "'s model"
			}
		}
	}
	for _, ph := range w.plan.Phases {
		if ph.Floor != nil && ph.Floor.Model != "" {
			if c, err := w.modelConfig(ph.Floor.Model); err == nil && c.Hidden > 0 {
				return c.Hidden, "the config.json of " + ph.ID + "'s floor"
			}
		}
	}
	return 0, ""
}
