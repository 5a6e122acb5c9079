// Package search finds the largest value of an integer axis (a
// concurrency, a request rate) at which a server still meets its SLO,
// from repeated probes judged by their 95% intervals: it brackets by
// doubling from the low end, then bisects until the bracket is as narrow
// as asked. A probe whose repeats cannot tell pass from fail after the
// most repeats allowed is indeterminate and bounds nothing: the search
// goes on below it.
//
// It is the planner and the judge alone; the runner runs the probes (each
// a unit of the journal) and hands their results back.
//
// search imports nothing of ours.
package search

import (
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Term is one term of an SLO: a metric, <= or >=, and its limit
// (p99_tpot_ms <= 50).
type Term struct {
	Metric string
	Op     Op
	Limit  float64
}

// Op is an SLO term's operator: AtMost (a time) or AtLeast (a rate).
type Op string

const (
	AtMost  Op = "<="
	AtLeast Op = ">="
)

func (t Term) String() string { return fmt.Sprintf("%s %s %g", t.Metric, t.Op, t.Limit) }

// Verdict is what a probe's repeats say of the SLO.
type Verdict string

const (
	Pass          Verdict = "pass"
	Fail          Verdict = "fail"
	Indeterminate Verdict = "indeterminate" // its interval straddles a limit
)

// Judgement is a probe's verdict, the term that decided it (the failing
// one, else the one with the least margin) and that margin as a share of
// its limit (negative: past it).
type Judgement struct {
	Verdict Verdict
	Binding string
	Margin  float64
}

// Interval is xs's mean, standard deviation and the half-width of its
// 95% confidence interval (Student's t, n-1 degrees of freedom): the
// interval a probe is judged by, a point is repeated to, and the record
// shows. One value has no interval: its half-width is +Inf.
func Interval(xs []float64) (mean, sd, half float64) {
	switch len(xs) {
	case 0:
		return math.NaN(), 0, math.Inf(1)
	case 1:
		return xs[0], 0, math.Inf(1)
	}
	mean, sd = stat.MeanStdDev(xs, nil)
	return mean, sd, t975(len(xs)-1) * sd / math.Sqrt(float64(len(xs)))
}

// t975 is Student's t's 97.5% quantile at df degrees of freedom, each
// computed once: the inverse incomplete beta behind it costs some 50 µs,
// and a campaign's model asks it of every point and metric.
func t975(df int) float64 {
	quantiles.Lock()
	defer quantiles.Unlock()
	if q, ok := quantiles.of[df]; ok {
		return q
	}
	q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(0.975)
	if quantiles.of == nil {
		quantiles.of = map[int]float64{}
	}
	quantiles.of[df] = q
	return q
}

var quantiles struct {
	sync.Mutex
	of map[int]float64
}

// Judge holds each term's 95% interval over a probe's runs against its
// limit: every interval inside its limit passes, one wholly past its
// limit fails, anything else is undecided. One run has no interval: it is
// undecided.
func Judge(terms []Term, runs map[string][]float64) Judgement {
	j := Judgement{Verdict: Pass, Margin: math.Inf(1)}
	for _, t := range terms {
		xs := runs[t.Metric]
		if len(xs) == 0 {
			return Judgement{Verdict: Indeterminate, Binding: t.String() + ": no value"}
		}
		mean, _, half := Interval(xs)
		// The margin, positive inside the limit.
		margin := t.Limit - mean
		if t.Op == AtLeast {
			margin = mean - t.Limit
		}
		share := margin / math.Abs(t.Limit)
		switch {
		case margin < -half:
			if j.Verdict != Fail || share < j.Margin {
				j = Judgement{Verdict: Fail, Binding: t.String(), Margin: share}
			}
		case margin <= half:
			if j.Verdict == Pass || j.Verdict == Indeterminate && share < j.Margin {
				j = Judgement{Verdict: Indeterminate, Binding: t.String(), Margin: share}
			}
		default:
			if j.Verdict == Pass && share < j.Margin {
				j.Binding, j.Margin = t.String(), share
			}
		}
	}
	return j
}

// Probe is one value tried, with its repeats and its verdict.
type Probe struct {
	Value   int
	Repeats int
	Judgement
	Runs map[string][]float64 // each SLO metric's values over its runs
	// Stamped is how many of its runs were taken under bad conditions
	// (never decided by), and Why the first one's stamp: a probe whose
	// runs all were is not told, and says why.
	Stamped int
	Why     string
}

// Grid is the values a search of [lo, hi] to resolution res may probe: lo,
// then each value a share res above the one before (at least one more),
// and hi. Two neighbours of it are a bracket as narrow as asked; they are
// also the units a runner plans, before it knows which it will run.
func Grid(lo, hi int, res float64) []int {
	var out []int
	for v := lo; v < hi; v = max(v+1, int(math.Round(float64(v)*(1+res)))) {
		out = append(out, v)
	}
	return append(out, hi)
}

// Search is the state of one search: what was tried and what is known.
// It moves on the grid's values by their index: doubling the value from
// the low end until a probe fails or cannot tell, then bisecting the
// indices between the largest pass and the smallest failed or undecided
// probe until they are neighbours.
type Search struct {
	Values []int // the grid
	Probes []Probe

	pass, fail int  // indices: the largest passing (-1: none) and the smallest failing (len: none)
	bracketed  bool // a failure, an undecided probe or the top was met: bisecting
	undecided  int  // the smallest indeterminate index above pass (len: none)
}

// New starts a search of [lo, hi] to resolution res (a share: 0.1).
func New(lo, hi int, res float64) *Search { return Over(Grid(lo, hi, res)) }

// Over starts a search of a grid's values (ascending).
func Over(values []int) *Search {
	n := len(values)
	return &Search{Values: values, pass: -1, fail: n, undecided: n}
}

// MaxProbes is the most probes the search takes: the doublings from the
// low end to the top, then the halvings of the widest bracket they leave.
func (s *Search) MaxProbes() int {
	n := len(s.Values)
	if n == 0 {
		return 0
	}
	up, widest, prev := 1, 1, 0
	for i := 0; i < n-1; {
		j := s.above(2 * s.Values[i])
		up++
		widest = max(widest, j-prev)
		prev, i = j, j
	}
	return up + int(math.Ceil(math.Log2(float64(widest))))
}

// above is the index of the first value at or above v (the last if none).
func (s *Search) above(v int) int {
	for i, x := range s.Values {
		if x >= v {
			return i
		}
	}
	return len(s.Values) - 1
}

// Next is the value to probe next; done when the bracket is narrow enough
// or nothing is left to try.
func (s *Search) Next() (value int, done bool) {
	n := len(s.Values)
	if n == 0 {
		return 0, true
	}
	top := min(s.fail, s.undecided) // nothing at or past it is a pass we can claim
	if !s.bracketed {
		switch {
		case s.pass < 0:
			return s.Values[0], false
		case s.pass >= n-1:
			return 0, true // the whole range passes
		default:
			return s.Values[max(s.pass+1, s.above(2*s.Values[s.pass]))], false
		}
	}
	if s.pass < 0 && top <= 0 {
		return 0, true // the low end does not pass: no limit in range
	}
	low := max(s.pass, 0)
	if top-low <= 1 {
		return 0, true
	}
	return s.Values[low+(top-low)/2], false
}

// Record takes a probe's judgement.
func (s *Search) Record(p Probe) {
	s.Probes = append(s.Probes, p)
	i := s.above(p.Value)
	switch p.Verdict {
	case Pass:
		s.pass = max(s.pass, i)
		if i >= len(s.Values)-1 {
			s.bracketed = true
		}
	case Fail:
		s.fail = min(s.fail, i)
		s.bracketed = true
	default:
		s.undecided = min(s.undecided, i)
		s.bracketed = true
	}
}

// Result is what a search found: the largest passing value (ok false
// when none passed) and its bracket (the smallest value above it that
// failed or could not be told; 0 when none did: the whole range passed).
type Result struct {
	Limit, Above int
	OK           bool
	Binding      string // the SLO term closest to its limit at the limit
	Done         bool   // the bracket is as narrow as asked (or nothing is left to try)
}

// Result is the search's answer as it stands.
func (s *Search) Result() Result {
	var r Result
	_, r.Done = s.Next()
	if s.pass >= 0 {
		r.Limit, r.OK = s.Values[s.pass], true
	}
	if top := min(s.fail, s.undecided); top < len(s.Values) {
		r.Above = s.Values[top]
	}
	for _, p := range s.Probes {
		if r.OK && p.Value == r.Limit && p.Verdict == Pass {
			r.Binding = p.Binding
		}
	}
	return r
}
