package tui

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
)

// paintOn paints frames on a w×h emulator and returns the screen's text
// and the bytes each paint wrote.
type paintOn struct {
	scr *screen
	out bytes.Buffer
	emu *vt.Emulator
}

func newPaintOn(w, h int) *paintOn {
	p := &paintOn{emu: vt.NewEmulator(w, h)}
	p.scr = newScreen(&p.out, []string{"TERM=xterm-256color"})
	p.scr.setProfile(colorprofile.TrueColor)
	return p
}

func (p *paintOn) paint(frame string, w, h int) (wrote string) {
	p.scr.paint(frame, w, h)
	wrote = p.out.String()
	p.emu.Write(p.out.Bytes())
	p.out.Reset()
	return wrote
}

func (p *paintOn) text() string { return trimScreen(p.emu.String()) }

func TestScreenPaintsOnlyChangedLines(t *testing.T) {
	p := newPaintOn(40, 6)
	red := lipgloss.NewStyle().Foreground(lipgloss.Color("#ff0000"))
	first := "header 1s\n" + red.Render("GPU 0  50%") + "\nGPU 1  60%\nlog line\nfooter"
	wrote := p.paint(first, 40, 6)
	if !strings.Contains(wrote, ansi.SetModeAltScreenSaveCursor) || !strings.Contains(wrote, ansi.HideCursor) {
		t.Errorf("first paint does not enter the alternate screen with the cursor hidden: %q", wrote)
	}
	if got, want := p.text(), "header 1s\nGPU 0  50%\nGPU 1  60%\nlog line\nfooter\n"; got != want {
		t.Fatalf("first frame:\n%s\nwant:\n%s", got, want)
	}
	if c := p.emu.CellAt(0, 1); c == nil || c.Style.Fg == nil {
		t.Error("the red line lost its colour")
	}

	// One line changes: only it is written.
	wrote = p.paint(strings.Replace(first, "GPU 1  60%", "GPU 1  61%", 1), 40, 6)
	if strings.Contains(wrote, "header") || strings.Contains(wrote, "footer") || strings.Contains(wrote, "log line") {
		t.Errorf("unchanged lines were written again: %q", wrote)
	}
	if !strings.Contains(p.text(), "GPU 1  61%") || len(wrote) > 40 {
		t.Errorf("after one change (%d bytes: %q):\n%s", len(wrote), wrote, p.text())
	}

	// The same frame again writes nothing.
	if wrote = p.paint(strings.Replace(first, "GPU 1  60%", "GPU 1  61%", 1), 40, 6); wrote != "" {
		t.Errorf("an unchanged frame wrote %q", wrote)
	}

	// A shorter frame blanks the lines it no longer has.
	p.paint("header 2s\nGPU 0  50%", 40, 6)
	if got := p.text(); got != "header 2s\nGPU 0  50%\n" {
		t.Errorf("shorter frame:\n%q", got)
	}

	// The bell goes with the next paint, even of the same frame.
	p.scr.ring()
	if wrote = p.paint("header 2s\nGPU 0  50%", 40, 6); wrote != "\a" {
		t.Errorf("bell: wrote %q", wrote)
	}
}

func TestScreenRepaintsAllOnResizeAndRestoresOnClose(t *testing.T) {
	p := newPaintOn(30, 4)
	p.paint("a\nb\nc", 30, 4)
	p.emu.Resize(20, 5)
	p.paint("a\nb\nc\nd", 20, 5)
	if got := p.text(); got != "a\nb\nc\nd\n" {
		t.Errorf("after resize:\n%q", got)
	}
	p.scr.close()
	if got := p.out.String(); !strings.Contains(got, ansi.ResetModeAltScreenSaveCursor) || !strings.Contains(got, ansi.ShowCursor) {
		t.Errorf("close wrote %q: it must leave the alternate screen and show the cursor", got)
	}
	p.out.Reset()
	p.scr.close()
	if p.out.Len() != 0 {
		t.Error("a second close wrote again")
	}
}

// ink draws what lipgloss draws for each line; it does not pad the lines
// of a block to one width, which none of its callers wants.
func TestInkRendersAsLipgloss(t *testing.T) {
	for _, st := range []lipgloss.Style{
		lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("#5fd7ff")),
		lipgloss.NewStyle().Reverse(true),
		lipgloss.NewStyle(),
	} {
		for _, s := range []string{"one line", "a\ttab", "two\nlines", "trailing\n", "gap\n\nx"} {
			lines := strings.Split(s, "\n")
			for i, l := range lines {
				if l != "" {
					lines[i] = st.Render(l)
				}
			}
			if got, want := inkOf(st).Render(s), strings.Join(lines, "\n"); got != want {
				t.Errorf("ink(%q) = %q; lipgloss, line by line: %q", s, got, want)
			}
		}
		if got := inkOf(st).Render(""); got != "" {
			t.Errorf("ink of nothing = %q", got)
		}
	}
}

func TestClockFallsOnTheSecond(t *testing.T) {
	at := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	for _, c := range []struct{ now, want time.Duration }{
		{300 * time.Millisecond, 700 * time.Millisecond},
		{999 * time.Millisecond, time.Millisecond},
		{0, time.Second},
	} {
		if got := untilNextSecond(at.Add(c.now)); got != c.want {
			t.Errorf("at +%s: next tick in %s; want %s", c.now, got, c.want)
		}
	}
}

// A new colour profile writes the same cells again in its own codes.
func TestScreenRepaintsForANewColourProfile(t *testing.T) {
	p := newPaintOn(20, 2)
	frame := lipgloss.NewStyle().Foreground(lipgloss.Color("#ff0000")).Render("red")
	p.paint(frame, 20, 2)
	p.scr.setProfile(colorprofile.TrueColor)
	if wrote := p.paint(frame, 20, 2); wrote != "" {
		t.Errorf("the same profile repainted: %q", wrote)
	}
	p.scr.setProfile(colorprofile.Ascii)
	wrote := p.paint(frame, 20, 2)
	if !strings.Contains(wrote, "red") || strings.Contains(wrote, "38;2") {
		t.Errorf("after Ascii: wrote %q; want the text again without colour codes", wrote)
	}
}

// stuckTerminal does not read until released, as a stalled ssh link.
type stuckTerminal struct {
	release chan struct{}
	mu      sync.Mutex
	got     bytes.Buffer
}

func (s *stuckTerminal) Write(b []byte) (int, error) {
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got.Write(b)
}

// The event loop never waits on the terminal: frames posted while it does
// not read return at once, and only the newest is painted once it does.
func TestPainterDoesNotWaitOnTheTerminal(t *testing.T) {
	term := &stuckTerminal{release: make(chan struct{})}
	p := newPainter(newScreen(term, []string{"TERM=xterm-256color"}))
	posted := make(chan struct{})
	go func() {
		for i := range 100 {
			p.paint(fmt.Sprintf("frame %d", i), 20, 2)
		}
		p.ring()
		close(posted)
	}()
	select {
	case <-posted:
	case <-time.After(5 * time.Second):
		t.Fatal("posting frames blocked on a terminal that does not read")
	}
	close(term.release)
	p.close()
	term.mu.Lock()
	out := term.got.String()
	term.mu.Unlock()
	if !strings.Contains(out, "\a") || !strings.Contains(out, ansi.ResetModeAltScreenSaveCursor) {
		t.Fatalf("the bell or the exit from the alternate screen is missing: %q", out)
	}
	// Before the exit from the alternate screen, the newest frame was on it.
	emu := vt.NewEmulator(20, 2)
	emu.Write([]byte(strings.TrimSuffix(out[:strings.LastIndex(out, ansi.ResetModeAltScreenSaveCursor)], "\a")))
	if got := trimScreen(emu.String()); !strings.Contains(got, "frame 99") {
		t.Errorf("the newest frame is not on the screen:\n%s\n(written: %q)", got, out)
	}
	if n := strings.Count(out, "frame"); n > 3 {
		t.Errorf("%d frames were painted; stale ones should give way to the newest", n)
	}
}

// TestPreviewReadsAsADocument: the preview renders the results file's
// phase headings without "## ", inline code without padding, and bold
// without "**", in colour and under LANG=C alike.
func TestPreviewReadsAsADocument(t *testing.T) {
	md := "# c\n\n## vLLM server (`serve`)\n\n**Status:** ✅ done\n"
	for _, env := range []map[string]string{{"LANG": "C.UTF-8"}, {"LANG": "C", "LC_ALL": "C"}, {"NO_COLOR": "1", "LANG": "C.UTF-8"}} {
		for k, v := range env {
			t.Setenv(k, v)
		}
		got := ansi.Strip(strings.Join(renderMarkdown(md, 80), "\n"))
		for _, bad := range []string{"**", "( serve )"} {
			if strings.Contains(got, bad) {
				t.Errorf("%v: the preview shows %q:\n%s", env, bad, got)
			}
		}
		if env["LANG"] == "C.UTF-8" && env["NO_COLOR"] == "" && strings.Contains(got, "## ") {
			t.Errorf("%v: the preview shows the heading's ##:\n%s", env, got)
		}
	}
}
