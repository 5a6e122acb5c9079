package tui

import (
	"github.com/greenlight-run/greenlight/report/mdfile"
	"os"
	"path/filepath"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/glamour/v2"
	gansi "charm.land/glamour/v2/ansi"
	gstyles "charm.land/glamour/v2/styles"
	"github.com/charmbracelet/x/ansi"
	"github.com/fsnotify/fsnotify"
)

// previewPane shows the results file rendered with glamour. A watcher on
// the file's folder (editors and our own writes replace the file by
// rename) re-reads it; rendering happens in a Cmd; the scroll position is
// kept across updates.
type previewPane struct {
	path    string
	content string
	width   int
	lines   []string
	top     int
	err     string
	stale   bool // content or width changed since the last rendering
	done    chan struct{}
}

type previewMsg struct {
	content string
	err     error
}

type renderedMsg struct {
	width int
	lines []string
}

func newPreviewPane(path string) *previewPane {
	return &previewPane{path: path, done: make(chan struct{})}
}

// load reads the file once, off the UI loop.
func (p *previewPane) load() tea.Cmd {
	path := p.path
	return func() tea.Msg { return readPreview(path) }
}

// readPreview is the results file as it stands, or, while an editor holds
// it (the file lags the results), the file as it would be written: kept
// beside it by the writer.
func readPreview(path string) previewMsg {
	if b, err := os.ReadFile(mdfile.PreviewOf(path)); err == nil {
		return previewMsg{content: string(b)}
	}
	b, err := os.ReadFile(path)
	return previewMsg{content: string(b), err: err}
}

// watch sends a previewMsg within about 100 ms of each change to the file.
func (p *previewPane) watch(prog *tea.Program) {
	if p.path == "" {
		return
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		prog.Send(previewMsg{err: err})
		return
	}
	defer w.Close()
	dir := filepath.Dir(p.path)
	os.MkdirAll(dir, 0o755)
	if err := w.Add(dir); err != nil {
		prog.Send(previewMsg{err: err})
		return
	}
	var debounce <-chan time.Time
	for {
		select {
		case <-p.done:
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if name := filepath.Clean(ev.Name); (name == filepath.Clean(p.path) || name == filepath.Clean(mdfile.PreviewOf(p.path))) && debounce == nil {
				debounce = time.After(60 * time.Millisecond)
			}
		case <-w.Errors:
		case <-debounce:
			debounce = nil
			prog.Send(readPreview(p.path))
		}
	}
}

func (p *previewPane) stop() {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
}

// update takes new file contents; they are rendered only while the pane is
// shown (glamour is the costliest thing the program does), else on show.
func (p *previewPane) update(msg previewMsg, width int, visible bool) tea.Cmd {
	if msg.err != nil {
		if os.IsNotExist(msg.err) {
			p.err = "the results file is not written yet: " + p.path
		} else {
			p.err = msg.err.Error()
		}
		return nil
	}
	p.err = ""
	if msg.content == p.content && width == p.width && p.lines != nil {
		return nil
	}
	p.content = msg.content
	p.stale = true
	if !visible {
		return nil
	}
	return p.render(width)
}

func (p *previewPane) resize(width int, visible bool) tea.Cmd {
	if width != p.width {
		p.stale = true
	}
	if !visible || p.content == "" {
		return nil
	}
	return p.show(width)
}

// show renders the pane if the file or the width changed since it was
// last rendered.
func (p *previewPane) show(width int) tea.Cmd {
	if !p.stale && width == p.width {
		return nil
	}
	return p.render(width)
}

func (p *previewPane) render(width int) tea.Cmd {
	content := p.content
	p.width, p.stale = width, false
	return func() tea.Msg { return renderedMsg{width: width, lines: renderMarkdown(content, width)} }
}

func glamourStyle() string {
	switch {
	case os.Getenv("NO_COLOR") != "":
		return "notty"
	case !localeIsUTF8(os.Getenv):
		return "ascii"
	}
	return "dark"
}

// previewStyle is glamour's style for the terminal, made to read as a
// document rather than as its source: headings by their style, not "## ";
// inline code without padding ("(serve)", not "( serve )"); and with
// colour off or ASCII only, bold as bold, not as "**".
func previewStyle() gansi.StyleConfig {
	var s gansi.StyleConfig
	switch glamourStyle() {
	case "dark":
		s = gstyles.DarkStyleConfig
		s.H2.Prefix, s.H3.Prefix = "", ""
		s.Code.Prefix, s.Code.Suffix = "", ""
	default:
		s = gstyles.ASCIIStyleConfig
		bold := true
		s.Strong.BlockPrefix, s.Strong.BlockSuffix, s.Strong.Bold = "", "", &bold
	}
	return s
}

func renderMarkdown(content string, width int) []string {
	r, err := glamour.NewTermRenderer(glamour.WithStyles(previewStyle()), glamour.WithWordWrap(max(20, width-2)))
	out := content
	if err == nil {
		if s, err := r.Render(content); err == nil {
			out = s
		}
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return lines
}

func (p *previewPane) rendered(msg renderedMsg) {
	if msg.width != p.width {
		return // an older width's rendering
	}
	p.lines = msg.lines
	p.top = min(p.top, max(0, len(p.lines)-1))
}

// scroll moves by n lines, stopping where the last line shows at the
// bottom of a pane of rows lines.
func (p *previewPane) scroll(n, rows int) {
	p.top = max(0, min(p.top+n, len(p.lines)-rows))
}

func (p *previewPane) view(st *styles, width, rows int) []string {
	if p.err != "" && len(p.lines) == 0 {
		return []string{st.dim.Render(ansi.Truncate(p.err, width, "…"))}
	}
	if len(p.lines) == 0 {
		return []string{st.dim.Render("rendering the results file…")}
	}
	end := min(len(p.lines), p.top+rows)
	out := make([]string, 0, rows)
	for _, l := range p.lines[p.top:end] {
		out = append(out, ansi.Truncate(l, width, ""))
	}
	return out
}
