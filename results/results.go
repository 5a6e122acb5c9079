// Package results is the one model of a campaign's results: for every
// phase, its points and their runs (each unit counted by the runner's one
// rule, PointUnits), each metric's mean, 95% interval and n, the
// verdicts (noisy, precise, skipped and by whom, cut), a search's result
// as a typed value, each metric's direction and its basis, and the
// phase's running time over all its runs. It is a function of the plan
// and the campaign's state alone (the runner's own live, Replay's
// from the state dir after any restart): the same inputs give the same
// model. Every view reads it and none decides a verdict of its own: the
// record's blocks and NAME.json (package report), `status` and `status
// --json` (package client), the window and its charts (package tui).
//
// Its rules (units.go: a point's units and their typed outcomes, noise;
// searchrules.go: a search's probes and the words of its conclusion;
// slips.go) are the runner's too: the runner calls them for its own
// decisions. results imports the state types (runner/state), the plan
// and the search's judge; never the runner. Its types are the record's
// (NAME.json) and status --json's as they are.
package results

import (
	"slices"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/search"
	"github.com/greenlight-run/greenlight/runner/state"
)

// Model is a campaign's results, phase by phase in plan order.
type Model struct {
	Phases []Phase
}

// Phase kinds.
const (
	KindSteps   = "steps"   // a phase of plain steps
	KindSweep   = "sweep"   // a grid of points, each run its repeats
	KindSearch  = "search"  // an SLO search over one axis
	KindService = "service" // a server the phases after it use
)

// Phase is one phase's results.
type Phase struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	Status string `json:"status"`
	Rows   int    `json:"rows"` // result rows its steps wrote, every run of every step
	// RunS is its running time, every run of it added (an attempt
	// stopped and resumed, retries); Runs how many runs that is.
	RunS float64 `json:"run_s"`
	Runs int     `json:"runs"`
	// Metrics are the metrics its tables show, each with the way it
	// improves and why that way.
	Metrics []Metric `json:"metrics,omitempty"`
	// A sweep's (or a search's) grid, point by point in plan order.
	Points []Point `json:"points,omitempty"`
	Count  *Counts `json:"count,omitempty"`
	Noise  *Noise  `json:"noise,omitempty"`  // a sweep of repeats: its limit and the points over it
	Repeat *Repeat `json:"repeat,omitempty"` // a sweep's runs of each point
	Search *Search `json:"search,omitempty"` // a search's result
	phase  *campaign.Phase
}

// Metric is a metric and which way it improves.
type Metric struct {
	Name string `json:"name"`
	// Better is "higher", "lower", or "" where nothing says.
	Better campaign.Direction `json:"better,omitempty"`
	// Basis: "" where the campaign said it (better:, an expectation's
	// direction), campaign.ByName where its name did.
	Basis string `json:"basis,omitempty"`
}

// Repeat is a sweep's runs of each point: a fixed number, or until every
// metric's 95% interval is within Precision of its mean (Min to Max
// runs).
type Repeat struct {
	Min       int     `json:"min"`
	Max       int     `json:"max"`
	Precision float64 `json:"precision,omitempty"` // a share of the mean: 0.02
}

// Noise is a sweep's noise limit and the points over it.
type Noise struct {
	Limit float64  `json:"limit"` // coefficient of variation: 0.05
	Basis string   `json:"basis"` // "noise:" (the campaign's) or "default"
	Noisy []string `json:"noisy,omitempty"`
}

// Counts are a grid's points by state.
type Counts struct {
	Points    int `json:"points"`
	Through   int `json:"through"` // needing no more runs: done, precise, skipped, cut, not probed
	Done      int `json:"done"`
	Precise   int `json:"precise,omitempty"`
	Skipped   int `json:"skipped,omitempty"`
	Cut       int `json:"cut,omitempty"`
	NotProbed int `json:"not_probed,omitempty"`
	Running   int `json:"running,omitempty"`
	Failed    int `json:"failed,omitempty"`
	Stopped   int `json:"stopped,omitempty"`
	Pending   int `json:"pending,omitempty"`
}

// PointState is where a point of a grid stands.
type PointState string

const (
	Pending   PointState = "pending"    // runs to come (Runs may be some already)
	Running   PointState = "running"    // a run of it runs now
	Done      PointState = "done"       // every planned run done
	Precise   PointState = "precise"    // stopped as precise after Runs runs (repeat: {until:})
	Skipped   PointState = "skipped"    // skipped by you after Runs runs (Skip says when)
	Cut       PointState = "cut"        // until: failed cut it
	NotProbed PointState = "not-probed" // a search never asked for it
	Failed    PointState = "failed"     // a run of it failed
	Stopped   PointState = "stopped"    // a stop of the campaign cut it; it runs when the campaign resumes
)

// Through says the point needs no more runs.
func (s PointState) Through() bool {
	switch s {
	case Done, Precise, Skipped, Cut, NotProbed:
		return true
	}
	return false
}

// Point is one point of a grid: its runs and what they say.
type Point struct {
	Key     string     `json:"key"`   // concurrency=64,batch=8
	Index   int        `json:"index"` // 1-based, in the grid's order
	State   PointState `json:"state"`
	Runs    int        `json:"runs"`    // runs that count: done (and, in a search, not stamped)
	Planned int        `json:"planned"` // runs planned at most
	Stamped int        `json:"stamped,omitempty"`
	// Reason says why it failed, was stopped, cut or not probed.
	Reason string `json:"reason,omitempty"`
	Skip   *Skip  `json:"skip,omitempty"`
	Stats  []Stat `json:"stats,omitempty"` // the phase's metrics, in its order
	// Noisy: its runs are all in and disagree beyond the noise limit in
	// some metric (Stats say which).
	Noisy bool `json:"noisy,omitempty"`
	// Complete: no run of it is pending or running.
	Complete bool `json:"complete"`
}

// Skip is a point skipped by you: when, and after how many of its runs.
type Skip struct {
	By        string     `json:"by"` // "you": the window's x, or greenlight skip --point
	At        *time.Time `json:"at,omitempty"`
	AfterRuns int        `json:"after_runs"`
	NotRun    int        `json:"not_run"` // its runs it did not do
}

// Stat is one metric at one point, over its runs.
type Stat struct {
	Metric string  `json:"metric"`
	N      int     `json:"n"`
	Mean   float64 `json:"mean"`
	Half   float64 `json:"half"` // the 95% interval's half-width (Student's t); 0 under two runs
	CV     float64 `json:"cv"`   // coefficient of variation; 0 under two runs
	Noisy  bool    `json:"noisy,omitempty"`
	// SD is the runs' sample standard deviation (0 under two): what a
	// comparison's Welch test reads; the model's files say Half and CV.
	SD     float64 `json:"-"`
	values []float64
}

// Values are the runs behind the stat, in repeat order.
func (s Stat) Values() []float64 { return s.values }

// Of is the model of the campaign's results in st, as plan says.
func Of(plan *campaign.Plan, st *state.State) *Model {
	m := &Model{}
	if st == nil {
		return m
	}
	now := st.Now
	if now.IsZero() {
		now = time.Now()
	}
	for i := range st.Phases {
		p := &st.Phases[i]
		ph := plan.Phase(p.ID)
		if ph == nil {
			continue
		}
		m.Phases = append(m.Phases, PhaseOf(ph, p, now))
	}
	return m
}

// Phase is the phase id's results, nil if the model has none.
func (m *Model) Phase(id string) *Phase {
	for i := range m.Phases {
		if m.Phases[i].ID == id {
			return &m.Phases[i]
		}
	}
	return nil
}

// PhaseOf is one phase's results: O(its steps and rows).
func PhaseOf(ph *campaign.Phase, p *state.PhaseState, now time.Time) Phase {
	out := Phase{ID: p.ID, Status: string(p.Status), Kind: KindSteps, phase: ph}
	if now.IsZero() {
		now = time.Now()
	}
	d, runs := p.RunTime(now)
	out.RunS, out.Runs = d.Seconds(), runs
	for _, s := range p.Steps {
		out.Rows += len(s.Results)
	}
	switch sw := ph.Sweep; {
	case ph.Service != nil:
		out.Kind = KindService
	case sw != nil && sw.Search != nil:
		out.Kind = KindSearch
	case sw != nil:
		out.Kind = KindSweep
	}
	if ph.Sweep == nil || len(ph.Sweep.Units) == 0 {
		out.Metrics = metricsOf(ph, PhaseMetrics(ph, ResultColumns(ph, p.Steps)))
		return out
	}
	sw := ph.Sweep
	units := PointUnits(ph, p.Steps)
	names, vals := ValuesOf(ph, units)
	out.Metrics = metricsOf(ph, names)
	out.Repeat = &Repeat{Min: sw.Repeats.Min, Max: sw.Repeats.Max, Precision: sw.Repeats.Precision}
	if sw.Search != nil {
		out.Repeat = &Repeat{Min: sw.Search.MinRepeats, Max: sw.Search.MaxRepeats}
	}
	judgeNoise := sw.Search == nil && sw.Repeats.Max >= 2
	if judgeNoise {
		basis := "default"
		if sw.NoiseSet {
			basis = "noise:"
		}
		out.Noise = &Noise{Limit: sw.Noise, Basis: basis}
	}
	c := &Counts{}
	judged := probesEnded(ph, p)
	index := 0
	for _, u := range sw.Units {
		if u.Repeat != 1 {
			continue
		}
		index++
		pt := pointOf(units[u.Point])
		if judged[u.Point] && pt.State == Pending {
			// A probe the search has judged takes no more runs, whether
			// the search goes on, was stopped or ended: its runs left
			// are never run, as the record's table of probes says.
			pt.State, pt.Complete = Done, true
		}
		pt.Key, pt.Index = sw.Key(u), index
		for _, name := range names {
			xs := vals[name][u.Point]
			if len(xs) == 0 {
				continue
			}
			s := StatOf(name, xs)
			s.Noisy = judgeNoise && pt.Complete && Noisy(xs, sw.Noise)
			pt.Noisy = pt.Noisy || s.Noisy
			pt.Stats = append(pt.Stats, s)
		}
		if pt.Noisy {
			out.Noise.Noisy = append(out.Noise.Noisy, pt.Key)
		}
		c.add(pt.State)
		out.Points = append(out.Points, pt)
	}
	out.Count = c
	if sw.Search != nil {
		out.Search = searchOf(ph, p, units)
	}
	return out
}

// probesEnded are the points (by index) of a search's probes that
// have ended: judged, or out of runs. nil for a grid.
func probesEnded(ph *campaign.Phase, p *state.PhaseState) map[int]bool {
	ss := ph.Sweep.Search
	if ss == nil {
		return nil
	}
	s, _ := SearchProbes(ph, p.Steps)
	out := map[int]bool{}
	for _, pr := range s.Probes {
		if i := slices.Index(ss.Values, pr.Value); i >= 0 {
			out[i] = true
		}
	}
	return out
}

// pointOf is a point's state from its units' outcomes: a run running
// first, then a failure, a stop; a point with runs to come is pending;
// else, of a point through, what cut its runs short (skipped by you, not
// needed as precise, until:, the search not asking), or done.
func pointOf(units []UnitRun) Point {
	pt := Point{Planned: len(units), Complete: true}
	has := map[Outcome]int{}
	var skipAt time.Time
	for _, u := range units {
		has[u.Outcome]++
		switch u.Outcome {
		case UnitDone:
			pt.Runs++
			if u.Stamp != "" {
				pt.Stamped++
			}
		case UnitStamped:
			pt.Stamped++
		case UnitSkipped:
			if skipAt.IsZero() || u.Ended.Before(skipAt) {
				skipAt = u.Ended
			}
		}
		if u.Outcome.Open() {
			pt.Complete = false
		}
		switch u.Outcome {
		case UnitFailed, UnitStopped, UnitCut, UnitNotProbed:
			if pt.Reason == "" {
				pt.Reason = u.Reason
			}
		}
	}
	switch {
	case has[UnitRunning] > 0:
		pt.State = Running
	case has[UnitFailed] > 0:
		pt.State = Failed
	case has[UnitStopped] > 0:
		pt.State = Stopped
	case has[UnitPending] > 0:
		pt.State = Pending
	case has[UnitSkipped] > 0:
		pt.State = Skipped
		pt.Skip = &Skip{By: "you", AfterRuns: pt.Runs, NotRun: has[UnitSkipped]}
		if !skipAt.IsZero() {
			at := skipAt.UTC()
			pt.Skip.At = &at
		}
	case has[UnitPrecise] > 0:
		pt.State = Precise
	case has[UnitCut] > 0: // its first runs may have run before until: cut the rest
		pt.State = Cut
	case has[UnitNotProbed] > 0 && pt.Runs == 0 && pt.Stamped == 0:
		pt.State = NotProbed
	default:
		pt.State = Done
	}
	if pt.State == Done || pt.State == Precise || pt.State == Skipped {
		pt.Reason = ""
	}
	return pt
}

func (c *Counts) add(s PointState) {
	c.Points++
	if s.Through() {
		c.Through++
	}
	switch s {
	case Done:
		c.Done++
	case Precise:
		c.Precise++
	case Skipped:
		c.Skipped++
	case Cut:
		c.Cut++
	case NotProbed:
		c.NotProbed++
	case Running:
		c.Running++
	case Failed:
		c.Failed++
	case Stopped:
		c.Stopped++
	default:
		c.Pending++
	}
}

// StatOf is xs's mean, 95% interval (Student's t) and coefficient of
// variation.
func StatOf(metric string, xs []float64) Stat {
	s := Stat{Metric: metric, N: len(xs), values: xs}
	switch len(xs) {
	case 0:
	case 1:
		s.Mean = xs[0]
	default:
		s.Mean, s.SD, s.Half = search.Interval(xs)
		s.CV = CV(xs)
	}
	// JSON has no NaN or infinity: a value that overflowed is said as 0
	// (its rows, in the CSV and the record, keep what was written).
	s.Mean, s.Half, s.CV, s.SD = finite(s.Mean), finite(s.Half), finite(s.CV), finite(s.SD)
	return s
}

// Stat is the point's stat of metric, and whether it has one.
func (pt *Point) Stat(metric string) (Stat, bool) {
	for _, s := range pt.Stats {
		if s.Metric == metric {
			return s, true
		}
	}
	return Stat{}, false
}

// Point is the phase's point of key, nil if none.
func (p *Phase) Point(key string) *Point {
	for i := range p.Points {
		if p.Points[i].Key == key {
			return &p.Points[i]
		}
	}
	return nil
}

// MetricNames are the phase's metrics, in order.
func (p *Phase) MetricNames() []string {
	out := make([]string, len(p.Metrics))
	for i, m := range p.Metrics {
		out[i] = m.Name
	}
	return out
}

// metricsOf are names with their directions.
func metricsOf(ph *campaign.Phase, names []string) []Metric {
	dirs := campaign.Better(ph)
	out := make([]Metric, 0, len(names))
	for _, n := range names {
		d, basis := campaign.Way(dirs, n, true)
		out = append(out, Metric{Name: n, Better: d, Basis: basis})
	}
	return out
}
