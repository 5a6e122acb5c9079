package tui

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/greenlight-run/greenlight/internal/safe"
	"github.com/greenlight-run/greenlight/runner"
)

// logPane is the tail of the selected phase's current step log, with
// tqdm's \r redraws collapsed and control sequences made harmless.
type logPane struct {
	path   string
	lines  []string
	events []string
	off    int // lines scrolled up from the bottom
	seen   fileKey
}

type logMsg struct {
	path  string
	lines []string
	size  int64
	mod   time.Time
}

func newLogPane(note string) *logPane {
	l := &logPane{}
	if note != "" {
		l.events = append(l.events, note)
	}
	return l
}

const logTailBytes = 64 << 10

// read returns a Cmd that reads the log of a phase's current step (the
// selected one's).
func (l *logPane) read(ps *runner.PhaseState) tea.Cmd {
	if ps == nil || len(ps.Steps) == 0 {
		return nil
	}
	path := ps.Steps[logStep(ps)].Log
	if path == "" {
		// Not started: show nothing of the phase selected before.
		l.path, l.lines, l.seen = "", nil, fileKey{}
		return nil
	}
	seen, seenPath := l.seen, l.path
	return func() tea.Msg {
		// An unchanged log sends nothing: no message, no redraw.
		fi, err := os.Stat(path)
		if err != nil || path == seenPath && fi.Size() == seen.size && fi.ModTime().Equal(seen.mod) {
			return nil
		}
		return logMsg{path: path, lines: tailLines(path, logTailBytes), size: fi.Size(), mod: fi.ModTime()}
	}
}

func (l *logPane) set(msg logMsg) {
	if msg.path != l.path {
		l.off = 0
	}
	l.path, l.lines = msg.path, msg.lines
	l.seen = fileKey{msg.size, msg.mod}
}

type fileKey struct {
	size int64
	mod  time.Time
}

func (l *logPane) event(e runner.Event) {
	l.events = append(l.events, e.Time.Format("15:04:05")+" "+safe.Line(e.Message, safe.CSV))
	if len(l.events) > 200 {
		l.events = l.events[len(l.events)-200:]
	}
}

func (l *logPane) scroll(n int) { l.off = max(0, l.off-n) }

// tailLines reads the end of a log as the terminal would have shown it.
func tailLines(path string, n int64) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	start := max(0, fi.Size()-n)
	buf := make([]byte, fi.Size()-start)
	if _, err := f.ReadAt(buf, start); err != nil && len(buf) == 0 {
		return nil
	}
	if start > 0 {
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	return collapse(string(buf))
}

// collapse keeps each line's last \r-separated state and makes it safe to
// draw: escape sequences stripped, other control characters shown as ?.
func collapse(s string) []string {
	raw := strings.Split(s, "\n")
	out := make([]string, 0, len(raw))
	for _, line := range raw {
		parts := strings.Split(line, "\r")
		last := ""
		for i := len(parts) - 1; i >= 0; i-- {
			if strings.TrimSpace(parts[i]) != "" {
				last = parts[i]
				break
			}
		}
		out = append(out, sanitize(last))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

func sanitize(s string) string {
	s = ansi.Strip(s)
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return ' '
		case r == unicode.ReplacementChar:
			return '?'
		case unicode.IsControl(r):
			return '?'
		}
		return r
	}, s)
}

// stepStarted reports whether a phase's current step has a log yet.
func stepStarted(ps *runner.PhaseState) bool {
	return ps != nil && len(ps.Steps) > 0 && ps.Steps[logStep(ps)].Log != ""
}

// logStep is the step whose log the pane shows: the current one, or, of
// a phase that has ended on a step that never ran (a unit stopped as
// precise, a point skipped), the last that did.
func logStep(ps *runner.PhaseState) int {
	if ps.Steps[ps.Current].Log != "" || !ps.Status.Finished() {
		return ps.Current
	}
	for i := len(ps.Steps) - 1; i >= 0; i-- {
		if ps.Steps[i].Log != "" {
			return i
		}
	}
	return ps.Current
}

// view draws the log of ps's current step, or, before it has one, the
// campaign's latest events under a line that says why.
func (l *logPane) view(st *styles, ps *runner.PhaseState, now time.Time, width, rows int) []string {
	src := l.lines
	var head []string
	switch {
	case !stepStarted(ps):
		why := "this phase has not started"
		if ps != nil && ps.WaitReason != "" {
			why = "this phase " + ps.WaitReason
		}
		head = []string{st.dim.Render(why + "; the campaign's latest events:")}
		src = l.events
	case l.path != ps.Steps[logStep(ps)].Log:
		head = []string{st.dim.Render("reading " + ps.Steps[logStep(ps)].Log + "…")}
		src = nil
	}
	rows -= len(head)
	end := max(0, len(src)-l.off)
	start := max(0, end-rows)
	out := head
	for _, line := range src[start:end] {
		out = append(out, ansi.Truncate(line, width, "…"))
	}
	if len(out) == 0 {
		why := "no log yet"
		switch {
		case ps != nil && ps.Slurm.Queued():
			why = "no log yet: " + ps.Slurm.Words(now) + "; its output appears here once it runs"
		case ps != nil && stepStarted(ps) && ps.Steps[logStep(ps)].Status.Finished():
			why = fmt.Sprintf("step %d printed nothing: its log is empty (%s)", logStep(ps)+1, ps.Steps[logStep(ps)].Log)
		}
		out = append(out, st.dim.Render(why))
	}
	return out
}
