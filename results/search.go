package results

import (
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/search"
	"github.com/greenlight-run/greenlight/runner/state"
)

// Search is what an SLO search concluded, replayed from its units' rows
// as the runner decided (SearchProbes): the limit, its bracket,
// the term that binds there and its margin, each probe.
type Search struct {
	Axis      string `json:"axis"`
	Lo        int    `json:"lo"`
	Hi        int    `json:"hi"`
	SLO       []Term `json:"slo"`
	MaxProbes int    `json:"max_probes"`
	// Found: some value meets the SLO; Limit is the largest that does.
	Found bool `json:"found"`
	Limit int  `json:"limit,omitempty"`
	// Above is the smallest value over the limit that failed or could
	// not be told (0: none: the whole range passes so far), and what it
	// got.
	Above        int            `json:"above,omitempty"`
	AboveVerdict search.Verdict `json:"above_verdict,omitempty"`
	// Indeterminate: the bracket's top could not be told after its runs
	// (its 95% interval straddles a limit).
	Indeterminate bool `json:"indeterminate,omitempty"`
	// Binding is the SLO term closest to its limit at the limit, Margin
	// its distance inside, as a share of the limit.
	Binding string  `json:"binding,omitempty"`
	Margin  float64 `json:"margin,omitempty"`
	// Done: the bracket is as narrow as asked, or nothing is left to try.
	Done    bool    `json:"done"`
	Probes  []Probe `json:"probes"`
	Runs    int     `json:"runs"`              // the runs its probes took
	Probing int     `json:"probing,omitempty"` // the value a run of which runs now
	Run     int     `json:"run,omitempty"`     // which run of it
	// Slip: the search stopped because its SLO names a column no run
	// wrote; it has no limit.
	Slip string `json:"slip,omitempty"`
	// Words is the conclusion as every view says it.
	Words string `json:"words"`
	s     *search.Search
}

// Term is one term of the SLO.
type Term struct {
	Metric string    `json:"metric"`
	Op     search.Op `json:"op"`
	Limit  float64   `json:"limit"`
}

// Probe is one value tried: its runs, its verdict, the term that decided
// it and that term's margin, and each SLO metric over its runs.
type Probe struct {
	Value   int            `json:"value"`
	Runs    int            `json:"runs"`
	Verdict search.Verdict `json:"verdict"`
	Binding string         `json:"binding,omitempty"`
	Margin  float64        `json:"margin"`
	Stats   []Stat         `json:"stats"`
}

// Replay is the search's probes as the runner replayed them, for the
// views that draw them.
func (s *Search) Replay() *search.Search { return s.s }

// Probe is the probe of value v, nil if none.
func (s *Search) Probe(v int) *Probe {
	for i := range s.Probes {
		if s.Probes[i].Value == v {
			return &s.Probes[i]
		}
	}
	return nil
}

func searchOf(ph *campaign.Phase, p *state.PhaseState, units map[int][]UnitRun) *Search {
	ss := ph.Sweep.Search
	s, _ := SearchProbes(ph, p.Steps)
	out := &Search{Axis: ss.Axis, Lo: ss.Lo, Hi: ss.Hi, MaxProbes: ss.MaxProbes(), s: s}
	for _, t := range ss.SLO {
		out.SLO = append(out.SLO, Term{Metric: t.Metric, Op: t.Op, Limit: t.Limit})
	}
	for _, pr := range s.Probes {
		probe := Probe{Value: pr.Value, Runs: pr.Repeats, Verdict: pr.Verdict, Binding: pr.Binding, Margin: finite(pr.Margin)}
		for _, t := range ss.SLO {
			if xs := pr.Runs[t.Metric]; len(xs) > 0 {
				probe.Stats = append(probe.Stats, StatOf(t.Metric, xs))
			}
		}
		out.Runs += pr.Repeats
		out.Probes = append(out.Probes, probe)
	}
	if why := SearchSlip(ph, p.Steps); why != "" {
		out.Slip, out.Done, out.Words = why, p.Status.Finished(), "stopped: "+why
		return out
	}
	r := s.Result()
	out.Found, out.Above, out.Binding = r.OK, r.Above, r.Binding
	out.Done = r.Done && p.Status.Finished()
	if r.OK {
		out.Limit = r.Limit
		if at := out.Probe(r.Limit); at != nil {
			out.Margin = at.Margin
		}
	}
	if a := out.Probe(r.Above); a != nil {
		out.AboveVerdict = a.Verdict
		out.Indeterminate = a.Verdict == search.Indeterminate
	}
	if len(s.Probes) > 0 {
		out.Words = SearchWords(ss, s)
		if !out.Done {
			out.Words += ", so far"
		}
	}
	// The value probed now: a unit of it runs.
	steps := ph.AllSteps()
	for i, st := range p.Steps {
		if st.Status != state.Running || i >= len(steps) || steps[i].Unit == nil {
			continue
		}
		u := steps[i].Unit
		out.Probing = ss.Values[u.Point]
		for _, run := range units[u.Point] {
			if run.Outcome == UnitDone || run.Outcome == UnitRunning || run.Outcome == UnitStamped {
				out.Run++
			}
		}
		break
	}
	return out
}

// finite is f, or 0 for an infinite margin (a probe of no term).
func finite(f float64) float64 {
	if f > 1e300 || f < -1e300 || f != f {
		return 0
	}
	return f
}
