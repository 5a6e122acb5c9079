package history

// Change points of one series, by the method Apache Otava (formerly
// Hunter) uses: E-Divisive means (Matteson and James, 2014) over sliding
// windows with a Student's t-test for significance instead of
// permutations, so the answer is the same on every run (Fleming et al.,
// "Hunter: Using Change Point Detection to Hunt for Performance
// Regressions", ICPE 2023).
//
//   - Split: the series is cut into windows of Window values, each half a
//     window after the last (or at the last change found); in each, the
//     split that maximises the energy divergence Q between the values
//     before and after it is a candidate, kept where the t-test of the two
//     sides gives p at most 10 × PValue (weak change points), and the
//     segments are split again until a candidate fails.
//   - Merge: the weakest of the weak points (the largest p, or, when all
//     pass PValue, the smallest relative change under MinMagnitude) is
//     dropped and its neighbours' tests redone on the wider segments, until
//     every point left passes.

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Options are the method's parameters, named as Otava names them.
type Options struct {
	Window       int     // values a window holds (Otava's window_len; 50)
	PValue       float64 // the t-test's significance (max_pvalue; 0.001)
	MinMagnitude float64 // relative change under which a change is dropped (min_magnitude; 0)
	// Otava: the merge step's test as Otava makes it, on the split's raw
	// p. Without it (the default) a change's p is multiplied by √n, n the
	// values of its two sides: the split is the one of greatest
	// divergence among the n−1 its sides offered, so its raw p is too
	// small, and those splits are so alike that Bonferroni's n−1 would
	// be too strict. Measured on 1,000 series of 30 campaigns with 1%
	// noise and no shift: raw, 24 changes; √n, 10 (n^0.8: 8, and a shift
	// found later). A 3% shift is found 5 campaigns after it in 95% of
	// 500 series raw, 90% with √n, 10 campaigns after in 95% either way.
	Otava bool
}

// DefaultOptions are Otava's parameters, its p corrected for the choice
// of split.
var DefaultOptions = Options{Window: 50, PValue: 0.001, MinMagnitude: 0}

// ChangePoint is a change in a series: the index of the first value after
// it, the two sides' means and standard deviations (population, as Otava
// reports them), and the t-test's p.
type ChangePoint struct {
	Index        int
	Mean1, Mean2 float64
	Std1, Std2   float64
	P, T         float64
	N1, N2       int
	qhat         float64
}

// Forward is the relative change from before to after (−0.129: 12.9% lower).
func (c ChangePoint) Forward() float64 {
	if c.Mean1 == 0 {
		return 0
	}
	return c.Mean2/c.Mean1 - 1
}

// Magnitude is the larger of the relative changes either way.
func (c ChangePoint) Magnitude() float64 {
	b := 0.0
	if c.Mean2 != 0 {
		b = c.Mean1/c.Mean2 - 1
	}
	return math.Max(math.Abs(c.Forward()), math.Abs(b))
}

// ChangePoints are xs's change points, by index.
func ChangePoints(xs []float64, o Options) []ChangePoint {
	if o.Window < 2 {
		o.Window = DefaultOptions.Window
	}
	first := o.PValue * 10
	switch {
	case o.PValue >= 0.5:
		first = o.PValue
	case o.PValue >= 0.05:
		first = o.PValue * 2
	}
	weak := split(xs, o.Window, first)
	return merge(weak, xs, o.PValue, o.MinMagnitude, !o.Otava)
}

// split is Otava's split step: the weak change points.
func split(xs []float64, window int, maxP float64) []ChangePoint {
	var cps []ChangePoint
	seen := map[int]bool{}
	step := window / 2
	for start := 0; start < len(xs); {
		end := min(start+window, len(xs))
		found := detect(xs[start:end], maxP)
		last := 0
		for _, c := range found {
			c.Index += start
			last = c.Index
			if !seen[c.Index] {
				seen[c.Index] = true
				cps = append(cps, c)
			}
		}
		start = max(last, start+step)
	}
	slices.SortFunc(cps, func(a, b ChangePoint) int { return a.Index - b.Index })
	iv := intervals(cps, len(xs))
	for i := range cps {
		cps[i] = test(cps[i].Index, cps[i].qhat, xs, iv)
	}
	return cps
}

// merge is Otava's merge step.
func merge(cps []ChangePoint, xs []float64, maxP, minMag float64, corrected bool) []ChangePoint {
	pOf := func(c ChangePoint) float64 {
		p := c.P
		if math.IsNaN(p) {
			return 1
		}
		if corrected {
			p = min(1, p*math.Sqrt(float64(c.N1+c.N2)))
		}
		return p
	}
	for len(cps) > 0 {
		weakest := 0
		for i, c := range cps {
			if pOf(c) > pOf(cps[weakest]) {
				weakest = i
			}
		}
		if pOf(cps[weakest]) < maxP {
			weakest = 0
			for i, c := range cps {
				if c.Magnitude() < cps[weakest].Magnitude() {
					weakest = i
				}
			}
			if cps[weakest].Magnitude() > minMag {
				return cps
			}
		}
		cps = slices.Delete(cps, weakest, weakest+1)
		iv := intervals(cps, len(xs))
		for _, i := range []int{weakest, weakest + 1} {
			if i < len(cps) {
				cps[i] = test(cps[i].Index, cps[i].qhat, xs, iv)
			}
		}
	}
	return cps
}

// detect is E-Divisive on one window: the best split of each segment
// between the changes found so far, the best of those tested, kept while
// significant.
func detect(xs []float64, maxP float64) []ChangePoint {
	var cps []ChangePoint
	for {
		iv := intervals(cps, len(xs))
		best, bestQ := -1, math.Inf(-1)
		for _, s := range iv {
			if s[1]-s[0] < 2 {
				continue
			}
			if at, q := candidate(xs, s[0], s[1]); q > bestQ {
				best, bestQ = at, q
			}
		}
		if best < 0 {
			return cps
		}
		c := test(best, bestQ, xs, iv)
		if !(c.P <= maxP) {
			return cps
		}
		cps = append(cps, c)
		slices.SortFunc(cps, func(a, b ChangePoint) int { return a.Index - b.Index })
	}
}

// intervals are the segments [from, to) between change points.
func intervals(cps []ChangePoint, n int) [][2]int {
	var out [][2]int
	from := 0
	for _, c := range cps {
		if c.Index != from {
			out = append(out, [2]int{from, c.Index})
		}
		from = c.Index
	}
	if from != n {
		out = append(out, [2]int{from, n})
	}
	return out
}

// candidate is the split of xs[from:to) that maximises Q(τ, κ) over
// from < τ < κ ≤ to, Q the energy divergence of xs[from:τ] and xs[τ:κ]:
//
//	Q = 2/(m+n) Σ|X−Y| − 2m/((m+n)(n−1)) Σ_{i<k}|X_i−X_k| − 2n/((m+n)(m−1)) Σ_{j<k}|Y_j−Y_k|
//
// with n = |X|, m = |Y| (a term over one value is 0). Ties go to the
// smaller τ, then the smaller κ, as numpy's argmax over Otava's matrix.
func candidate(xs []float64, from, to int) (at int, q float64) {
	at, q = -1, math.Inf(-1)
	for tau := from + 1; tau < to; tau++ {
		wx := 0.0 // Σ_{from≤i<k<τ} |x_i − x_k|
		for i := from; i < tau; i++ {
			for k := i + 1; k < tau; k++ {
				wx += math.Abs(xs[i] - xs[k])
			}
		}
		cross, wy := 0.0, 0.0
		for kappa := tau + 1; kappa <= to; kappa++ {
			y := xs[kappa-1]
			for i := from; i < tau; i++ {
				cross += math.Abs(xs[i] - y)
			}
			for j := tau; j < kappa-1; j++ {
				wy += math.Abs(xs[j] - y)
			}
			n, m := float64(tau-from), float64(kappa-tau)
			v := 2 / (m + n) * cross
			if n > 1 {
				v -= 2 * m / ((m + n) * (n - 1)) * wx
			}
			if m > 1 {
				v -= 2 * n / ((m + n) * (m - 1)) * wy
			}
			if v > q {
				at, q = tau, v
			}
		}
	}
	return at, q
}

// test is the change at index, its sides the segment it splits (the split
// step) or the two segments it ends and begins (the merge step), held
// apart by Student's two-sided t-test on their means and population
// standard deviations, as Otava calls scipy's ttest_ind_from_stats.
func test(index int, qhat float64, xs []float64, iv [][2]int) ChangePoint {
	var left, right []float64
	for i, s := range iv {
		if s[1] == index && i+1 < len(iv) {
			left, right = xs[s[0]:s[1]], xs[iv[i+1][0]:iv[i+1][1]]
			break
		}
		if s[0] < index && index < s[1] {
			left, right = xs[s[0]:index], xs[index:s[1]]
			break
		}
	}
	c := ChangePoint{Index: index, qhat: qhat, P: 1, N1: len(left), N2: len(right)}
	if len(left) == 0 || len(right) == 0 {
		return c
	}
	// Population standard deviations (numpy's std), as Otava passes them.
	c.Mean1, c.Std1 = stat.PopMeanStdDev(left, nil)
	c.Mean2, c.Std2 = stat.PopMeanStdDev(right, nil)
	df := float64(len(left) + len(right) - 2)
	if df <= 0 {
		return c
	}
	n1, n2 := float64(len(left)), float64(len(right))
	pooled := ((n1-1)*c.Std1*c.Std1 + (n2-1)*c.Std2*c.Std2) / df
	se := math.Sqrt(pooled * (1/n1 + 1/n2))
	switch {
	case se == 0 && c.Mean1 == c.Mean2:
		c.P = math.NaN() // scipy's answer: no evidence either way, never significant
	case se == 0:
		c.T, c.P = math.Copysign(math.Inf(1), c.Mean1-c.Mean2), 0
	default:
		c.T = (c.Mean1 - c.Mean2) / se
		c.P = 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(math.Abs(c.T))
	}
	return c
}
