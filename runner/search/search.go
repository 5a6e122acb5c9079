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

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Term is one term of an SLO: a metric, <= or >=, and its limit
// (p99_tpot_ms <= 50).
type Term struct {
	Metric string
	Op     string // "<=" or ">="
	Limit  float64
}

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

// Judge holds each term's 95% interval over a probe's runs against its
// limit: every interval inside its limit passes, one wholly past its
// limit fails, anything else is undecided. One run has no interval: it is
// undecided unless it is past the limit by more than tol (a share).
func Judge(terms []Term, runs map[string][]float64) Judgement {
	j := Judgement{Verdict: Pass, Margin: math.Inf(1)}
	for _, t := range terms {
		xs := runs[t.Metric]
		if len(xs) == 0 {
			return Judgement{Verdict: Indeterminate, Binding: t.String() + ": no value"}
		}
		mean := stat.Mean(xs, nil)
		half := math.Inf(1)
		if len(xs) >= 2 {
			q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(xs) - 1)}.Quantile(0.975)
			half = q * stat.StdDev(xs, nil) / math.Sqrt(float64(len(xs)))
		}
		// The margin, positive inside the limit.
		margin := t.Limit - mean
		if t.Op == ">=" {
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
}

// Search is the state of one search: what was tried and what is known.
type Search struct {
	Lo, Hi     int     // the range
	Resolution float64 // stop when the bracket is this share of its low end, or 1
	Probes     []Probe

	pass, fail int  // the largest passing value (Lo-1: none) and the smallest failing (Hi+1: none)
	bracketed  bool // a failure, an undecided probe or the top was met: bisecting
	undecided  int  // the smallest indeterminate value above pass (Hi+1: none)
}

// New starts a search of [lo, hi].
func New(lo, hi int, resolution float64) *Search {
	return &Search{Lo: lo, Hi: hi, Resolution: resolution, pass: lo - 1, fail: hi + 1, undecided: hi + 1}
}

// MaxProbes is the most probes the search takes: the doubling from lo to
// hi, then the halving of the widest bracket down to the resolution.
func (s *Search) MaxProbes() int {
	up := int(math.Ceil(math.Log2(float64(s.Hi)/float64(max(1, s.Lo))))) + 1
	down := int(math.Ceil(math.Log2(float64(s.Hi-s.Lo+1) / math.Max(1, s.Resolution*float64(max(1, s.Lo))))))
	return up + max(0, down)
}

// Next is the value to probe next; done when the bracket is narrow enough
// or nothing is left to try.
func (s *Search) Next() (value int, done bool) {
	top := min(s.fail, s.undecided) // nothing at or past it is a pass we can claim
	if !s.bracketed {
		switch {
		case s.pass < s.Lo:
			return s.Lo, false
		case s.pass >= s.Hi:
			return 0, true // the whole range passes
		default:
			return min(s.Hi, s.pass*2), false
		}
	}
	if s.pass < s.Lo && top <= s.Lo {
		return 0, true // the low end does not pass: no limit in range
	}
	low := max(s.pass, s.Lo)
	if top-low <= 1 || float64(top-low) <= s.Resolution*float64(low) {
		return 0, true
	}
	return low + (top-low)/2, false
}

// Record takes a probe's judgement.
func (s *Search) Record(p Probe) {
	s.Probes = append(s.Probes, p)
	switch p.Verdict {
	case Pass:
		s.pass = max(s.pass, p.Value)
		if p.Value >= s.Hi {
			s.bracketed = true
		}
	case Fail:
		s.fail = min(s.fail, p.Value)
		s.bracketed = true
	default:
		s.undecided = min(s.undecided, p.Value)
		s.bracketed = true
	}
}

// Result is what a search found: the largest passing value (ok false
// when none passed) and its bracket (the smallest value above it that
// failed or could not be told, Hi+1 when none).
type Result struct {
	Limit, Above int
	OK           bool
	Binding      string // the SLO term closest to its limit at the limit
}

// Result is the search's answer as it stands.
func (s *Search) Result() Result {
	r := Result{Limit: s.pass, Above: min(s.fail, s.undecided), OK: s.pass >= s.Lo}
	for _, p := range s.Probes {
		if p.Value == s.pass && p.Verdict == Pass {
			r.Binding = p.Binding
		}
	}
	return r
}
