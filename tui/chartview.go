package tui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/results"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// The chart screen (c): the selected phase's sweep, one metric at a time
// along its axis (the plot: x, else the first), a line per point of the
// other axes, each point the mean of its repeats; a phase without a sweep
// shows its GPUs over the phase, one line per GPU. tab turns to the next
// metric, ↑/↓ to another phase, c or esc closes it. Drawn from the state
// and the sampler at each frame, so it grows as points land.

// gpuMetrics are the GPU history's charts, in tab order.
var gpuMetrics = []struct {
	name, unit string
	of         func(p gpu.Point) float32
	max        float64 // a fixed top (100 for a percentage), 0: from the data
}{
	{"utilization", "%", func(p gpu.Point) float32 { return p.Util }, 100},
	{"memory used", "GiB", func(p gpu.Point) float32 { return p.MemUsed }, 0},
	{"power", "W", func(p gpu.Point) float32 { return p.Power }, 0},
	{"temperature", "°C", func(p gpu.Point) float32 { return p.Temp }, 0},
}

// chartView is the chart screen at the window's size.
func (m *model) chartView() string {
	ps := m.selected()
	if ps == nil {
		return "no phase to chart · c: close"
	}
	if m.gl.full == asciiGlyphs.full {
		return "charts are drawn in braille: they need a UTF-8 terminal (LANG=C.UTF-8) · c: close"
	}
	var ph *campaign.Phase
	if m.opts.Plan != nil {
		ph = m.opts.Plan.Phase(ps.ID)
	}
	var spec chartSpec
	if ph != nil && ph.Sweep != nil && len(ph.Sweep.Axes) > 0 {
		spec = sweepSpec(ph, m.chartResults(ph, m.withRows(ps)), m.chartMetric)
	} else {
		spec = m.gpuSpec(ps, m.chartMetric)
	}
	spec.keys = "tab: next metric · ↑/↓: phase · c: close"
	paint := func(i int, s string) string {
		if i < 0 || len(m.st.series) == 0 {
			return s
		}
		return m.st.series[i%len(m.st.series)].Render(s)
	}
	return strings.Join(drawChart(spec, m.w, m.h, paint), "\n")
}

// chartResults is the results model of the chart's phase as ps has it,
// made once a state (the runner publishes a new one, new steps, at each
// change).
func (m *model) chartResults(ph *campaign.Phase, ps *runner.PhaseState) *results.Phase {
	if len(ps.Steps) == 0 || m.rows.of != &ps.Steps[0] || m.rows.model.ID != ps.ID {
		m.rows.model = results.PhaseOf(ph, ps, time.Now())
		m.rows.of = nil
		if len(ps.Steps) > 0 {
			m.rows.of = &ps.Steps[0]
		}
	}
	return &m.rows.model
}

// sweepSpec is a sweep phase's chart of its k-th metric (in turn; those
// plot: y: names when it names them), from its results model.
func sweepSpec(ph *campaign.Phase, rp *results.Phase, k int) chartSpec {
	metrics := rp.MetricNames()
	keys := map[int]string{}
	for _, u := range ph.Sweep.Units {
		keys[u.Point] = ph.Sweep.Key(u)
	}
	if c := ph.Curves; c != nil && len(c.Y) > 0 {
		metrics = c.Y
	}
	lay := ph.Layout()
	spec := chartSpec{title: fmt.Sprintf("%s: no results yet", ph.Label()), xLabel: lay.Axis.Name, logX: lay.LogX}
	if len(metrics) == 0 {
		return spec
	}
	metric := metrics[k%len(metrics)]
	for i, v := range lay.Axis.Values {
		// Every value of the axis, measured or not: the chart spans the
		// grid from its first point and does not jump as points land.
		spec.ticks = append(spec.ticks, chartTick{lay.X[i], v.Name})
	}
	points, measured := 0, 0
	for _, l := range lay.Lines {
		line := chartLine{name: cmp.Or(l.Name, metric)}
		for _, pt := range l.Points {
			points++
			p := rp.Point(keys[pt.Point])
			if p == nil {
				continue
			}
			s, ok := p.Stat(metric)
			if !ok || s.N == 0 {
				continue
			}
			measured++
			line.xs = append(line.xs, pt.X)
			line.ys = append(line.ys, s.Mean)
		}
		spec.lines = append(spec.lines, line)
	}
	spec.title = fmt.Sprintf("%s: %s by %s · %d of %d points measured (mean of runs) · metric %d/%d", ph.Label(), metric, lay.Axis.Name, measured, points, k%len(metrics)+1, len(metrics))
	spec.yLabel = metric
	return spec
}

// gpuSpec is a phase's GPUs over the phase (to now while it runs): its
// k-th GPU metric in turn, one line per GPU, x in minutes from its start.
func (m *model) gpuSpec(ps *runner.PhaseState, k int) chartSpec {
	gm := gpuMetrics[k%len(gpuMetrics)]
	spec := chartSpec{xLabel: "time from the phase's start", yLabel: gm.name + " (" + gm.unit + ")"}
	zero := 0.0
	spec.yMin = &zero
	if gm.max > 0 {
		spec.yMax = &gm.max
	}
	title := fmt.Sprintf("%s: GPU %s over the phase · metric %d/%d", ps.Title, gm.name, k%len(gpuMetrics)+1, len(gpuMetrics))
	if ps.Started.IsZero() || m.opts.Sampler == nil {
		spec.title = ps.Title + ": not started; its GPUs are charted from its start"
		if m.opts.Sampler == nil {
			spec.title = ps.Title + ": no GPU source"
		}
		return spec
	}
	end := ps.Ended
	if end.IsZero() {
		end = m.now()
	}
	for _, d := range m.opts.Sampler.Inventory().Devices {
		if d.Host == "" && ps.GPUs != nil && !slices.Contains(ps.GPUs, d.Index) {
			continue
		}
		l := chartLine{name: gpuName(d)}
		// The history since the phase began, not all of it: at most ten
		// readings a second (the sampler's fastest), drawn at each frame.
		n := min(1<<20, int(m.now().Sub(ps.Started).Seconds()*10)+10)
		for _, p := range m.opts.Sampler.History(d.ID(), n) {
			if p.T.Before(ps.Started) || p.T.After(end) || p.Lost {
				continue
			}
			if v := gm.of(p); v >= 0 {
				l.xs = append(l.xs, p.T.Sub(ps.Started).Minutes())
				l.ys = append(l.ys, float64(v))
			}
		}
		spec.lines = append(spec.lines, l)
	}
	span := end.Sub(ps.Started)
	for i := range 5 {
		at := span * time.Duration(i) / 4
		spec.ticks = append(spec.ticks, chartTick{at.Minutes(), format.Duration(at.Round(time.Second))})
	}
	spec.title = title
	return spec
}

func gpuName(d gpu.Device) string {
	if d.Host != "" {
		return fmt.Sprintf("%s:%d", d.Host, d.Index)
	}
	return fmt.Sprintf("GPU %d", d.Index)
}

// RowSource gives a phase's steps with their results rows. A window
// attached to a runner has events without rows (they would grow with the
// campaign); its chart asks for them, off the update loop, while it is
// open (Options.Runner, when it is one).
type RowSource interface {
	PhaseRows(id string) ([]runner.StepState, error)
}

// chartRows is what the chart last got of its phase's rows.
type chartRows struct {
	phase   string
	steps   []runner.StepState
	at      time.Time
	pending bool
	// of is the results model last made for the chart, and the steps it
	// was made of: a view drawn again of the same state reads it, not
	// the rows again.
	of    *runner.StepState
	model results.Phase
}

type chartRowsMsg struct {
	phase string
	steps []runner.StepState
	err   error
}

// chartRowsEvery is how often an open chart asks for its phase's rows.
const chartRowsEvery = 3 * time.Second

// chartRows asks the runner for the chart's phase's rows when the chart is
// open on a sweep and they are older than chartRowsEvery (now: at once).
func (m *model) chartRows(now bool) tea.Cmd {
	src, ok := m.opts.Runner.(RowSource)
	ps := m.selected()
	if !ok || !m.chart || ps == nil || m.rows.pending || m.opts.Plan == nil {
		return nil
	}
	if ph := m.opts.Plan.Phase(ps.ID); ph == nil || ph.Sweep == nil {
		return nil
	}
	if !now && m.rows.phase == ps.ID && m.now().Sub(m.rows.at) < chartRowsEvery {
		return nil
	}
	m.rows.pending = true
	id := ps.ID
	return func() tea.Msg {
		steps, err := src.PhaseRows(id)
		return chartRowsMsg{phase: id, steps: steps, err: err}
	}
}

// withRows is the phase's state with the rows the chart got, where the
// state itself has none.
func (m *model) withRows(ps *runner.PhaseState) *runner.PhaseState {
	if m.rows.phase != ps.ID || len(m.rows.steps) == 0 {
		return ps
	}
	for _, s := range ps.Steps {
		if len(s.Results) > 0 {
			return ps // the state has them (a runner in this process)
		}
	}
	c := *ps
	c.Steps = m.rows.steps
	return &c
}
