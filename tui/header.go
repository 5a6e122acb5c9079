package tui

import (
	"fmt"

	"charm.land/lipgloss/v2"

	"github.com/greenlight-run/greenlight/runner"
)

// stateWord is the campaign's state in one word or two.
func (m *model) stateWord() string {
	s := m.state
	switch {
	case s == nil:
		return m.st.dim.Render("starting")
	case s.Finished:
		for _, p := range s.Phases {
			if p.Status == runner.Failed || p.Status == runner.Blocked {
				return m.st.bad.Render("failed")
			}
		}
		return m.st.ok.Render("finished")
	case s.Paused && s.PauseWhy != "user":
		return m.st.bad.Render("paused: disk")
	case s.Paused:
		return m.st.warn.Render("paused")
	case s.Frozen:
		return m.st.warn.Render("frozen")
	}
	for _, p := range s.Phases {
		if p.Status == runner.Waiting {
			return m.st.warn.Render("waiting for greenlight")
		}
	}
	return m.st.running.Render("running")
}

func (m *model) headerView() string {
	name := "greenlight"
	if m.opts.Plan != nil {
		name = m.opts.Plan.Name
	}
	left := m.st.title.Render("greenlight") + " " + m.st.bold.Render(name) + " · " + m.stateWord()
	if m.state == nil {
		return left
	}
	s := m.state
	now := m.now()
	elapsed := dur(now.Sub(s.Started))
	done, total := 0, len(s.Phases)
	for _, p := range s.Phases {
		if p.Status.Finished() || p.Status == runner.Ready {
			done++
		}
	}
	right := fmt.Sprintf("%s elapsed · %d/%d phases", elapsed, done, total)
	if !s.Finished {
		eta := etaText(s.ETA)
		if s.ETA.Waiting {
			eta += " + waiting for you"
		}
		if s.ETA.Known && !s.ETA.Partial {
			eta += " (ends " + now.Add(s.ETA.Remaining).Format("15:04") + ")"
		}
		right += " · " + eta
	}
	room := m.w - lipgloss.Width(left) - lipgloss.Width(right) - 3
	barW := min(24, room)
	line := left + " "
	if barW >= 6 {
		frac := float64(done) / float64(max(total, 1))
		line += m.bar(frac, barW) + " "
	}
	line += m.st.dim.Render(right)
	return line
}
