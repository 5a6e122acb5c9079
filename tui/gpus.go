package tui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/greenlight-run/greenlight/gpu"
)

func shortName(n string) string {
	n = strings.TrimPrefix(n, "NVIDIA ")
	if f := strings.Fields(n); len(f) > 0 {
		return f[0]
	}
	return n
}

// gpuRow: index, name, utilization bar, memory bar with GiB, temperature,
// power/limit, sparkline, and a flag for a foreign process.
func (m *model) gpuRow(s gpu.Sample, width int) string {
	name := fmt.Sprintf("%-2d %-5s", s.Device.Index, ansi.Truncate(shortName(s.Device.Name), 5, ""))
	if s.Lost {
		return ansi.Truncate(name+" "+m.st.bad.Render("lost: "+s.LostWhy), width, "…")
	}
	barW := max(5, min(16, (width-60)/3+6))
	var util string
	if s.Util.OK {
		util = m.bar(s.Util.V/100, barW) + fmt.Sprintf(" %3.0f%%", s.Util.V)
	} else {
		util = fmt.Sprintf("%-*s", barW+5, "util n/a")
	}
	mem := fmt.Sprintf("%-*s", barW+12, "mem n/a")
	if s.MemUsed.OK && s.Device.MemTotal > 0 {
		mem = m.bar(s.MemUsed.V/float64(s.Device.MemTotal), barW) + fmt.Sprintf(" %3s/%sGiB", gib(s.MemUsed.V), gib(float64(s.Device.MemTotal)))
	}
	temp := s.Temp.Format("%2.0f" + m.gl.degC)
	power := s.Power.Format("%3.0f") + "/" + s.PowerLimit.Format("%.0fW")
	row := name + " " + util + " " + mem + " " + fmt.Sprintf("%5s %9s", temp, power)
	var foreign []string
	for _, p := range s.Procs {
		if !p.Campaign {
			foreign = append(foreign, fmt.Sprintf("%d", p.PID))
		}
	}
	flag := ""
	if len(foreign) > 0 {
		flag = " " + m.st.bad.Render("!foreign "+strings.Join(foreign, ","))
	}
	if len(s.Throttle) > 0 && flag == "" {
		flag = " " + m.st.warn.Render(strings.Join(s.Throttle, ","))
	}
	room := width - lipgloss.Width(row) - lipgloss.Width(flag) - 1
	if room >= 4 && m.opts.Sampler != nil {
		cells := min(room, 60)
		vals := sparkBuckets(m.opts.Sampler.History(s.Device.Index, cells*sparkBucket), sparkBucket)
		row += " " + m.st.barFull.Render(m.spark(vals, cells))
	}
	return ansi.Truncate(row+flag, width, "…")
}

func (m *model) gpusView(width, maxRows int) []string {
	if m.opts.Sampler == nil {
		return []string{m.st.dim.Render("no GPU source")}
	}
	inv := m.opts.Sampler.Inventory()
	if len(inv.Devices) == 0 {
		why := inv.Why
		if why == "" {
			why = "no devices"
		}
		return []string{m.st.warn.Render(ansi.Truncate("no GPU: "+why+" (the campaign runs without telemetry)", width, "…"))}
	}
	if len(m.samples) == 0 {
		return []string{m.st.dim.Render(fmt.Sprintf("%d GPUs: waiting for the first reading…", len(inv.Devices)))}
	}
	var out []string
	for i, s := range m.samples {
		if i == maxRows-1 && len(m.samples) > maxRows {
			out = append(out, m.st.dim.Render(fmt.Sprintf("… and %d more GPUs (make the window taller)", len(m.samples)-i)))
			break
		}
		out = append(out, m.gpuRow(s, width))
	}
	return out
}

// procsView lists the compute processes on every GPU, the campaign's and
// the others'.
func (m *model) procsView(width, rows int) []string {
	var out []string
	for _, s := range m.samples {
		for _, p := range s.Procs {
			owner := m.st.ok.Render("campaign")
			if !p.Campaign {
				owner = m.st.bad.Render("FOREIGN ")
			}
			name := p.Name
			if name == "" {
				name = "?"
			}
			out = append(out, ansi.Truncate(fmt.Sprintf("GPU %-2d pid %-8d %s %-20s %8.1f GiB", s.Device.Index, p.PID, owner, name, float64(p.MemUsed)/(1<<30)), width, "…"))
		}
		if s.ProcsWhy != "" && len(s.Procs) > 0 {
			out = append(out, m.st.dim.Render(fmt.Sprintf("GPU %d: %s", s.Device.Index, s.ProcsWhy)))
		}
	}
	if len(out) == 0 {
		out = []string{m.st.dim.Render("no compute processes on the GPUs")}
	}
	if len(out) > rows {
		out = out[:rows]
	}
	return out
}

// sparkBucket is the seconds of history in one sparkline cell: 60 cells
// show ten minutes, and the line moves every 10 s rather than every
// second, which keeps a steady screen cheap to redraw.
const sparkBucket = 10

// sparkBuckets averages utilization over buckets aligned to the clock, so
// a bucket's value does not shift as new samples arrive in the next one.
func sparkBuckets(pts []gpu.Point, secs int64) []float32 {
	var out []float32
	var sum float32
	n, cur := 0, int64(-1)
	flush := func() {
		if n > 0 {
			out = append(out, sum/float32(n))
		}
	}
	for _, p := range pts {
		b := p.T.Unix() / secs
		if b != cur {
			flush()
			cur, sum, n = b, 0, 0
		}
		if p.Util >= 0 {
			sum += p.Util
			n++
		}
	}
	flush()
	return out
}
