// Package tui is the window kept open on a campaign: header, phases, GPU
// gauges, a detail pane (log tail, live results preview, GPU processes)
// and the keys that pause, freeze, skip, retry and greenlight phases.
//
// It consumes runner events and GPU samples as messages and commands the
// runner through Controller, always from a tea.Cmd: Update and View never
// block on a file, NVML or the runner.
package tui

import (
	"fmt"
	"github.com/greenlight-run/greenlight/internal/safe"
	"io"
	"os"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/runner"
)

// Controller is what the TUI asks of the runner.
type Controller interface {
	Pause() error
	Resume() error
	Freeze() error
	Thaw() error
	Skip(id string) error
	SkipPoint(id, point string) error
	Retry(id string) error
	Greenlight(id string) error
	Stop() error
	Note(text string) error
}

// GPUs is what the TUI reads of the sampler.
type GPUs interface {
	Samples() <-chan []gpu.Sample
	History(id gpu.DeviceID, n int) []gpu.Point
	Hosts() []gpu.HostState
	Inventory() gpu.Inventory
}

// Options wire the program.
type Options struct {
	Runner       Controller
	Events       <-chan runner.Event
	Sampler      GPUs // may be nil
	Plan         *campaign.Plan
	ReportPath   string
	StateDir     string
	Note         string         // said once in the log pane, e.g. why there is no GPU
	Earlier      []runner.Event // what happened before this window attached: listed, no bell
	ReportErrors <-chan error
	Now          func() time.Time
	// Output is where frames are painted; nil is the terminal on stdout,
	// put in raw mode and watched for resizes by Run.
	Output      io.Writer
	ProgramOpts []tea.ProgramOption
}

// Result is how the program ended.
type Result struct {
	Final       *runner.State
	Interrupted bool // the user left before the campaign finished
	Detached    bool // the user chose to leave the campaign running
	Message     string
}

type focus int

const (
	detailLog focus = iota
	detailReport
	detailProcs
)

// Messages.
type (
	eventMsg     runner.Event
	eventsDone   struct{}
	samplesMsg   []gpu.Sample
	tickMsg      time.Time
	ctlDoneMsg   struct{ err error }
	reportErrMsg struct{ err error }
)

type confirmKind int

const (
	noConfirm confirmKind = iota
	confirmSkip
	confirmSkipPoint // the running point of a sweep
	confirmQuit
	confirmStop // asked again: stopping ends the campaign
)

// model is the root: it routes messages to panes and draws them.
type model struct {
	opts         Options
	keys         keyMap
	st           styles
	gl           glyphs
	w, h         int
	state        *runner.State
	samples      []gpu.Sample
	hosts        []gpu.HostState // remote hosts as of the last samples
	sel          int
	picked       bool // the person moved the selection off the running phase: it no longer follows it
	detail       focus
	help         bool
	chart        bool      // the chart screen (c) is open
	chartMetric  int       // which of its metrics it shows (tab)
	skipPoint    string    // the point confirmSkipPoint asks about
	note         *[]rune   // the note being typed (N), nil when none is
	unseen       []string  // warnings not yet read (W): they stay on the status line until then
	warnList     bool      // the warnings overlay is open
	rows         chartRows // the chart's phase's results, asked of the runner
	confirm      confirmKind
	flash        string
	flashAt      time.Time
	logs         *logPane
	preview      *previewPane
	result       Result
	quitting     bool
	stopThenQuit bool
	frame        string // the last frame drawn
	force        bool   // draw a frame at the next View
	artPhase     string
	artSize      int64
	artAt        time.Time
	artRate      float64
	now          func() time.Time
	scr          *painter
}

func newModel(o Options) *model {
	if o.Now == nil {
		o.Now = time.Now
	}
	m := &model{opts: o, keys: newKeyMap(), st: newStyles(true), gl: pickGlyphs(), w: 80, h: 24, now: o.Now}
	m.logs = newLogPane(o.Note)
	for _, e := range o.Earlier {
		m.logs.event(e)
	}
	m.preview = newPreviewPane(o.ReportPath)
	out := o.Output
	if out == nil {
		out = os.Stdout
	}
	scr := newScreen(out, os.Environ())
	scr.title = "greenlight"
	if o.Plan != nil {
		scr.title = "greenlight: " + o.Plan.Name
	}
	m.scr = newPainter(scr)
	return m
}

// Run shows the program until the user quits; it returns the last state.
//
// bubbletea runs the event loop and reads the keys; its renderer is off,
// since the screen paints frames itself (see screen). Its ticker then only
// flushes what bubbletea writes on its own (the background colour query),
// so once a second is enough.
func Run(o Options) (Result, error) {
	m := newModel(o)
	opts := []tea.ProgramOption{tea.WithoutRenderer(), tea.WithFPS(1)}
	var t *terminal
	if o.Output == nil {
		var err error
		if t, err = openTerminal(); err != nil {
			return m.result, fmt.Errorf("terminal: %w", err)
		}
		defer t.close()
		w, h := t.size()
		opts = append(opts, tea.WithInput(t.in), tea.WithWindowSize(w, h))
	}
	p := tea.NewProgram(m, append(opts, o.ProgramOpts...)...)
	if t != nil {
		t.watchSize(p)
		// bubbletea's ticker (it flushes its own writes) starts with Run:
		// started on the second, it falls in the same wakeup as the rest.
		// The first frame is up meanwhile.
		m.w, m.h = t.size()
		m.scr.setProfile(colorprofile.Detect(os.Stdout, os.Environ()))
		m.View()
		time.Sleep(untilNextSecond(time.Now()))
	}
	go m.preview.watch(p)
	final, err := p.Run()
	if fm, ok := final.(*model); ok {
		m = fm
	}
	m.scr.close()
	m.preview.stop()
	m.result.Final = m.state
	return m.result, err
}

func (m *model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.waitEvent(), tick(), tea.RequestBackgroundColor, m.preview.load(), m.logs.read(m.selected())}
	if m.opts.Sampler != nil {
		cmds = append(cmds, m.waitSamples())
	}
	if m.opts.ReportErrors != nil {
		cmds = append(cmds, m.waitReportErr())
	}
	return tea.Batch(cmds...)
}

func (m *model) waitEvent() tea.Cmd {
	return func() tea.Msg {
		e, ok := <-m.opts.Events
		if !ok {
			return eventsDone{}
		}
		return eventMsg(e)
	}
}

func (m *model) waitSamples() tea.Cmd {
	ch := m.opts.Sampler.Samples()
	return func() tea.Msg { return samplesMsg(<-ch) }
}

func (m *model) waitReportErr() tea.Cmd {
	return func() tea.Msg { return reportErrMsg{<-m.opts.ReportErrors} }
}

// tick is the screen's clock. It falls on the second, with the runner's
// poll and the GPU sampler's round: the idle monitor wakes once a second
// for all three. What they bring in that wakeup may come after the frame;
// it shows at the next tick.
func tick() tea.Cmd {
	return tea.Tick(untilNextSecond(time.Now()), func(t time.Time) tea.Msg { return tickMsg(t) })
}

func untilNextSecond(now time.Time) time.Duration {
	return now.Truncate(time.Second).Add(time.Second).Sub(now)
}

// Update routes a message, then decides when the screen is drawn again:
// at once for keys, resizes and what answers them (a runner call done, a
// state change, the preview); for data that flows all the time (samples,
// progress, the log) at the clock's next tick, so that an idle screen is
// drawn once a second, in the same wakeup as everything else.
func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := m.route(msg)
	switch msg := msg.(type) {
	case samplesMsg, logMsg:
	case eventMsg:
		m.force = m.force || msg.Kind != runner.Progress
	default: // the clock's tick included: the clocks on screen move
		m.force = true
	}
	return m, cmd
}

func (m *model) route(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		return m, m.preview.resize(m.detailWidth(), m.detail == detailReport)
	case tea.BackgroundColorMsg:
		m.st = newStyles(msg.IsDark())
		return m, nil
	case tea.ColorProfileMsg:
		m.scr.setProfile(msg.Profile)
		return m, nil
	case eventMsg:
		return m, m.onEvent(runner.Event(msg))
	case eventsDone:
		return m, nil
	case samplesMsg:
		m.samples = msg
		m.hosts = m.opts.Sampler.Hosts()
		return m, m.waitSamples()
	case tickMsg:
		return m, tea.Batch(tick(), m.logs.read(m.selected()), m.chartRows(false))
	case chartRowsMsg:
		m.rows.pending = false
		if msg.err == nil {
			m.rows.phase, m.rows.steps, m.rows.at = msg.phase, msg.steps, m.now()
		}
		return m, nil
	case logMsg:
		m.logs.set(msg)
		return m, nil
	case previewMsg:
		return m, m.preview.update(msg, m.detailWidth(), m.detail == detailReport)
	case renderedMsg:
		m.preview.rendered(msg)
		return m, nil
	case ctlDoneMsg:
		if msg.err != nil {
			m.say(msg.err.Error())
		}
		return m, nil
	case reportErrMsg:
		m.say("results file: " + msg.err.Error())
		return m, m.waitReportErr()
	case tea.KeyPressMsg:
		return m, m.onKey(msg)
	}
	return m, nil
}

func (m *model) say(s string) {
	m.flash, m.flashAt = s, m.now()
}

// onEvent keeps the latest state and rings the bell when a person is
// wanted: a failure, a waiting gate, the end.
func (m *model) onEvent(e runner.Event) tea.Cmd {
	m.state = e.State
	cmds := []tea.Cmd{m.waitEvent()}
	if i := m.running(); !m.picked && i >= 0 && i != m.sel {
		// The selection follows what runs, however far down the list it
		// is, until the person picks another phase.
		m.sel = i
		cmds = append(cmds, m.logs.read(m.selected()))
	}
	m.trackArtifacts()
	switch e.Kind {
	case runner.PhaseFinished:
		if ps := e.State.Phase(e.Phase); ps != nil && ps.Status == runner.Failed {
			m.scr.ring()
		}
	case runner.GateWaiting, runner.CampaignFinished:
		m.scr.ring()
	}
	if e.Kind == runner.CampaignFinished && m.stopThenQuit {
		cmds = append(cmds, m.quit(true, "greenlight: stopped the running steps"))
	}
	if e.Message != "" { // a Progress event says something only for news (a Slurm job's)
		m.logs.event(e)
	}
	if e.Kind == runner.Warning && e.Message != "" {
		m.unseen = append(m.unseen, e.Time.Format("15:04:05")+" "+safe.Line(e.Message, safe.Value))
		if len(m.unseen) > maxUnseen {
			m.unseen = m.unseen[len(m.unseen)-maxUnseen:]
		}
	}
	return tea.Batch(cmds...)
}

// running is the phase the selection follows: the first phase running a
// step, else the first waiting at its gate; -1 when none.
func (m *model) running() int {
	if m.state == nil {
		return -1
	}
	wait := -1
	for i, p := range m.state.Phases {
		switch {
		case p.Status == runner.Running:
			return i
		case p.Status == runner.Waiting && wait < 0:
			wait = i
		}
	}
	return wait
}

// gateTarget is the phase g greenlights: the selected one when it is
// gated, else the first that waits at its gate, so that "press g" on the
// waiting row works wherever the selection is; -1 when none.
func (m *model) gateTarget() int {
	if m.state == nil {
		return -1
	}
	if ps := m.selected(); ps != nil && ps.Gated() {
		return m.sel
	}
	for i := range m.state.Phases {
		if m.state.Phases[i].Status == runner.Waiting {
			return i
		}
	}
	return -1
}

func (m *model) selected() *runner.PhaseState {
	if m.state == nil || m.sel >= len(m.state.Phases) {
		return nil
	}
	return &m.state.Phases[m.sel]
}

// ctl runs a runner control off the UI loop.
func (m *model) ctl(f func() error) tea.Cmd {
	return func() tea.Msg { return ctlDoneMsg{f()} }
}

// maxUnseen bounds the warnings kept for W.
const maxUnseen = 50
