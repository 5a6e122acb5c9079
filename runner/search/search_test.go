package search

import (
	"math/rand/v2"
	"testing"
)

// probe runs a stand-in at value v: 3 repeats, more (up to 10) while the
// verdict is undecided.
func probe(terms []Term, v int, run func(int) float64) Probe {
	runs := map[string][]float64{}
	for n := 1; ; n++ {
		runs["p99_tpot_ms"] = append(runs["p99_tpot_ms"], run(v))
		if n < 3 {
			continue
		}
		j := Judge(terms, runs)
		if j.Verdict != Indeterminate || n == 10 {
			return Probe{Value: v, Repeats: n, Judgement: j}
		}
	}
}

func searchOnce(t *testing.T, lo, hi int, res float64, run func(int) float64) (*Search, Result) {
	terms := []Term{{"p99_tpot_ms", "<=", 50}}
	s := New(lo, hi, res)
	for range 100 {
		v, done := s.Next()
		if done {
			return s, s.Result()
		}
		s.Record(probe(terms, v, run))
	}
	t.Fatalf("no end after 100 probes: %+v", s.Probes)
	return nil, Result{}
}

// TestFindsTheBoundary: a stand-in whose p99 TPOT grows with load, 2%
// noise, and a known boundary; over 50 seeds the limit found lies within
// the resolution of the boundary, in no more probes than promised.
func TestFindsTheBoundary(t *testing.T) {
	worst, probes, runs := 0, 0, 0
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 7))
		b := 10 + rng.IntN(400) // the boundary: the largest c with a mean within 50 ms
		run := func(c int) float64 { return 50 * float64(c) / (float64(b) + 0.5) * (1 + 0.02*rng.NormFloat64()) }
		s, r := searchOnce(t, 1, 512, 0.10, run)
		// Within the resolution of it either way: a probe a hair past the
		// boundary (0.1% at 352 of 351) can pass its 95% interval.
		if !r.OK || float64(r.Limit) > float64(b)*1.10 || float64(r.Limit) < float64(b)*0.90-1 {
			t.Errorf("seed %d: boundary %d, found %+v after %d probes %+v", seed, b, r, len(s.Probes), s.Probes)
		}
		if len(s.Probes) > s.MaxProbes() {
			t.Errorf("seed %d: %d probes, more than the %d promised", seed, len(s.Probes), s.MaxProbes())
		}
		worst = max(worst, len(s.Probes))
		probes += len(s.Probes)
		for _, p := range s.Probes {
			runs += p.Repeats
		}
	}
	t.Logf("over 50 seeds: %.1f probes and %.1f runs a search on average", float64(probes)/50, float64(runs)/50)
	t.Logf("at most %d probes a search, %d promised (a grid of 1..512 at 10%% would take %d)", worst, New(1, 512, 0.10).MaxProbes(), gridPoints(1, 512, 0.10))
}

// gridPoints is how many values a geometric grid needs to answer the
// same question to the same resolution.
func gridPoints(lo, hi int, res float64) int { return len(Grid(lo, hi, res)) }

// TestFlatNoisyMarginIsIndeterminate: a server whose p99 sits on the
// limit at every load, noisily, passes nowhere: the search says no limit
// rather than inventing one.
func TestFlatNoisyMarginIsIndeterminate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s, r := searchOnce(t, 1, 512, 0.10, func(int) float64 { return 50 * (1 + 0.05*rng.NormFloat64()) })
	if r.OK {
		t.Errorf("a limit found on a flat margin: %+v (%+v)", r, s.Probes)
	}
	if s.Probes[0].Verdict != Indeterminate || s.Probes[0].Repeats != 10 {
		t.Errorf("the first probe: %+v; want indeterminate after 10 repeats", s.Probes[0])
	}
}

// TestJudge: intervals inside, past and across the limits, and >= terms.
func TestJudge(t *testing.T) {
	terms := []Term{{"p99_tpot_ms", "<=", 50}, {"tok_s", ">=", 1000}}
	for _, c := range []struct {
		tpot, toks []float64
		want       Verdict
		binding    string
	}{
		{[]float64{40, 41, 39}, []float64{1500, 1510, 1490}, Pass, "p99_tpot_ms <= 50"},
		{[]float64{40, 41, 39}, []float64{1020, 1021, 1019}, Pass, "tok_s >= 1000"},
		{[]float64{60, 61, 59}, []float64{1500, 1510, 1490}, Fail, "p99_tpot_ms <= 50"},
		{[]float64{45, 55, 50}, []float64{1500, 1510, 1490}, Indeterminate, "p99_tpot_ms <= 50"},
		{[]float64{45, 55, 50}, []float64{900, 905, 895}, Fail, "tok_s >= 1000"},
	} {
		j := Judge(terms, map[string][]float64{"p99_tpot_ms": c.tpot, "tok_s": c.toks})
		if j.Verdict != c.want || j.Binding != c.binding {
			t.Errorf("%v %v: %+v; want %s by %s", c.tpot, c.toks, j, c.want, c.binding)
		}
	}
}
