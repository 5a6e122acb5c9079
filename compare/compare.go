// Package compare holds a campaign's record against a previous one's:
// per phase, point and metric, the old and new values, the change, and a
// verdict (better, worse, within noise) from Welch's t-test where both
// sides have repeats, else from a tolerance; the differences in the
// conditions first, and every result taken under bad conditions flagged.
// `greenlight compare` prints it; a campaign with baseline: keeps it in
// its results file as results arrive, and says each new result's change
// as it lands.
//
// compare imports record, conditions, runner/campaign and trace
// (captures and their summaries, for the trace diff), nothing above them.
package compare

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/greenlight-run/greenlight/conditions"
	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/results"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// Options tune a comparison.
type Options struct {
	// Tolerance is the change within which a metric without repeats on
	// both sides is no change (0.02: 2%).
	Tolerance float64
	// Alpha is the significance of Welch's test (0.05).
	Alpha float64
	// Rename maps a metric's old name (in the baseline) to its name now.
	Rename map[string]string
}

// Level is the significance Welch's test is taken at (0.05 unless Alpha
// says).
func (o Options) Level() float64 { return o.alpha() }

func (o Options) alpha() float64 {
	if o.Alpha <= 0 {
		return 0.05
	}
	return o.Alpha
}

// Verdict is what a change means.
type Verdict string

const (
	Better  Verdict = "better"
	Worse   Verdict = "worse"
	Noise   Verdict = "within noise"     // Welch's test finds no difference
	Same    Verdict = "within tolerance" // no repeats: the change is under the tolerance
	Changed Verdict = "changed"          // beyond noise, but no way is known to be better
)

// Stat is one side's values of a metric at a point: the results model's
// one statistic (n, mean, sample standard deviation, the interval).
type Stat = results.Stat

// StatOf is xs as one side of a line.
func StatOf(xs []float64) Stat { return results.StatOf("", xs) }

// Line is one metric at one point of one phase, old against new.
type Line struct {
	Phase, Point, Metric string
	Old, New             Stat
	Change               float64 // (new - old) / |old|; NaN when old is 0
	Verdict              Verdict
	P                    float64  // Welch's p-value; NaN when not tested
	Basis                string   // "Welch's t-test, p = 0.003, n = 5 and 5" or "tolerance 2%, one run each"
	ByTolerance          bool     // judged by the tolerance: neither side's spread was known
	Way                  string   // campaign.ByName where the way it improves came from its name (a rate higher, a time lower)
	Stamped              []string // "new: GPU 0 throttled (SW power cap)"
}

// Result is a whole comparison.
type Result struct {
	Old, New   record.Campaign
	Conditions []conditions.Change // how the new campaign's conditions differ from the old one's
	During     []string            // changes seen during either campaign
	Lines      []Line
	Missing    []string // phases, points or metrics on one side only
	Notes      []string // a side still running, renames applied
	Traces     []PhaseTraces
	Roofs      []RoofChange
	Budgets    []BudgetChange
}

// BudgetChange is one decode row's time budget on both sides: did a
// change move the all-reduce or the rest?
type BudgetChange struct {
	Phase, Point string
	Old, New     record.Budget
}

// Moved says which term of the budget moved the TPOT most, in words:
// "the rest (-4.1 ms of -4.3)"; "" when neither side has an all-reduce.
func (c BudgetChange) Moved() string {
	if c.Old.AllReduce == nil || c.New.AllReduce == nil {
		return ""
	}
	d := c.New.TPOTms - c.Old.TPOTms
	type term struct {
		name string
		v    float64
	}
	terms := []term{{"the floor", c.New.FloorMs - c.Old.FloorMs}, {"the all-reduce", c.New.AllReduce.Ms - c.Old.AllReduce.Ms}}
	if c.Old.GEMM != nil && c.New.GEMM != nil {
		terms = append(terms, term{"the GEMMs above their floor", c.New.GEMM.Ms - c.Old.GEMM.Ms}, term{"the rest", c.New.RestMs - c.Old.RestMs})
	} else {
		// Measured on one side only, the GEMMs' excess is in the other's
		// rest: the two are held as one.
		withGEMM := func(b record.Budget) float64 {
			if b.GEMM != nil {
				return b.RestMs + b.GEMM.Ms
			}
			return b.RestMs
		}
		terms = append(terms, term{"the rest", withGEMM(c.New) - withGEMM(c.Old)})
	}
	top := terms[0]
	for _, t := range terms[1:] {
		if math.Abs(t.v) > math.Abs(top.v) {
			top = t
		}
	}
	return fmt.Sprintf("%s (%+.3g ms of the TPOT's %+.3g)", top.name, top.v, d)
}

// RoofChange is one point of a roofline phase on both sides: how close
// to its board's roofline each came.
type RoofChange struct {
	Phase              string
	Old, New           record.RoofPoint
	OldBoard, NewBoard string
}

// PhaseTraces is a capture phase's traces, old against new: which kernel
// families changed.
type PhaseTraces struct {
	Phase string
	Diff  TraceDiff
}

// key is a metric at a point of a phase.
type key struct{ phase, point, metric string }

type side struct {
	rename  map[string]string // a metric's old name -> its name now
	vals    map[key][]float64
	stamps  map[key][]string
	order   []key
	phases  map[string]record.Phase
	phaseOf []string
	// runs are, where a record has its results model (schema 2), each
	// point's metric over its runs as the model counted them (a unit once
	// done; a unit of several rows one run): what a line judges, not the
	// rows (a failed unit's rows are not runs).
	runs map[key]Stat
}

func gather(r *record.Record, rename map[string]string) side {
	s := newSide(rename)
	s.setPhases(r.Phases)
	for _, row := range r.Rows {
		s.add(row)
	}
	return *s
}

// newSide is a side with nothing in it yet: add takes the rows one at a
// time (loadSide streams a record through it), setPhases its phases.
func newSide(rename map[string]string) *side {
	return &side{vals: map[key][]float64{}, stamps: map[key][]string{}, phases: map[string]record.Phase{}, rename: rename, runs: map[key]Stat{}}
}

func (s *side) setPhases(phases []record.Phase) {
	for _, p := range phases {
		s.phases[p.ID] = p
		s.phaseOf = append(s.phaseOf, p.ID)
		if p.Model == nil {
			continue
		}
		for _, pt := range p.Model.Points {
			for _, st := range pt.Stats {
				m := st.Metric
				if to, ok := s.rename[m]; ok {
					m = to
				}
				s.runs[key{p.ID, pt.Key, m}] = Stat{N: st.N, Mean: st.Mean, SD: st.CV * math.Abs(st.Mean)}
			}
		}
	}
}

// statFor is a side's metric at a point: its model's runs where the
// record has them, else its rows'.
func (s *side) statFor(k key) Stat {
	if st, ok := s.runs[k]; ok {
		return st
	}
	return StatOf(s.vals[k])
}

func (s *side) add(row record.Row) {
	point := row.Point
	// A table's rows (nccl-tests' sizes, nvbandwidth's GPU pairs) are
	// each their own measurement, never repeats of one point.
	meas := campaign.MeasurementOf(row.Values)
	if meas != "" {
		point = strings.TrimPrefix(fmt.Sprintf("%s · step %d · %s", row.Point, row.Step, meas), " · ")
	}
	names := make([]string, 0, len(row.Values))
	for m := range row.Values {
		if meas != "" && !campaign.MeasuredBy(m) {
			continue // what it measured (a size, a pair), not a measurement
		}
		names = append(names, m)
	}
	sort.Strings(names)
	for _, m := range names {
		f, ok := row.Values[m].(float64)
		if !ok || math.IsNaN(f) {
			continue
		}
		if to, ok := s.rename[m]; ok {
			m = to
		}
		k := key{row.Phase, point, m}
		if _, seen := s.vals[k]; !seen {
			s.order = append(s.order, k)
		}
		s.vals[k] = append(s.vals[k], f)
		for _, st := range row.Stamp {
			if !slices.Contains(s.stamps[k], st) {
				s.stamps[k] = append(s.stamps[k], st)
			}
		}
	}
}

// Compare holds new against old.
func Compare(old, new *record.Record, o Options) Result {
	return compareSides(old, gather(old, o.Rename), new, gather(new, nil), o)
}

// compareSides holds b (of the record new) against a (of old): the
// records for their campaigns and conditions, the sides for their rows.
func compareSides(old *record.Record, a side, new *record.Record, b side, o Options) Result {
	res := Result{Old: old.Campaign, New: new.Campaign}
	if res.Old.Name == res.New.Name {
		// The same campaign again (after --fresh, say): its two runs are
		// told apart by when each was written, else as old and new.
		res.Old.Name, res.New.Name = sideName(res.Old, "old"), sideName(res.New, "new")
	}
	if old.Conditions != nil && new.Conditions != nil {
		res.Conditions = conditions.Diff(old.Conditions.First, new.Conditions.First)
	}
	for _, c := range []struct {
		name string
		rec  *record.Record
	}{{old.Campaign.Name + " (old)", old}, {new.Campaign.Name + " (new)", new}} {
		if c.rec.Conditions == nil {
			continue
		}
		for _, ch := range c.rec.Conditions.Changes {
			where := "at the start of " + ch.Phase
			if ch.Phase == "" {
				where = "on resuming"
			}
			res.During = append(res.During, fmt.Sprintf("%s, %s: %s", c.name, where, ch))
		}
	}
	for _, c := range []record.Campaign{old.Campaign, new.Campaign} {
		switch c.State {
		case "running", "paused", "frozen":
			res.Notes = append(res.Notes, fmt.Sprintf("%s was still %s when its record was written (%s): compared as it stood", c.Name, c.State, c.Written.Format("2006-01-02 15:04")))
		}
	}
	if len(o.Rename) > 0 {
		var rn []string
		for from, to := range o.Rename {
			rn = append(rn, from+" → "+to)
		}
		sort.Strings(rn)
		res.Notes = append(res.Notes, "metrics renamed since the baseline: "+strings.Join(rn, ", "))
	}
	for _, id := range a.phaseOf {
		if _, ok := b.phases[id]; !ok {
			res.Missing = append(res.Missing, fmt.Sprintf("phase %s: only in %s", id, res.Old.Name))
		}
	}
	for _, id := range b.phaseOf {
		if _, ok := a.phases[id]; !ok {
			res.Missing = append(res.Missing, fmt.Sprintf("phase %s: only in %s", id, res.New.Name))
		}
	}
	constants := 0
	for _, k := range b.order {
		named := metricsOf(k.phase, a.phases, b.phases)
		if named != nil && !slices.Contains(named, k.metric) {
			continue
		}
		if _, ok := a.vals[k]; !ok {
			if _, both := a.phases[k.phase]; both {
				res.Missing = append(res.Missing, fmt.Sprintf("%s: only in %s", describe(k), res.New.Name))
			}
			continue
		}
		if named == nil && sameConstant(a.vals[k], b.vals[k]) {
			constants++ // a setting or a count (total_input_tokens): nothing to judge
			continue
		}
		dir, basis := better(k, b.phases, a.phases)
		l := judge(k, a, b, dir, o)
		l.Way = basis
		res.Lines = append(res.Lines, l)
	}
	if constants > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d column(s) left out: the same constant on both sides (a setting or a count, not a measurement)", constants))
	}
	// How close to the hardware, each side: a roofline phase's points.
	for _, id := range b.phaseOf {
		ra, rb := a.phases[id].Roofline, b.phases[id].Roofline
		if ra == nil || rb == nil {
			continue
		}
		for _, nb := range rb.Points {
			i := slices.IndexFunc(ra.Points, func(p record.RoofPoint) bool { return p.Point == nb.Point })
			if i >= 0 {
				res.Roofs = append(res.Roofs, RoofChange{Phase: id, Old: ra.Points[i], New: nb, OldBoard: ra.Board, NewBoard: rb.Board})
			}
		}
	}
	// Where decode time went, each side: a floor phase's rows' budgets.
	for _, id := range b.phaseOf {
		fa, fb := a.phases[id].Floor, b.phases[id].Floor
		if fa == nil || fb == nil {
			continue
		}
		for _, nb := range fb.Points {
			i := slices.IndexFunc(fa.Points, func(p record.FloorPoint) bool { return p.Point == nb.Point })
			if i >= 0 && fa.Points[i].Budget != nil && nb.Budget != nil {
				res.Budgets = append(res.Budgets, BudgetChange{Phase: id, Point: nb.Point, Old: *fa.Points[i].Budget, New: *nb.Budget})
			}
		}
	}
	// Which kernels changed: each phase with captures on both sides.
	for _, id := range b.phaseOf {
		pa, pb := a.phases[id], b.phases[id]
		if len(pa.Captures) > 0 && len(pb.Captures) > 0 {
			res.Traces = append(res.Traces, PhaseTraces{Phase: id, Diff: DiffCaptures(res.Old.Name, pa.Captures, res.New.Name, pb.Captures)})
		}
	}
	for _, k := range a.order {
		if named := metricsOf(k.phase, a.phases, b.phases); named != nil && !slices.Contains(named, k.metric) {
			continue
		}
		if _, ok := b.vals[k]; !ok {
			if _, both := b.phases[k.phase]; both {
				res.Missing = append(res.Missing, fmt.Sprintf("%s: only in %s", describe(k), res.Old.Name))
			}
		}
	}
	return res
}

// metricsOf are the columns a phase's metrics may come as, on either
// side (a --save-result name and the printed one); nil when neither side
// names its metrics: every numeric column is then one.
func metricsOf(phase string, sides ...map[string]record.Phase) []string {
	var out []string
	for _, phases := range sides {
		for _, m := range phases[phase].Metrics {
			out = append(out, campaign.Metric{Name: m}.Names()...)
		}
	}
	return out
}

// sameConstant says both sides hold one value, the same, in every run.
func sameConstant(a, b []float64) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	for _, x := range append(slices.Clone(a), b...) {
		if x != a[0] {
			return false
		}
	}
	return true
}

func describe(k key) string {
	s := k.phase
	if k.point != "" {
		s += " " + k.point
	}
	return s + " " + k.metric
}

// better is which way metric k improves: the new phase's word, else the
// old one's, else the metric's name (a rate higher, a time lower: basis
// campaign.ByName, said beside the verdict); "" when nothing says.
func better(k key, phases ...map[string]record.Phase) (dir campaign.Direction, basis string) {
	for _, ps := range phases {
		p, ok := ps[k.phase]
		if !ok {
			continue
		}
		if d, _ := campaign.Way(p.Better, k.metric, false); d != "" {
			return d, ""
		}
	}
	return campaign.Way(nil, k.metric, true)
}

func judge(k key, a, b side, dir campaign.Direction, o Options) Line {
	l := Judge(a.statFor(k), b.statFor(k), dir, o)
	l.Phase, l.Point, l.Metric = k.phase, k.point, k.metric
	for _, s := range a.stamps[k] {
		l.Stamped = append(l.Stamped, "old: "+s)
	}
	for _, s := range b.stamps[k] {
		l.Stamped = append(l.Stamped, "new: "+s)
	}
	return l
}

// Judge is the one verdict of new against old, beyond noise or not, and
// better or worse where dir says which way is: Welch's t-test at o's
// level where both sides ran twice or more; one run against the other
// side's repeats by their prediction interval; else o's tolerance on the
// change (a zero old mean: any difference). The record's comparisons,
// its interconnect block against a baseline and the trace diff read it.
func Judge(old, new Stat, dir campaign.Direction, o Options) Line {
	l := Line{Old: old, New: new, P: math.NaN()}
	l.Change = math.NaN()
	if l.Old.Mean != 0 {
		l.Change = (l.New.Mean - l.Old.Mean) / math.Abs(l.Old.Mean)
	}
	differs := false
	if l.Old.N >= 2 && l.New.N >= 2 {
		l.P = Welch(l.Old, l.New)
		differs = l.P < o.alpha()
		l.Basis = fmt.Sprintf("Welch's t-test, p %s, n = %d and %d", pWords(l.P), l.Old.N, l.New.N)
		if !differs {
			l.Verdict = Noise
			return l
		}
	} else if ref, one, whose, ok := spreadOf(l.Old, l.New); ok {
		// One run against repeats: is it where the repeats' spread would
		// put another of them (their prediction interval)?
		level := 1 - o.alpha()
		q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(ref.N - 1)}.Quantile(1 - o.alpha()/2)
		half := q * ref.SD * math.Sqrt(1+1/float64(ref.N))
		differs = math.Abs(one-ref.Mean) > half
		l.Basis = fmt.Sprintf("one run against %s %d runs: their %s%% prediction interval %s ± %s", whose, ref.N,
			trim(level*100), trim(ref.Mean), trim(half))
		if !differs {
			l.Verdict = Noise
			return l
		}
	} else {
		switch {
		case math.IsNaN(l.Change):
			differs = l.New.Mean != l.Old.Mean
		default:
			differs = math.Abs(l.Change) > o.Tolerance
		}
		l.Basis, l.ByTolerance = fmt.Sprintf("tolerance %s%%, %d and %d run(s)", trim(o.Tolerance*100), l.Old.N, l.New.N), true
		if !differs {
			l.Verdict = Same
			return l
		}
	}
	up := l.New.Mean > l.Old.Mean
	switch {
	case dir == campaign.Higher && up, dir == campaign.Lower && !up:
		l.Verdict = Better
	case dir == campaign.Higher || dir == campaign.Lower:
		l.Verdict = Worse
	default:
		l.Verdict = Changed
	}
	return l
}

// sideName names one of two records of the same campaign.
func sideName(c record.Campaign, side string) string {
	// When it started: a fact of its state dir. When its record was last
	// written moves with every write, and a record rebuilt by `report`
	// must name its sides as the runner did.
	at := c.Started
	if at.IsZero() {
		at = c.Written
	}
	if at.IsZero() {
		return c.Name + " (" + side + ")"
	}
	return c.Name + " (" + side + ", " + at.Format("2006-01-02 15:04") + ")"
}

// spreadOf is, where one side has one run and the other repeats that
// spread, the side with repeats, the lone run and whose they are.
func spreadOf(old, new Stat) (ref Stat, one float64, whose string, ok bool) {
	switch {
	case old.N >= 2 && new.N == 1 && old.SD > 0:
		return old, new.Mean, "the baseline's", true
	case new.N >= 2 && old.N == 1 && new.SD > 0:
		return new, old.Mean, "the new side's", true
	}
	return Stat{}, 0, "", false
}

// Welch is the two-sided p-value of Welch's t-test of a against b: the
// chance of a difference in means at least this large if both came from
// distributions of the same mean, their variances not assumed equal.
func Welch(a, b Stat) float64 {
	se, df := welchSE(a, b)
	if se == 0 {
		if a.Mean == b.Mean {
			return 1
		}
		return 0 // no spread on either side, and the means differ
	}
	t := (b.Mean - a.Mean) / se
	return 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(math.Abs(t))
}

// WelchInterval is the 95% interval of b's mean less a's (Welch's: the
// variances not assumed equal); the difference itself both ends when
// neither side spreads.
func WelchInterval(a, b Stat) (lo, hi float64) {
	d := b.Mean - a.Mean
	se, df := welchSE(a, b)
	if se == 0 {
		return d, d
	}
	half := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(0.975) * se
	return d - half, d + half
}

// welchSE is the standard error of b's mean less a's and its
// Welch–Satterthwaite degrees of freedom (each side twice or more).
func welchSE(a, b Stat) (se, df float64) {
	va, vb := a.SD*a.SD/float64(a.N), b.SD*b.SD/float64(b.N)
	if va+vb == 0 {
		return 0, 0
	}
	return math.Sqrt(va + vb), (va + vb) * (va + vb) / (va*va/float64(a.N-1) + vb*vb/float64(b.N-1))
}

func pWords(p float64) string {
	if p < 0.001 {
		return "< 0.001"
	}
	return "= " + trim(math.Round(p*1000)/1000)
}

func trim(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", f), "0"), ".")
}

// Counts are how many lines got each verdict.
func (r Result) Counts() map[Verdict]int {
	c := map[Verdict]int{}
	for _, l := range r.Lines {
		c[l.Verdict]++
	}
	return c
}
