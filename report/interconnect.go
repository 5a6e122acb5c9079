package report

// The interconnect, from a phase's nvbandwidth rows: each GPU pair's
// peer read and write bandwidth side by side, and the write/read ratio,
// flagged below 0.5: behind some PCIe switches posted writes collapse
// (52 GB/s read, 7 written) while reads stay fast, and nothing else says
// so.

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/greenlight-run/greenlight/internal/files"

	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// writeCollapse is the write/read ratio under which a pair's writes are
// said to have collapsed.
const writeCollapse = 0.5

type pairBW struct{ read, write float64 }

// interconnectSection is the block of a phase whose steps read
// nvbandwidth's JSON: "" without a read and a write matrix of one kind.
func interconnectSection(ph *campaign.Phase, p runner.PhaseState) string {
	if !slices.ContainsFunc(ph.AllSteps(), func(s *campaign.Step) bool { return s.ResultsFormat == campaign.FormatNVBandwidth }) {
		return ""
	}
	// kind (the test's name without read/write) -> (src, dst) -> GB/s
	kinds := map[string]map[[2]int]*pairBW{}
	var order []string
	gpus := map[int]bool{}
	for _, s := range p.Steps {
		for _, row := range s.Results {
			v := map[string]any{}
			for i, c := range row.Cols {
				v[c] = row.Values[i]
			}
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
		label := s.Name
		if i < len(steps) {
			label = steps[i].Label()
		}
		labels, curves = append(labels, label), append(curves, xy)
	}
	return labels, curves
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
	pl.X.Label.Text, pl.Y.Label.Text = "message size, bytes", "bus bandwidth, GB/s (out-of-place)"
	pl.X.Scale, pl.Y.Scale = plot.LogScale{}, plot.LogScale{}
	pl.X.Tick.Marker, pl.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
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

// busSection is a phase's all-reduce (or sibling) table in short: the
// small messages' time (8 to 64 KiB: what a decode step's all-reduce
// sends) and the largest's bus bandwidth, a step a row, and the chart.
func (w *Writer) busSection(ph *campaign.Phase, p runner.PhaseState) string {
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
		fmt.Fprintf(&b, " %s | %s GB/s | %s GB/s |\n", sizeWords(big), FormatNumber(bigBus), FormatNumber(avg))
	}
	if b.Len() == 0 {
		return ""
	}
	if name := w.charts[p.ID].names[busKey]; name != "" {
		fmt.Fprintf(&b, "\n![%s: bus bandwidth by message size](%s)\n", cell(ph.Label()), name)
	}
	b.WriteString("\nSmall messages' time is what a decode step's all-reduce pays (hidden size × tokens × 2 bytes); bus bandwidth is nccl-tests' (algbw × 2(n−1)/n for an all-reduce).\n")
	return b.String()
}

// sizeWords is a message size in binary units: "128 MiB".
func sizeWords(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 && math.Mod(b, 1024) == 0 {
		b /= 1024
		i++
	}
	return FormatNumber(b) + " " + units[i]
}
