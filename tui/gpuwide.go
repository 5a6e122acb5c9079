package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/greenlight-run/greenlight/gpu"
)

// With room to spare (a wide, tall window) each GPU of this machine gets
// more than one line: the row, then what greenlight reads but a row has no
// room for (SM clock, PCIe traffic, the throttle reason), then a history
// chart of utilisation and memory over the last minutes, as nvtop draws.
// At 80x24 nothing changes: one line per GPU.

// wideMinWidth is the narrowest window that gets the extra lines.
const wideMinWidth = 120

// minDetailRows is what the detail pane (log, preview) keeps below them.
const minDetailRows = 12

// gpuLinesPer is how many lines each GPU gets: 1, 2 (with metrics) or 3
// (with the history chart).
func (m *model) gpuLinesPer() int {
	if m.opts.Sampler == nil || len(m.hosts) > 0 || m.w < wideMinWidth {
		return 1
	}
	n := len(m.opts.Sampler.Inventory().Devices)
	if n == 0 {
		return 1
	}
	room := m.h - m.phaseRows() - 9 - minDetailRows
	for per := 3; per > 1; per-- {
		if n*per <= room {
			return per
		}
	}
	return 1
}

// gpuCard is one GPU's lines when it gets more than one.
func (m *model) gpuCard(s gpu.Sample, width, per int) []string {
	out := []string{m.gpuRow(s, width, false)}
	if s.Lost {
		return out
	}
	indent := "   "
	metrics := indent + m.gpuMetrics(s)
	if per == 2 {
		// The chart shares the line with the metrics.
		room := width - ansi.StringWidth(metrics) - 3
		if room >= 10 {
			metrics += " · " + m.historyChart(s, room, false)
		}
		return append(out, ansi.Truncate(metrics, width, "…"))
	}
	out = append(out, ansi.Truncate(metrics, width, "…"))
	return append(out, ansi.Truncate(indent+m.historyChart(s, width-len(indent), true), width, "…"))
}

// gpuMetrics is the line of clocks, PCIe and throttling.
func (m *model) gpuMetrics(s gpu.Sample) string {
	parts := []string{
		"SM " + s.SMClock.Format("%.0f MHz"),
		"memory clock " + s.MemClock.Format("%.0f MHz"),
		"PCIe rx " + s.PCIeRx.Format("%s") + ", tx " + s.PCIeTx.Format("%s"),
	}
	if s.PCIeRx.OK {
		parts[2] = fmt.Sprintf("PCIe rx %s, tx %s", rate(s.PCIeRx), rate(s.PCIeTx))
	}
	if s.MemUtil.OK {
		parts = append(parts, fmt.Sprintf("memory bandwidth %.0f%%", s.MemUtil.V))
	}
	if len(s.Throttle) > 0 {
		parts = append(parts, m.st.warn.Render("throttled: "+strings.Join(s.Throttle, ", ")))
	} else {
		parts = append(parts, "not throttled")
	}
	return strings.Join(parts, " · ")
}

// rate prints bytes per second with a unit.
func rate(x gpu.Metric) string {
	if !x.OK {
		return "n/a"
	}
	v := x.V
	for _, u := range []string{"B/s", "KB/s", "MB/s", "GB/s"} {
		if v < 1000 || u == "GB/s" {
			if v < 10 && u != "B/s" {
				return fmt.Sprintf("%.1f %s", v, u)
			}
			return fmt.Sprintf("%.0f %s", v, u)
		}
		v /= 1000
	}
	return ""
}

// historyChart draws utilisation and memory over the last minutes, each a
// sparkline of 10 s cells, with what the span is.
func (m *model) historyChart(s gpu.Sample, width int, both bool) string {
	if m.opts.Sampler == nil {
		return ""
	}
	label := func(name string, cells int, vals []float32) string {
		return name + " " + m.st.barFull.Render(m.spark(vals, cells))
	}
	cells := width - 6
	if both {
		cells = (width - len("util  · mem  · last 10m, 10 s a cell")) / 2
	}
	cells = max(4, min(cells, 60))
	pts := m.opts.Sampler.History(s.Device.ID(), cells*sparkBucket)
	span := fmt.Sprintf("last %s, 10 s a cell", dur(time.Duration(cells*sparkBucket)*time.Second))
	util := label("util", cells, bucketed(pts, sparkBucket, func(p gpu.Point) float32 { return p.Util }))
	if !both {
		return util
	}
	total := float32(s.Device.MemTotal) / (1 << 30)
	mem := label("mem", cells, bucketed(pts, sparkBucket, func(p gpu.Point) float32 {
		if p.MemUsed < 0 || total <= 0 {
			return -1
		}
		return p.MemUsed / total * 100
	}))
	return util + " · " + mem + " · " + m.st.dim.Render(span)
}
