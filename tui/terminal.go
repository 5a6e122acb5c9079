package tui

import (
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/term"
)

// screen owns what is written to the terminal. bubbletea's renderer redraws
// the whole frame whenever any of it changes: it clears its cell buffer,
// parses every line of the frame again and diffs all of them, hashing each
// for scroll detection. A frame a second at 200x60 cost the idle monitor
// most of its CPU that way. screen keeps the last frame's lines, parses and
// diffs only the lines that differ (a few GPU rows and the clock, in steady
// state) and does not look for scrolls, which a dashboard never does.
type screen struct {
	out   io.Writer
	r     *uv.TerminalRenderer
	buf   uv.ScreenBuffer
	lines []string
	w, h  int
	title string
	frame string // the last frame painted
	bell  bool
	open  bool

	profile  colorprofile.Profile
	profiled bool // profile was set
}

func newScreen(out io.Writer, env []string) *screen {
	s := &screen{out: out}
	s.r = uv.NewTerminalRenderer(out, env)
	s.r.SetScrollOptim(false)
	s.r.SetTabStops(-1)
	s.buf = uv.NewScreenBuffer(0, 0)
	return s
}

// setProfile sets how colours are written (true colour, 256, 16, none).
// The cells do not change with it, so a new profile repaints the screen.
func (s *screen) setProfile(p colorprofile.Profile) {
	if s.profiled && p == s.profile {
		return
	}
	s.profile, s.profiled = p, true
	s.r.SetColorProfile(p)
	s.r.Erase()
	s.lines, s.frame = nil, ""
}

// ring asks for the bell with the next paint.
func (s *screen) ring() { s.bell = true }

// paint shows frame on a w×h terminal: the first paint enters the
// alternate screen; a new size repaints everything.
func (s *screen) paint(frame string, w, h int) {
	if w <= 0 || h <= 0 || s.open && frame == s.frame && w == s.w && h == s.h && !s.bell {
		return
	}
	s.frame = frame
	if !s.open {
		s.open = true
		s.r.EnterAltScreen()
		s.r.WriteString(ansi.HideCursor)
		if s.title != "" {
			s.r.WriteString(ansi.SetWindowTitle(s.title))
		}
	}
	if w != s.w || h != s.h {
		s.w, s.h = w, h
		s.r.Resize(w, h)
		s.buf.Resize(w, h)
		s.buf.Clear()
		s.r.Erase()
		s.lines = nil
	}
	lines := strings.Split(frame, "\n")
	if frame == "" {
		lines = nil
	}
	for y := 0; y < h; y++ {
		var l, old string
		if y < len(lines) {
			l = lines[y]
		}
		if y < len(s.lines) {
			old = s.lines[y]
		} else if s.lines != nil {
			old = "" // the last frame was shorter: the line is blank
		}
		if s.lines != nil && l == old {
			continue
		}
		area := uv.Rect(0, y, w, 1)
		s.buf.ClearArea(area)
		uv.NewStyledString(l).Draw(s.buf, area)
	}
	s.lines = lines
	if s.lines == nil {
		s.lines = []string{}
	}
	s.r.Render(s.buf.RenderBuffer)
	if s.bell {
		s.r.WriteString("\a")
		s.bell = false
	}
	s.r.Flush() // a terminal gone away is not ours to report: the runner goes on
}

// close leaves the alternate screen with the cursor shown, as the shell had it.
func (s *screen) close() {
	if !s.open {
		return
	}
	s.open = false
	s.r.MoveTo(0, max(0, s.h-1))
	s.r.ExitAltScreen()
	s.r.WriteString(ansi.ShowCursor)
	s.r.Flush()
}

// painter owns the screen on a goroutine of its own. The event loop
// hands it the latest frame and never waits on the terminal: a terminal
// that stops reading (an ssh link stalled, with no tmux in between) holds
// up the painter, not the keys, and frames made meanwhile give way to the
// newest.
type painter struct {
	scr  *screen
	mu   sync.Mutex
	next paintJob // what is to be painted; the frame stays, the rest is taken
	wake chan struct{}
	done chan struct{}
}

type paintJob struct {
	frame   string
	w, h    int
	bell    bool
	profile *colorprofile.Profile
	closing bool
}

func newPainter(scr *screen) *painter {
	p := &painter{scr: scr, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go p.run()
	return p
}

func (p *painter) post(change func(*paintJob)) {
	p.mu.Lock()
	change(&p.next)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default: // a wake is pending: it will see this too
	}
}

// paint shows frame on a w×h terminal, soon.
func (p *painter) paint(frame string, w, h int) {
	p.post(func(j *paintJob) { j.frame, j.w, j.h = frame, w, h })
}

// ring rings the bell with the next paint.
func (p *painter) ring() { p.post(func(j *paintJob) { j.bell = true }) }

func (p *painter) setProfile(c colorprofile.Profile) {
	p.post(func(j *paintJob) { j.profile = &c })
}

// close paints what is pending, leaves the alternate screen and returns
// when that is written, or after two seconds if the terminal does not take
// it: quitting never hangs on a dead terminal.
func (p *painter) close() {
	p.post(func(j *paintJob) { j.closing = true })
	select {
	case <-p.done:
	case <-time.After(2 * time.Second):
	}
}

func (p *painter) run() {
	defer close(p.done)
	for range p.wake {
		p.mu.Lock()
		j := p.next
		p.next.bell, p.next.profile = false, nil
		p.mu.Unlock()
		if j.profile != nil {
			p.scr.setProfile(*j.profile)
		}
		if j.bell {
			p.scr.ring()
		}
		p.scr.paint(j.frame, j.w, j.h)
		if j.closing {
			p.scr.close()
			return
		}
	}
}

// terminal is the tty the program runs on: raw mode for keys, its size,
// and its size again on SIGWINCH, since with its renderer off bubbletea
// does none of this.
type terminal struct {
	in, out *os.File
	restore *term.State
	winch   chan os.Signal
}

// openTerminal puts the input in raw mode. Input is stdin, or the
// controlling tty when stdin is not one (greenlight run < /dev/null).
func openTerminal() (*terminal, error) {
	t := &terminal{in: os.Stdin, out: os.Stdout}
	if !term.IsTerminal(t.in.Fd()) {
		f, err := os.Open("/dev/tty")
		if err != nil {
			return nil, err
		}
		t.in = f
	}
	st, err := term.MakeRaw(t.in.Fd())
	if err != nil {
		return nil, err
	}
	t.restore = st
	return t, nil
}

func (t *terminal) size() (int, int) {
	w, h, err := term.GetSize(t.out.Fd())
	if err != nil || w <= 0 || h <= 0 {
		return 80, 24
	}
	return w, h
}

// watchSize sends the program a WindowSizeMsg on every SIGWINCH.
func (t *terminal) watchSize(p *tea.Program) {
	t.winch = make(chan os.Signal, 1)
	signal.Notify(t.winch, syscall.SIGWINCH)
	go func() {
		for range t.winch {
			w, h := t.size()
			p.Send(tea.WindowSizeMsg{Width: w, Height: h})
		}
	}()
}

func (t *terminal) close() {
	if t.winch != nil {
		signal.Stop(t.winch)
		close(t.winch)
	}
	if t.restore != nil {
		term.Restore(t.in.Fd(), t.restore)
	}
	if t.in != os.Stdin {
		t.in.Close()
	}
}
