package campaign

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/greenlight-run/greenlight/runner/search"
)

// A phase that searches for the largest value of an axis at which the
// server still meets an SLO:
//
//	search:
//	  axis: concurrency          # ${concurrency} in the steps
//	  range: [1, 512]
//	  slo: {p99_tpot_ms: "<= 50", error_rate: "<= 0.01"}
//	  resolution: 10%            # stop when the bracket is this narrow
//	  max_repeats: 10            # an undecided probe's runs, at most
//	repeat: 3                    # each probe's runs, at least
//
// The loader plans it as a sweep over the search's grid (search.Grid: the
// values two neighbours of which are a bracket as narrow as asked), each
// value's runs grouped, up to max_repeats and two spares for runs stamped
// under bad conditions; the runner runs the units the search asks for
// (runner/searchrun.go) and skips the rest.

// SearchSpec is `search:` as written.
type SearchSpec struct {
	Axis       string        `yaml:"axis" json:"axis"`
	Range      []int         `yaml:"range" json:"range"`
	SLO        yaml.MapSlice `yaml:"slo" json:"slo,omitempty"`
	Resolution string        `yaml:"resolution" json:"resolution,omitempty"`
	MaxRepeats int           `yaml:"max_repeats" json:"max_repeats,omitempty"`
}

// Search is a phase's resolved search.
type Search struct {
	Axis       string
	Lo, Hi     int
	SLO        []search.Term
	Resolution float64 // a share: 0.1
	MinRepeats int     // each probe's runs, at least (repeat:)
	MaxRepeats int     // an undecided probe's runs, at most
	Values     []int   // the grid: the axis's values
}

// searchSpares are the units a probe has beyond max_repeats: runs stamped
// under bad conditions are run again, never used to decide.
const searchSpares = 2

// search resolves `search:` into the sweep it runs as; nil (with the
// errors said) when it cannot.
func (l *loader) search(ps *PhaseSpec, at func(string) string) *Sweep {
	sp := ps.Search
	p := at(".search")
	for _, k := range []struct {
		set  bool
		key  string
		hint string
	}{
		{len(ps.Sweep) > 0, "sweep", "a search is its own axis: sweep the server's settings on its service instead (the search runs under each), or split the phase"},
		{ps.Until != "", "until", "a search stops where the SLO is missed by itself: remove until:"},
		{ps.Order != "" && ps.Order != "grouped", "order", "a probe's runs go one after another: remove order:"},
	} {
		if k.set {
			l.add(at("."+k.key), k.key+": cannot go with search:", k.hint)
		}
	}
	s := &Search{Axis: sp.Axis, Resolution: 0.10, MinRepeats: 3, MaxRepeats: 10}
	if !axisName.MatchString(sp.Axis) {
		l.add(p+".axis", fmt.Sprintf("axis %q: an axis name is lower case letters, digits and _", sp.Axis), "name the variable the steps use, e.g. axis: concurrency for ${concurrency}")
	}
	badRange := len(sp.Range) != 2 || sp.Range[0] < 1 || sp.Range[1] <= sp.Range[0]
	if badRange {
		l.add(p+".range", fmt.Sprintf("range: %v is not [low, high] of whole numbers, 1 <= low < high", sp.Range), "write range: [1, 512]")
	} else {
		s.Lo, s.Hi = sp.Range[0], sp.Range[1]
	}
	if sp.Resolution != "" {
		if f, err := ParsePercent(sp.Resolution); err != nil || f <= 0 || f > 1 {
			l.add(p+".resolution", fmt.Sprintf("resolution: %q is not a percentage", sp.Resolution), "write resolution: 10% (the search stops when the limit lies between two values this far apart)")
		} else {
			s.Resolution = f
		}
	}
	if len(sp.SLO) == 0 {
		l.addMissing(p, missingKey{key: "slo", msg: "a search needs an SLO: the terms each probe is judged by", hint: `write slo: {p99_tpot_ms: "<= 50"}`, after: "range"})
	}
	for _, it := range sp.SLO {
		name, raw := fmt.Sprint(it.Key), strings.TrimSpace(fmt.Sprint(it.Value))
		var op search.Op
		for _, o := range []search.Op{search.AtMost, search.AtLeast} {
			if strings.HasPrefix(raw, string(o)) {
				op = o
			}
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(raw, string(op))), 64)
		if op == "" || err != nil {
			l.add(p+".slo."+name, fmt.Sprintf("SLO term %s: %q is not <= or >= a number", name, raw), `write it as "<= 50" or ">= 0.99", quoted`)
			continue
		}
		s.SLO = append(s.SLO, search.Term{Metric: name, Op: op, Limit: v})
	}
	switch r := ps.Repeat; {
	case r == nil:
	case r.Until != "":
		l.add(at(".repeat.until"), "a search's probes run until their verdict is clear, not until a precision", "write repeat: N (each probe's runs at least) and search: max_repeats: (at most)")
	case r.Min != 0 || r.Max != 0:
		rs := l.repeats(r, at)
		s.MinRepeats, s.MaxRepeats = rs.Min, rs.Max
	default:
		s.MinRepeats = r.N
	}
	if sp.MaxRepeats != 0 {
		s.MaxRepeats = sp.MaxRepeats
	}
	s.MaxRepeats = max(s.MaxRepeats, s.MinRepeats)
	if s.MinRepeats < 2 {
		l.add(at(".repeat"), fmt.Sprintf("repeat: %d gives a probe no interval to judge it by", s.MinRepeats), "a search's probes need repeat: 2 or more (3 is the default)")
	}
	if badRange {
		return nil // every other key said; nothing to plan
	}
	s.Values = search.Grid(s.Lo, s.Hi, s.Resolution)
	if units := len(s.Values) * (s.MaxRepeats + searchSpares); units > maxPoints {
		l.add(p+".resolution", fmt.Sprintf("the search's grid has %d values, %d units with their runs: more than %d", len(s.Values), units, maxPoints),
			"a coarser resolution (10% is 52 values over 1..512), a narrower range, or fewer max_repeats")
		return nil
	}
	sw := &Sweep{Repeat: s.MaxRepeats + searchSpares, Order: "grouped", Noise: DefaultNoise, Search: s, Points: len(s.Values)}
	ax := Axis{Name: s.Axis}
	for _, v := range s.Values {
		ax.Values = append(ax.Values, AxisValue{Name: strconv.Itoa(v)})
	}
	sw.Axes = []Axis{ax}
	sw.Units = units(sw)
	return sw
}

// MaxProbes is the most probes the search takes.
func (s *Search) MaxProbes() int { return search.Over(s.Values).MaxProbes() }

// SLOWords says the SLO: "p99_tpot_ms <= 50 and error_rate <= 0.01".
func (s *Search) SLOWords() string {
	var terms []string
	for _, t := range s.SLO {
		terms = append(terms, t.String())
	}
	return strings.Join(terms, " and ")
}
