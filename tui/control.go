package tui

// What the keys do: selection, the runner's controls, the confirmations
// they ask for, quitting, scrolling.

import (
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/greenlight-run/greenlight/runner"
)

func (m *model) onKey(k tea.KeyPressMsg) tea.Cmd {
	if m.note != nil {
		return m.onNoteKey(k)
	}
	if m.confirm != noConfirm {
		return m.onConfirmKey(k)
	}
	if m.help {
		m.help = false
		return nil
	}
	if m.warnList { // any key closes the warnings: they are read
		m.warnList, m.unseen = false, nil
		return nil
	}
	if m.chart {
		// The chart screen: tab turns its metric, c, esc or q close it;
		// ↑/↓ still move between phases (and their charts).
		switch {
		case key.Matches(k, m.keys.Chart), key.Matches(k, m.keys.No), k.String() == "q":
			m.chart = false
			return nil
		case key.Matches(k, m.keys.Tab):
			m.chartMetric++
			return nil
		case key.Matches(k, m.keys.Up), key.Matches(k, m.keys.Down):
			m.chartMetric = 0 // another phase: its first metric, its rows asked below
		}
	}
	r := m.opts.Runner
	switch {
	case key.Matches(k, m.keys.Chart):
		m.chart, m.chartMetric = true, 0
		return m.chartRows(true)
	case key.Matches(k, m.keys.Quit):
		if m.state != nil && !m.state.Finished && m.anyRunning() {
			m.confirm = confirmQuit
			return nil
		}
		return m.quit(false, "greenlight: left the campaign")
	case key.Matches(k, m.keys.Up):
		m.sel = max(0, m.sel-1)
		m.picked = m.sel != m.running() // back on the running phase: it follows again
		return tea.Batch(m.logs.read(m.selected()), m.chartRows(true))
	case key.Matches(k, m.keys.Down):
		if m.state != nil {
			m.sel = min(len(m.state.Phases)-1, m.sel+1)
		}
		m.picked = m.sel != m.running()
		return tea.Batch(m.logs.read(m.selected()), m.chartRows(true))
	case key.Matches(k, m.keys.Help):
		m.help = true
	case key.Matches(k, m.keys.Note):
		m.note = &[]rune{}
	case key.Matches(k, m.keys.Warnings):
		m.warnList = true
	case key.Matches(k, m.keys.Tab):
		m.detail = (m.detail + 1) % 3
		if m.detail == detailReport {
			return m.preview.show(m.detailWidth())
		}
	case key.Matches(k, m.keys.PgUp):
		m.scroll(-1)
	case key.Matches(k, m.keys.PgDown):
		m.scroll(1)
	case key.Matches(k, m.keys.Top):
		m.scroll(-1 << 20)
	case key.Matches(k, m.keys.Bottom):
		m.scroll(1 << 20)
	case key.Matches(k, m.keys.Pause):
		if m.state != nil && m.state.Paused {
			return m.ctl(r.Resume)
		}
		return m.ctl(r.Pause)
	case key.Matches(k, m.keys.Freeze):
		if m.state != nil && m.state.Frozen {
			return m.ctl(r.Thaw)
		}
		return m.ctl(r.Freeze)
	case key.Matches(k, m.keys.Skip):
		if ps := m.selected(); ps != nil {
			if ps.Status == runner.Running || ps.Status == runner.Ready {
				m.confirm = confirmSkip
				return nil
			}
			id := ps.ID
			return m.ctl(func() error { return r.Skip(id) })
		}
	case key.Matches(k, m.keys.SkipPoint):
		if pt := m.runningPoint(); pt != "" {
			m.confirm, m.skipPoint = confirmSkipPoint, pt
			return nil
		}
		m.say("x skips the running point of a sweep: the selected phase runs none")
	case key.Matches(k, m.keys.Retry):
		if ps := m.selected(); ps != nil {
			id := ps.ID
			return m.ctl(func() error { return r.Retry(id) })
		}
	case key.Matches(k, m.keys.Greenlight):
		if i := m.gateTarget(); i >= 0 {
			m.sel = i
			id := m.state.Phases[i].ID
			return m.ctl(func() error { return r.Greenlight(id) })
		}
		m.say("no phase waits for a greenlight")
	}
	return nil
}

func (m *model) onConfirmKey(k tea.KeyPressMsg) tea.Cmd {
	kind := m.confirm
	m.confirm = noConfirm
	switch kind {
	case confirmSkip:
		if key.Matches(k, m.keys.Yes) {
			if ps := m.selected(); ps != nil {
				id := ps.ID
				return m.ctl(func() error { return m.opts.Runner.Skip(id) })
			}
		}
	case confirmSkipPoint:
		if ps := m.selected(); ps != nil && key.Matches(k, m.keys.Yes) {
			id, pt := ps.ID, m.skipPoint
			return m.ctl(func() error { return m.opts.Runner.SkipPoint(id, pt) })
		}
	case confirmQuit:
		switch {
		case key.Matches(k, m.keys.Leave):
			m.result.Detached = true
			return m.quit(true, "greenlight: detached; the campaign goes on")
		case key.Matches(k, m.keys.StopAll):
			m.confirm = confirmStop
		}
	case confirmStop:
		if key.Matches(k, m.keys.Yes) {
			// Quit once the runner says every step has ended, so the stop
			// signals' escalation is not cut short.
			m.say("stopping every running step…")
			m.stopThenQuit = true
			return m.ctl(m.opts.Runner.Stop)
		}
	}
	return nil
}

func (m *model) quit(interrupted bool, msg string) tea.Cmd {
	m.quitting = true
	m.result.Interrupted = interrupted
	m.result.Message = msg
	return tea.Quit
}

func (m *model) anyRunning() bool {
	for _, p := range m.state.Phases {
		if p.Status == runner.Running || p.Status == runner.Ready || p.Status == runner.Waiting || p.Status == runner.Pending {
			return true
		}
	}
	return false
}

func (m *model) scroll(dir int) {
	switch m.detail {
	case detailReport:
		m.preview.scroll(dir*max(1, m.detailHeight()-1), m.detailHeight())
	case detailLog:
		m.logs.scroll(dir * max(1, m.detailHeight()-1))
	}
}

// trackArtifacts measures how fast the selected phase's artifacts grow,
// over windows of at least two seconds.
func (m *model) trackArtifacts() {
	ps := m.selected()
	if ps == nil {
		return
	}
	var total int64
	for _, a := range ps.Artifacts {
		total += a.Size
	}
	now := m.state.Now
	if m.artPhase != ps.ID {
		m.artPhase, m.artSize, m.artAt, m.artRate = ps.ID, total, now, 0
		return
	}
	if dt := now.Sub(m.artAt); dt >= 2*time.Second {
		m.artRate = max(0, float64(total-m.artSize)/dt.Seconds())
		m.artSize, m.artAt = total, now
	}
}

// runningPoint is the point of the selected sweep phase that runs now
// ("m=64,shape=down"), "" when it runs none.
func (m *model) runningPoint() string {
	ps := m.selected()
	if ps == nil || ps.Status != runner.Running || m.opts.Plan == nil {
		return ""
	}
	ph := m.opts.Plan.Phase(ps.ID)
	if ph == nil || ph.Sweep == nil {
		return ""
	}
	if ps.Current < 0 || ps.Current >= len(ps.Steps) || ps.Steps[ps.Current].Status != runner.Running {
		return ""
	}
	// The runner's own word for it: a window whose campaign file was
	// edited since the runner read it must not name another point.
	return ps.Steps[ps.Current].Point
}

// onNoteKey types the note N opened: enter adds it to the record (through
// the runner, journaled), esc drops it.
func (m *model) onNoteKey(k tea.KeyPressMsg) tea.Cmd {
	text := *m.note
	switch k.String() {
	case "esc", "ctrl+c":
		m.note = nil
	case "enter":
		m.note = nil
		if len(text) == 0 {
			return nil
		}
		note := string(text)
		m.say("note given to the runner for the record")
		return m.ctl(func() error { return m.opts.Runner.Note(note) })
	case "backspace":
		if len(text) > 0 {
			*m.note = text[:len(text)-1]
		}
	default:
		if t := k.Key().Text; t != "" && len(text) < maxNote {
			*m.note = append(text, []rune(t)...)
		}
	}
	return nil
}

// maxNote bounds a note typed in the window.
const maxNote = 500
