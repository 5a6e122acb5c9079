package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/runner"
)

func shortName(n string) string {
	n = strings.TrimPrefix(n, "NVIDIA ")
	if f := strings.Fields(n); len(f) > 0 {
		return f[0]
	}
	return n
}

// gpuRow: index, name, utilization bar, memory bar with GiB, temperature,
// power/limit, sparkline, and a flag for a foreign process or one a
// finished phase left.
func (m *model) gpuRow(s gpu.Sample, width int, withSpark bool) string {
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
	if !s.PowerLimit.OK { // dcgm-exporter does not export the limit by default
		power = s.Power.Format("%3.0fW")
	}
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
	if long, short := m.leftOn(s); long != "" {
		if lipgloss.Width(row)+lipgloss.Width(flag)+len(long)+1 > width {
			long = short // "left 1480": the phase is said in its own line
		}
		flag += " " + m.st.warn.Render(long)
	}
	if s.XID.OK && s.XID.V > 0 {
		flag += " " + m.st.bad.Render(fmt.Sprintf("XID %.0f", s.XID.V))
	}
	if len(s.Throttle) > 0 && flag == "" {
		flag = " " + m.st.warn.Render(strings.Join(s.Throttle, ","))
	}
	room := width - lipgloss.Width(row) - lipgloss.Width(flag) - 1
	if room >= 4 && m.opts.Sampler != nil && withSpark {
		cells := min(room, 60)
		vals := sparkBuckets(m.opts.Sampler.History(s.Device.ID(), cells*sparkBucket), sparkBucket)
		row += " " + m.st.barFull.Render(m.spark(vals, cells))
	}
	return ansi.Truncate(row+flag, width, "…")
}

func (m *model) gpusView(width, maxRows int) []string {
	if m.opts.Sampler == nil {
		return []string{m.st.dim.Render("no GPU source")}
	}
	inv := m.opts.Sampler.Inventory()
	if len(m.hosts) > 0 {
		return m.hostsView(width, maxRows)
	}
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
	if per := m.gpuLinesPer(); per > 1 {
		var out []string
		for _, s := range m.samples {
			out = append(out, m.gpuCard(s, width, per)...)
		}
		return out[:min(len(out), maxRows)]
	}
	return m.gpuRowsOf(m.samples, width, maxRows)
}

func (m *model) gpuRowsOf(samples []gpu.Sample, width, maxRows int) []string {
	var out []string
	for i, s := range samples {
		if i == maxRows-1 && len(samples) > maxRows {
			out = append(out, m.st.dim.Render(fmt.Sprintf("… and %d more GPUs (make the window taller)", len(samples)-i)))
			break
		}
		out = append(out, m.gpuRow(s, width, true))
	}
	return out
}

// hostGroup is one machine's GPUs: this one's (state nil) or a remote
// host's, read through its dcgm-exporter.
type hostGroup struct {
	name    string
	state   *gpu.HostState
	samples []gpu.Sample
}

func (m *model) hostGroups() []hostGroup {
	var groups []hostGroup
	var local []gpu.Sample
	byHost := map[string][]gpu.Sample{}
	for _, s := range m.samples {
		if s.Device.Host == "" {
			local = append(local, s)
		} else {
			byHost[s.Device.Host] = append(byHost[s.Device.Host], s)
		}
	}
	if len(local) > 0 {
		groups = append(groups, hostGroup{name: "this machine", samples: local})
	}
	for i := range m.hosts {
		h := &m.hosts[i]
		groups = append(groups, hostGroup{name: h.Name, state: h, samples: byHost[h.Name]})
	}
	return groups
}

// gpuLines is how many rows the GPU pane wants: one per GPU, and with
// remote hosts one more per host.
func (m *model) gpuLines() int {
	n := len(m.opts.Sampler.Inventory().Devices) * m.gpuLinesPer()
	if len(m.hosts) > 0 {
		n = len(m.samples)
		for _, g := range m.hostGroups() {
			n++
			if g.state != nil && !g.state.Up {
				n -= len(g.samples) // a host that does not answer is one line
			}
		}
	}
	return max(1, n)
}

// hostsView shows GPUs host by host. When the rows do not fit, each host
// is one line of totals; a host that does not answer is one line saying
// why, and since when.
func (m *model) hostsView(width, maxRows int) []string {
	groups := m.hostGroups()
	full := m.gpuLines() <= maxRows
	var out []string
	for i, g := range groups {
		if len(out) == maxRows-1 && i < len(groups)-1 {
			out = append(out, m.st.dim.Render(fmt.Sprintf("… and %d more hosts (make the window taller)", len(groups)-i)))
			break
		}
		out = append(out, m.hostLine(g, width, !full))
		if full && (g.state == nil || g.state.Up) {
			out = append(out, m.gpuRowsOf(g.samples, width, len(g.samples))...)
		}
	}
	return out
}

func (m *model) hostLine(g hostGroup, width int, totals bool) string {
	name := m.st.title.Render(g.name)
	h := g.state
	switch {
	case h != nil && !h.Up && h.LastSeen.IsZero() && h.Scraping > 0 && h.Err == "not scraped yet":
		return ansi.Truncate(name+" "+m.st.dim.Render(fmt.Sprintf("waiting for its exporter's first answer (%s) · %s", dur(h.Scraping), h.URL)), width, "…")
	case h != nil && !h.Up:
		seen := "never answered"
		if !h.LastSeen.IsZero() {
			seen = "last seen " + dur(m.now().Sub(h.LastSeen)) + " ago"
		}
		return ansi.Truncate(name+" "+m.st.bad.Render(fmt.Sprintf("not answering: %s · %s", h.Err, seen))+m.st.dim.Render(" · "+h.URL), width, "…")
	}
	info := gpuCount(len(g.samples))
	if h != nil && !totals {
		info += " · driver " + h.Driver
		if h.Scraping > 2*time.Second {
			info += " · " + m.st.warn.Render("slow: no answer for "+dur(h.Scraping))
		}
	}
	if totals {
		info += " · " + groupTotals(g.samples)
	}
	return ansi.Truncate(name+" "+m.st.dim.Render(info), width, "…")
}

// groupTotals sums a host's GPUs into one line: mean utilization, memory
// used of total, power and the temperature range.
func groupTotals(samples []gpu.Sample) string {
	var util, used, total, power float64
	var nUtil, nPower int
	tmin, tmax := 1e9, -1e9
	for _, s := range samples {
		if s.Lost {
			continue
		}
		if s.Util.OK {
			util += s.Util.V
			nUtil++
		}
		if s.MemUsed.OK {
			used += s.MemUsed.V
			total += float64(s.Device.MemTotal)
		}
		if s.Power.OK {
			power += s.Power.V
			nPower++
		}
		if s.Temp.OK {
			tmin, tmax = min(tmin, s.Temp.V), max(tmax, s.Temp.V)
		}
	}
	var parts []string
	for _, s := range samples { // first: an XID is why a run went wrong
		if s.XID.OK && s.XID.V > 0 {
			parts = append(parts, fmt.Sprintf("XID %.0f on GPU %d", s.XID.V, s.Device.Index))
		}
	}
	if nUtil > 0 {
		parts = append(parts, fmt.Sprintf("util %.0f%%", util/float64(nUtil)))
	}
	if total > 0 {
		parts = append(parts, fmt.Sprintf("mem %s/%s GiB", gib(used), gib(total)))
	}
	if nPower > 0 {
		parts = append(parts, fmt.Sprintf("%.2f kW", power/1000))
	}
	if tmax >= tmin {
		parts = append(parts, fmt.Sprintf("%.0f-%.0f °C", tmin, tmax))
	}
	if len(parts) == 0 {
		return "no readings"
	}
	return strings.Join(parts, " · ")
}

// gpuCount is "1 GPU" or "8 GPUs".
func gpuCount(n int) string {
	if n == 1 {
		return "1 GPU"
	}
	return fmt.Sprintf("%d GPUs", n)
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
	return bucketed(pts, secs, func(p gpu.Point) float32 { return p.Util })
}

// bucketed is sparkBuckets of any value of a point (<0: n/a).
func bucketed(pts []gpu.Point, secs int64, value func(gpu.Point) float32) []float32 {
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
		if v := value(p); v >= 0 {
			sum += v
			n++
		}
	}
	flush()
	return out
}

// leftOn names the campaign's processes on the GPU that a phase no longer
// running left there: "left by leak 1480", and "left 1480" where room is
// short; "" when none.
func (m *model) leftOn(s gpu.Sample) (long, short string) {
	if m.state == nil {
		return "", ""
	}
	var ls, ss []string
	for _, p := range s.Procs {
		if p.Phase == "" {
			continue
		}
		if ph := m.state.Phase(p.Phase); ph != nil && ph.Status != runner.Running && ph.Status != runner.Ready {
			ls = append(ls, fmt.Sprintf("left by %s %d", p.Phase, p.PID))
			ss = append(ss, strconv.Itoa(p.PID))
		}
	}
	if len(ls) == 0 {
		return "", ""
	}
	return strings.Join(ls, ", "), "left " + strings.Join(ss, ",")
}
