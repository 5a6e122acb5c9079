package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/runner"
)

func (m *model) phaseRows() int {
	n := 1
	if m.state != nil {
		n = len(m.state.Phases)
	}
	return min(n, max(3, m.h/4))
}

func (m *model) gpuRows() int {
	if m.opts.Sampler == nil {
		return 1
	}
	return min(m.gpuLines(), max(2, m.h-m.phaseRows()-9))
}

func (m *model) detailWidth() int { return max(20, m.w) }

// detailHeight is what is left for the detail pane after the rest.
func (m *model) detailHeight() int {
	return max(1, m.h-1-1-m.phaseRows()-1-m.gpuRows()-1-1-1)
}

func (m *model) View() tea.View {
	if m.force || m.frame == "" {
		m.frame = m.render()
		if m.gl.full == asciiGlyphs.full {
			m.frame = toASCII(m.frame)
		}
		m.force = false
	}
	m.scr.paint(m.frame, m.w, m.h)
	return tea.View{} // painted above; bubbletea's renderer is off
}

func (m *model) render() string {
	if m.quitting {
		return ""
	}
	if m.warnList {
		return m.warningsView()
	}
	if m.help {
		return m.helpView()
	}
	if m.chart {
		return m.chartView()
	}
	w := m.w
	if w < 80 || m.h < 24 {
		return m.compactView()
	}
	// Panes cut their own lines to the width; the lines made here are cut
	// as they are added. One pass over every line would double the frame's
	// cost (grapheme-aware width is the expensive part).
	cut := func(s string) string { return ansi.Truncate(s, w, "") }
	var lines []string
	lines = append(lines, cut(m.headerView()))
	lines = append(lines, cut(m.section("Phases", m.serverNote())))
	lines = append(lines, m.phasesView(w, m.phaseRows())...)
	lines = append(lines, cut(m.section("GPUs", m.gpuNote())))
	lines = append(lines, m.gpusView(w, m.gpuRows())...)
	lines = append(lines, cut(m.detailTitle()))
	rows := m.h - len(lines) - 2
	var body []string
	switch m.detail {
	case detailLog:
		if ps := m.selected(); ps != nil {
			if eta := m.etaLine(ps); eta != "" {
				body = append(body, cut(eta))
			}
		}
		body = append(body, m.logs.view(&m.st, m.selected(), m.now(), w, rows-len(body))...)
	case detailReport:
		body = m.preview.view(&m.st, w, rows)
	case detailProcs:
		body = m.procsView(w, rows)
	}
	lines = append(lines, body...)
	for len(lines) < m.h-2 {
		lines = append(lines, "")
	}
	lines = append(lines, cut(m.statusLine()), m.footer())
	return strings.Join(lines[:min(len(lines), m.h)], "\n")
}

func (m *model) section(name, note string) string {
	s := m.st.title.Render(name)
	if note != "" {
		s += " " + m.st.dim.Render(note)
	}
	return s
}

func (m *model) gpuNote() string {
	if m.opts.Sampler == nil {
		return ""
	}
	inv := m.opts.Sampler.Inventory()
	if len(inv.Devices) == 0 {
		return ""
	}
	w := inv.Source
	if inv.Driver != "" {
		w += " · driver " + inv.Driver
	}
	if inv.CUDA != "" {
		w += " · CUDA " + inv.CUDA // a dcgm-exporter does not say it
	}
	return w + " · util, memory, temp, power"
}

func (m *model) detailTitle() string {
	tabs := []string{"Log", "Report", "Processes"}
	var parts []string
	for i, t := range tabs {
		if focus(i) == m.detail {
			parts = append(parts, m.st.tabActive.Render(t))
		} else {
			parts = append(parts, m.st.tab.Render(t))
		}
	}
	s := strings.Join(parts, " │ ")
	if ps := m.selected(); ps != nil {
		switch m.detail {
		case detailLog:
			if ph := m.opts.Plan.Phase(ps.ID); ph != nil && ph.Sweep != nil && ph.Sweep.Search != nil {
				s += m.st.dim.Render(fmt.Sprintf("  %s · %s", ps.ID, ps.Steps[logStep(ps)].Name)) // the search says which unit: a count of the grid's says nothing
			} else {
				s += m.st.dim.Render(fmt.Sprintf("  %s · step %d/%d %s", ps.ID, logStep(ps)+1, len(ps.Steps), ps.Steps[logStep(ps)].Name))
			}
		case detailReport:
			s += m.st.dim.Render("  " + m.opts.ReportPath)
		}
		if a := m.artifactsLine(ps); a != "" {
			s += "  " + a
		}
	}
	return s
}

// artifactsLine shows a capture's files growing and the disk left.
func (m *model) artifactsLine(ps *runner.PhaseState) string {
	if len(ps.Artifacts) == 0 || m.state == nil {
		return ""
	}
	var total int64
	for _, a := range ps.Artifacts {
		total += a.Size
	}
	s := fmt.Sprintf("artifacts %s", format.Bytes(uint64(total)))
	if ps.Status == runner.Running && m.artPhase == ps.ID && m.artRate > 0 {
		s += fmt.Sprintf(" +%s/s", format.Bytes(uint64(m.artRate)))
	}
	if m.state.DiskFree > 0 {
		s += fmt.Sprintf(" · disk %s free", format.Bytes(m.state.DiskFree))
	}
	return m.st.dim.Render(s)
}

func (m *model) statusLine() string {
	if m.note != nil {
		return m.st.warn.Render("note: "+string(*m.note)+"█") + m.st.dim.Render("  enter: add to the record · esc: drop")
	}
	switch m.confirm {
	case confirmSkip:
		if ps := m.selected(); ps != nil {
			return m.st.warn.Render(fmt.Sprintf("Skip %s while it runs? Its step is stopped (SIGINT, then SIGTERM, then SIGKILL). y/n", ps.Title))
		}
	case confirmSkipPoint:
		if ps := m.selected(); ps != nil {
			if now := m.runningPoint(); now != m.skipPoint {
				if now == "" {
					now = "none"
				}
				// A sweep's steps may take less than the time to read this:
				// the point asked about is the one x was pressed on.
				return m.st.warn.Render(fmt.Sprintf("Skip point %s, its repeats left? y/n · x was pressed on it; %s runs now (%s)",
					m.skipPoint, now, ps.Title))
			}
			return m.st.warn.Render(fmt.Sprintf("Skip point %s of %s, every repeat of it? Its running step is stopped; the other points go on. y/n", m.skipPoint, ps.Title))
		}
	case confirmQuit:
		return m.st.warn.Render("Quit? d: detach (the campaign goes on) · S: stop the campaign · esc: stay")
	case confirmStop:
		return m.st.warn.Render("Stop the campaign? Its running steps and services are stopped (SIGINT, SIGTERM, SIGKILL). y/n")
	}
	if m.flash != "" && m.now().Sub(m.flashAt) < 8*time.Second {
		return m.st.warn.Render(m.flash)
	}
	// An editor holding the results file: said for as long as it lasts,
	// with the warnings not yet read beside it.
	if m.state != nil && m.state.ReportHeld != "" {
		line := m.st.warn.Render("✎ " + m.state.ReportHeld)
		if n := len(m.unseen); n > 0 {
			line += m.st.dim.Render(fmt.Sprintf(" · ⚠ %d unread (W)", n))
		}
		return line
	}
	// A warning stays until it is read: a runner that went away is not
	// replaced on screen half a second later by the next event.
	if n := len(m.unseen); n > 0 {
		last := m.unseen[n-1]
		if n == 1 {
			return m.st.warn.Render("⚠ "+last) + m.st.dim.Render(" · W: read")
		}
		return m.st.warn.Render(fmt.Sprintf("⚠ %d warnings; the last: %s", n, last)) + m.st.dim.Render(" · W: read them")
	}
	// The newest event, unless the log pane lists the events itself.
	if n := len(m.logs.events); n > 0 && !(m.detail == detailLog && !stepStarted(m.selected())) {
		return m.st.dim.Render(m.logs.events[n-1])
	}
	return ""
}

// footer shows the keys that apply now.
func (m *model) footer() string {
	var parts []string
	add := func(b key.Binding, desc string) {
		parts = append(parts, m.st.key.Render(b.Help().Key)+" "+m.st.dim.Render(desc))
	}
	add(m.keys.Up, "select")
	if m.state != nil && m.state.Paused {
		add(m.keys.Pause, "resume")
	} else {
		add(m.keys.Pause, "pause")
	}
	if m.state != nil && m.state.Frozen {
		add(m.keys.Freeze, "thaw")
	} else {
		add(m.keys.Freeze, "freeze")
	}
	if ps := m.selected(); ps != nil {
		if !ps.Status.Finished() {
			add(m.keys.Skip, "skip")
		} else {
			add(m.keys.Retry, "retry")
		}
	}
	if m.gateTarget() >= 0 {
		add(m.keys.Greenlight, "greenlight")
	}
	add(m.keys.Tab, "pane")
	add(m.keys.Help, "help")
	add(m.keys.Quit, "quit")
	out := ""
	for _, p := range parts {
		if lipgloss.Width(out)+lipgloss.Width(p)+2 > m.w {
			break
		}
		if out != "" {
			out += "  "
		}
		out += p
	}
	return out
}

func (m *model) helpView() string {
	var b strings.Builder
	b.WriteString(m.st.title.Render("greenlight keys") + "\n\n")
	// The key groups side by side where they fit (80 columns), else one
	// under the other.
	var cols []string
	for _, col := range m.keys.FullHelp() {
		var c strings.Builder
		for _, k := range col {
			fmt.Fprintf(&c, "  %-6s %s  \n", k.Help().Key, k.Help().Desc)
		}
		cols = append(cols, strings.TrimSuffix(c.String(), "\n"))
	}
	side := lipgloss.JoinHorizontal(lipgloss.Top, cols...)
	if lipgloss.Width(side) <= m.w {
		b.WriteString(side + "\n\n")
	} else {
		b.WriteString(strings.Join(cols, "\n\n") + "\n\n")
	}
	width := max(20, m.w-2)
	for _, para := range []string{
		"Pause holds the queue after the running step; freeze stops the running step's processes (SIGSTOP) and its timeout clock.",
		"Quitting (q, then d) detaches this window only: the campaign goes on in its runner, later phases start on time, gates wait; `greenlight run` with the same campaign attaches again.",
	} {
		b.WriteString(m.st.dim.Render(ansi.Wordwrap(para, width, "")) + "\n")
	}
	b.WriteString("\n" + m.st.dim.Render("any key closes this help"))
	return b.String()
}

// compactView is for windows under 80x24: state and phases only.
func (m *model) compactView() string {
	var lines []string
	lines = append(lines, m.headerView())
	rows := max(1, m.h-3)
	lines = append(lines, m.phasesView(m.w, rows)...)
	for len(lines) < m.h-1 {
		lines = append(lines, "")
	}
	lines = append(lines, m.st.dim.Render(fmt.Sprintf("%dx%d: compact view; 80x24 or more shows GPUs and logs", m.w, m.h)))
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, m.w, "")
	}
	return strings.Join(lines[:min(len(lines), max(1, m.h))], "\n")
}

// etaLine is the ETA pane of the selected phase's running step, the log
// pane's first line: stage, progress, rate, ETA and where it comes from.
func (m *model) etaLine(ps *runner.PhaseState) string {
	step := ps.Steps[ps.Current]
	if step.Status != runner.Running || ps.Status != runner.Running {
		return ""
	}
	var parts []string
	e := step.ETA
	if ps.Slurm != nil && !ps.Slurm.Queued() {
		parts = append(parts, ps.Slurm.Words(m.now()))
	}
	if step.Stage != "" {
		parts = append(parts, step.Stage)
	}
	if e.Total > 0 {
		parts = append(parts, fmt.Sprintf("%s/%s", trimNum(e.Done), trimNum(e.Total)))
	}
	if e.Rate != "" {
		parts = append(parts, e.Rate)
	}
	eta := etaText(e)
	if e.Source != "" {
		eta += " from " + e.Source
	}
	parts = append(parts, eta)
	return m.st.running.Render(strings.Join(parts, " · "))
}

// warningsView lists the warnings not yet read, oldest first; any key
// closes it and they are read.
func (m *model) warningsView() string {
	var b strings.Builder
	b.WriteString(m.st.title.Render("greenlight warnings") + "\n\n")
	if len(m.unseen) == 0 {
		b.WriteString(m.st.dim.Render("none since you last looked") + "\n")
	}
	width := max(20, m.w-4)
	rows := max(1, m.h-4)
	list := m.unseen
	if len(list) > rows {
		list = list[len(list)-rows:]
	}
	for _, w := range list {
		b.WriteString("⚠ " + ansi.Truncate(w, width, "…") + "\n")
	}
	b.WriteString("\n" + m.st.dim.Render("any key closes this list (the warnings are read)"))
	return b.String()
}
