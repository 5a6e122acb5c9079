package tui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/greenlight-run/greenlight/runner"
)

// stateWord is the campaign's state in one word or two.
func (m *model) stateWord() string {
	s := m.state
	switch {
	case s == nil:
		return m.st.dim.Render("starting")
	}
	switch h := s.Headline(); {
	case h == runner.HeadFailed:
		return m.st.bad.Render(string(h))
	case h == runner.HeadStopped:
		return m.st.warn.Render("stopped: `greenlight run` resumes")
	case h == runner.HeadFinished:
		return m.st.ok.Render(string(h))
	case h == runner.HeadPaused && s.PauseWhy != "user":
		return m.st.bad.Render("paused: disk")
	case h == runner.HeadPaused, h == runner.HeadFrozen:
		return m.st.warn.Render(string(h))
	}
	for _, p := range s.Phases {
		if p.Status == runner.Waiting {
			return m.st.warn.Render("waiting for greenlight")
		}
	}
	return m.st.running.Render("running")
}

// headerView is one line: name and state on the left, then as much of
// elapsed, phases done, the campaign ETA and its end time as fits.
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
	done, total := s.PhasesDone()
	// Most important first; each part is shown only if it fits.
	parts := []string{dur(now.Sub(s.Started)) + " elapsed"}
	if s.Finished && !s.Ended.IsZero() && !s.Started.IsZero() {
		parts[0] = "took " + dur(s.Ended.Sub(s.Started)) // the campaign's, not the window's
	}
	if w := s.WaitsOnKept(); w != "" && !s.Finished {
		var kept []string // the rows say for what, and the keys
		for _, p := range s.Phases {
			if p.Kept != "" {
				kept = append(kept, p.ID)
			}
		}
		parts = append(parts, m.st.warn.Render("waits for you: "+strings.Join(kept, ", ")+" kept"))
	} else if !s.Finished {
		eta := etaText(s.ETA)
		if s.ETA.Waiting {
			eta += " + gate"
		}
		parts = append(parts, eta)
	}
	count := fmt.Sprintf("%d/%d phases done", done, total)
	if n := s.Serving(); n > 0 && !s.Finished {
		count += fmt.Sprintf(" · %d serving", n)
	}
	if s.Stopped() {
		count += " · stopped"
	}
	parts = append(parts, count)
	if !s.Finished && s.ETA.Known && !s.ETA.Partial && s.WaitsOnKept() == "" { // waiting on you, it ends when you say
		parts = append(parts, "ends "+now.Add(s.ETA.Remaining).Format("15:04"))
	}
	right := ""
	for _, p := range parts {
		next := p
		if right != "" {
			next = right + " · " + p
		}
		if lipgloss.Width(left)+lipgloss.Width(next)+2 > m.w {
			break
		}
		right = next
	}
	line := left + " "
	if barW := min(24, m.w-lipgloss.Width(left)-lipgloss.Width(right)-3); barW >= 6 {
		line += m.bar(float64(done)/float64(max(total, 1)), barW) + " "
	}
	return line + m.st.dim.Render(right)
}
