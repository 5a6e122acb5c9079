package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

func (m *model) glyph(p runner.PhaseState) string {
	switch s := p.Status; {
	case p.Doubtful():
		return m.st.warn.Render(m.gl.doubtful)
	case s == runner.Done:
		return m.st.ok.Render(m.gl.done)
	case s == runner.Failed:
		return m.st.bad.Render(m.gl.failed)
	case s == runner.Running:
		return m.st.running.Render(m.gl.running)
	case s == runner.Ready:
		return m.st.ok.Render(m.gl.ready)
	case s == runner.Waiting:
		return m.st.warn.Render(m.gl.waiting)
	case s == runner.Skipped:
		return m.st.dim.Render(m.gl.skipped)
	case s == runner.Blocked:
		return m.st.bad.Render(m.gl.blocked)
	case s == runner.Stopped:
		return m.st.dim.Render(m.gl.stopped)
	}
	return m.st.dim.Render(m.gl.pending)
}

// phaseRow is one line: glyph, title, bar, then time and what is going on.
func (m *model) phaseRow(i int, p runner.PhaseState, width int) string {
	now := m.now()
	// As wide as the longest title needs, up to a quarter of the row, or a
	// third on a wide screen.
	longest := 0
	for _, q := range m.state.Phases {
		longest = max(longest, lipgloss.Width(q.Title))
	}
	limit := width / 4
	if width >= 120 {
		limit = width / 3
	}
	titleW := max(16, min(longest, limit))
	barW := max(6, min(20, width/8))
	var pt *campaign.ServicePoint
	if m.opts.Plan != nil {
		if ph := m.opts.Plan.Phase(p.ID); ph != nil {
			pt = ph.Point
		}
	}
	title := fitTitle(p.Title, pt, titleW)
	title += strings.Repeat(" ", titleW-lipgloss.Width(title))
	frac := -1.0
	info := ""
	switch p.Status {
	case runner.Running:
		cur := p.Steps[p.Current]
		frac = p.ETA.Fraction
		if cur.Progress >= 0 && len(p.Steps) == 1 {
			frac = cur.Progress
		}
		// What a person scans for first: where it is, then when it ends.
		var parts []string
		if p.Frozen {
			parts = append(parts, m.st.warn.Render("frozen"))
		}
		queued := p.Slurm.Queued()
		if sj := p.Slurm; sj != nil && sj.ID != "" {
			if queued {
				parts = append(parts, "job "+sj.ID+" queued")
			} else if sj.Nodes == "" {
				parts = append(parts, "job "+sj.ID)
			} else {
				parts = append(parts, "job "+sj.ID+" on "+sj.Nodes)
			}
		}
		if queued {
			// In Slurm's queue: when it starts first, then why it waits
			// (the longer words, cut first on a narrow row).
			parts = append(parts, p.ETA.Text())
			if why := strings.TrimPrefix(strings.TrimPrefix(cur.Stage, "queued in Slurm"), ": "); why != "" {
				parts = append(parts, why)
			}
			parts = append(parts, dur(now.Sub(p.Started)))
			info = strings.Join(parts, " · ")
			break
		}
		if cur.Stage != "" {
			parts = append(parts, cur.Stage)
		} else if where := m.pointWords(p); where != "" {
			parts = append(parts, where)
		} else if len(p.Steps) > 1 {
			parts = append(parts, fmt.Sprintf("step %d/%d", p.Current+1, len(p.Steps)))
		}
		if cur.ETA.Total > 0 {
			parts = append(parts, fmt.Sprintf("%s/%s", trimNum(cur.ETA.Done), trimNum(cur.ETA.Total)))
		}
		eta := etaText(p.ETA)
		if src := shortSource(p.ETA.Source); src != "" && (p.ETA.Known || p.ETA.Over > 0) {
			eta += " (" + src + ")"
		}
		parts = append(parts, eta, dur(now.Sub(p.Started)))
		info = strings.Join(parts, " · ")
	case runner.Ready:
		frac = 1
		info = m.st.ok.Render("serving") + " · up " + dur(now.Sub(p.Started))
		if p.Kept != "" {
			info += " · " + m.st.warn.Render(p.Kept)
		}
		if sj := p.Slurm; sj != nil && sj.ID != "" && sj.Nodes != "" {
			info += " · job " + sj.ID + " on " + sj.Nodes
		}
	case runner.Done:
		frac = 1
		info = "done in " + runner.RunTimeWords(p, p.Ended)
		if sj := p.Slurm; sj != nil && sj.QueueWait >= time.Second {
			info += " (" + dur(sj.QueueWait) + " of it queued in Slurm)"
		}
	case runner.Waiting:
		info = m.st.warn.Render("waiting for your greenlight: press g")
	case runner.Failed, runner.Blocked, runner.Skipped, runner.Stopped:
		info = string(p.Status)
		if p.LetGo {
			info += " (let go)"
		}
		if p.Reason != "" {
			info += ": " + p.Reason
		}
		if p.Status == runner.Failed || p.Status == runner.Blocked {
			info = m.st.bad.Render(info)
		}
	default:
		// The time first: on a narrow row the reason is what gets cut.
		info = "pending"
		switch {
		case p.ETA.Known && p.ETA.Remaining >= time.Second/2:
			info += " · about " + dur(p.ETA.Remaining)
		case p.ETA.Known && p.ETA.Remaining > 0:
			info += " · under 1s" // not "about 0s": it has a cost
		}
		if p.WaitReason != "" {
			info += " · " + p.WaitReason
		}
	}
	if p.ExpectFailed > 0 {
		info += m.st.bad.Render(fmt.Sprintf(" · %d missed expect", p.ExpectFailed))
	}
	sel := " "
	if i == m.sel {
		sel = m.gl.sel
	}
	row := sel + m.glyph(p) + " " + title + " " + m.bar(frac, barW) + " " + info
	row = ansi.Truncate(row, width, "…")
	if i == m.sel {
		row = m.st.selected.Render(ansi.Strip(row) + strings.Repeat(" ", max(0, width-lipgloss.Width(row))))
	}
	return row
}

func (m *model) phasesView(width, maxRows int) []string {
	if m.state == nil {
		return []string{m.st.dim.Render("  waiting for the runner…")}
	}
	ps := m.state.Phases
	start := 0
	if len(ps) > maxRows {
		start = min(max(0, m.sel-maxRows/2), len(ps)-maxRows)
	}
	var out []string
	for i := start; i < len(ps) && len(out) < maxRows; i++ {
		out = append(out, m.phaseRow(i, ps[i], width))
	}
	return out
}

func shortSource(s string) string {
	switch s {
	case runner.SourceProgress:
		return "log"
	case runner.SourceHistory:
		return "history"
	case runner.SourceEstimate:
		return "estimate"
	case runner.SourceLearned:
		return "pace"
	}
	return s
}

// pointWords is where a sweep phase is in its grid: "point 4/10
// m=8,shape=down · rep 2/3"; "" for a phase without one.
func (m *model) pointWords(p runner.PhaseState) string {
	ph := m.opts.Plan.Phase(p.ID)
	if ph == nil || ph.Sweep == nil || p.Current >= len(ph.Steps) || ph.Steps[p.Current].Unit == nil {
		return ""
	}
	sw, u := ph.Sweep, ph.Steps[p.Current].Unit
	if sw.Search != nil {
		// A search's place: its probe (the values it has run, this one
		// among them), not the grid's point. The window's state has no
		// rows: the steps' points count them.
		seen := map[string]bool{}
		for _, st := range p.Steps {
			if st.Point != "" && (st.Status == runner.Done || st.Status == runner.Running) {
				seen[st.Point] = true
			}
		}
		return fmt.Sprintf("probe %d (≤%d) %s · run %d", max(1, len(seen)), sw.Search.MaxProbes(), sw.Key(*u), u.Repeat)
	}
	w := fmt.Sprintf("point %d/%d", u.Point+1, sw.Points)
	k := sw.Key(*u)
	if p.Current < len(p.Steps) && p.Steps[p.Current].Point != "" && p.Steps[p.Current].Point != k {
		// The file was edited since the runner read it: its point, not ours.
		return "point " + p.Steps[p.Current].Point
	}
	if k != "" {
		w += " " + k
	}
	if sw.Repeat > 1 {
		w += fmt.Sprintf(" · rep %d/%d", u.Repeat, sw.Repeat)
	}
	return w
}

func trimNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// fitTitle cuts a title to w columns. A phase run under a swept service's
// point pt ("decode throughput · max_num_seqs=64,max_batched=2048") keeps
// the point's values, which tell its copies apart: "decode th… · 64,2048".
func fitTitle(title string, pt *campaign.ServicePoint, w int) string {
	if lipgloss.Width(title) <= w {
		return title
	}
	if pt == nil {
		return ansi.Truncate(title, w, "…")
	}
	tail := " · " + pt.Said()
	if room := w - lipgloss.Width(tail); room >= 4 {
		return ansi.Truncate(pt.Title, room, "…") + tail
	}
	return ansi.Truncate(pt.Said(), w, "…")
}
