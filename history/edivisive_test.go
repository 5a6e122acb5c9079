package history

import (
	"encoding/csv"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// TestOtavasSample: Otava's own sample (examples/csv/data/local_sample.csv
// in its repository, ten nightly results of two metrics): the one change
// Otava reports, metric2 −12.9% at commit aaa6, and nothing else.
func TestOtavasSample(t *testing.T) {
	f, err := os.Open("testdata/otava_local_sample.csv")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	col := func(i int) []float64 {
		var out []float64
		for _, r := range rows[1:] {
			v, _ := strconv.ParseFloat(r[i], 64)
			out = append(out, v)
		}
		return out
	}
	for _, otava := range []bool{false, true} {
		o := DefaultOptions
		o.Otava = otava
		if cps := ChangePoints(col(2), o); len(cps) != 0 {
			t.Errorf("metric1 (Otava's raw p: %v): %+v; Otava finds none", otava, cps)
		}
		cps := ChangePoints(col(3), o)
		if len(cps) != 1 {
			t.Fatalf("metric2 (Otava's raw p: %v): %d change points %+v; Otava finds one", otava, len(cps), cps)
		}
		c := cps[0]
		if rows[1+c.Index][1] != "aaa6" || math.Round(c.Forward()*1000) != -129 {
			t.Errorf("metric2 (Otava's raw p: %v): %+.1f%% at %s; Otava says -12.9%% at aaa6 (%+v)", otava, 100*c.Forward(), rows[1+c.Index][1], c)
		}
	}
}

// TestShiftFound: a sustained 3% shift in a series whose values vary 1%
// campaign to campaign is found, at it (a campaign either side), once
// five campaigns have run after it: in 85% of 200 series or more (90%
// measured on 500).
func TestShiftFound(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	found := 0
	for range 200 {
		at := 20
		var xs []float64
		for i := range at + 5 {
			v := 100 * (1 + 0.01*r.NormFloat64())
			if i >= at {
				v *= 1.03
			}
			xs = append(xs, v)
		}
		cps := ChangePoints(xs, DefaultOptions)
		for _, c := range cps {
			if c.Index >= at-1 && c.Index <= at+1 {
				found++
				break
			}
		}
	}
	if found < 170 {
		t.Errorf("a 3%% shift 5 campaigns back was found in %d of 200 series; want 170 or more", found)
	}
}

// TestNoShiftNoChange: 100 series of 30 campaigns with 1% variation and
// no shift give at most one change between them.
func TestNoShiftNoChange(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	false_ := 0
	for range 100 {
		xs := make([]float64, 30)
		for i := range xs {
			xs[i] = 100 * (1 + 0.01*r.NormFloat64())
		}
		false_ += len(ChangePoints(xs, DefaultOptions))
	}
	if false_ > 1 {
		t.Errorf("%d change points in 100 series with none; want at most 1", false_)
	}
}
