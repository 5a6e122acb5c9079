package runner

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/stat"

	"github.com/greenlight-run/greenlight/results"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/state"
)

// A sweep's units run as the phase's steps (campaign.Sweep); what the
// runner adds: rows that carry their point, and until: failed.

// nextStep is the first step from idx on that a sweep's until: failed
// has not cut; the cut ones are marked skipped, with the point that cut
// them. It is decided from the rows alone, so a runner started again
// decides the same.
func (pr *phaseRun) nextStep(idx int) int {
	if sw := pr.ph.Sweep; sw != nil && sw.Search != nil {
		return pr.searchNext() // a search says which unit, not the grid's order
	}
	steps := pr.ph.AllSteps()
	goOn := pr.ph.Sweep != nil && pr.ph.Sweep.GoOn
	for ; idx < len(steps); idx++ {
		if st := pr.state.Steps[idx].Status; st == Done || st == Skipped || (st == Failed && goOn) {
			continue // a unit an edited grid kept, a point skipped, one failed in a grid that goes on
		}
		if last, decided := pr.decided(idx); decided {
			idx = last
			continue
		}
		return idx
	}
	return idx
}

// decided marks step idx skipped where the rows already decide it need
// not run (its point precise: its unit whole; until: failed cut it), and
// says so, with the last step it marked.
func (pr *phaseRun) decided(idx int) (last int, ok bool) {
	if u, why := pr.preciseAlready(idx); why != "" {
		for _, i := range u.Steps { // the unit whole
			skipStep(&pr.state.Steps[i], state.SkipPrecise, why)
		}
		return u.Steps[len(u.Steps)-1], true
	}
	if at := pr.unitFailedAt(idx); at >= 0 {
		ss := &pr.state.Steps[idx]
		skipStep(ss, state.SkipUnitFailed, fmt.Sprintf("not run: step %d of its unit failed", at+1))
		return idx, true
	}
	if by := pr.cutBy(idx); by != "" {
		ss := &pr.state.Steps[idx]
		skipStep(ss, state.SkipCut, whyUntil+by+" missed its expectation")
		return idx, true
	}
	return idx, false
}

// settle marks, of a phase restored from the journal (a runner started
// again, status and report from the state dir), the units the rows have
// already decided, as the runner did when it came to them: a point
// precise, a unit until: cut, a finished search's values it never asked
// for. Those decisions are never journaled (they are the rows'), so a
// restored phase would otherwise read them as pending.
func (pr *phaseRun) settle() {
	sw := pr.ph.Sweep
	if sw == nil {
		return
	}
	if sw.Search != nil {
		if pr.state.Status == Done {
			pr.searchNext()
		}
		return
	}
	for idx := 0; idx < len(pr.state.Steps); idx++ {
		if pr.state.Steps[idx].Status == Pending {
			idx, _ = pr.decided(idx)
		}
	}
}

// cutBy is the point whose failed expectation stops step idx (the same
// values on every axis but the last, a smaller one on the last), or "".
func (pr *phaseRun) cutBy(idx int) string {
	sw := pr.ph.Sweep
	steps := pr.ph.AllSteps()
	if sw == nil || sw.Until != "failed" || len(sw.Axes) == 0 || steps[idx].Unit == nil {
		return ""
	}
	u, last := steps[idx].Unit, len(sw.Axes)-1
	for j := 0; j < idx; j++ {
		v := steps[j].Unit
		if v == nil || v.Values[last] >= u.Values[last] || !slices.Equal(v.Values[:last], u.Values[:last]) {
			continue
		}
		for _, row := range pr.state.Steps[j].Results {
			for _, c := range row.Checks {
				if !c.Pass {
					return sw.Key(*v)
				}
			}
		}
	}
	return ""
}

// withPoint puts the step's point (each axis's value, and the repeat)
// before the row's own columns, and before those the point of the swept
// service it ran under; a column the step wrote itself is kept.
func (sr *stepRun) withPoint(row Row) Row {
	sw, u, pt := sr.pr.ph.Sweep, sr.step.Unit, sr.pr.ph.Point
	if (sw == nil || u == nil) && pt == nil {
		return row
	}
	var cols []string
	var vals []any
	add := func(c string, name string) {
		if slices.Contains(row.Cols, c) {
			return
		}
		cols = append(cols, c)
		if f, err := strconv.ParseFloat(name, 64); err == nil {
			vals = append(vals, f)
		} else {
			vals = append(vals, name)
		}
	}
	if pt != nil { // the service's point: the outermost axes
		for _, v := range pt.Values {
			add(v.Axis, v.Value)
		}
	}
	if sw != nil && u != nil {
		for i, a := range sw.Axes {
			add(a.Name, a.Values[u.Values[i]].Name)
		}
		add("repeat", strconv.Itoa(u.Repeat))
	}
	row.Cols = append(cols, row.Cols...)
	row.Values = append(vals, row.Values...)
	return row
}

// pointOf is a sweep step's point as the runner's plan has it
// ("m=64,shape=down"), for its StepState; "" outside a sweep.
func pointOf(ph *campaign.Phase, s *campaign.Step) string {
	if s.Unit == nil || ph.Sweep == nil {
		return ""
	}
	return ph.Sweep.Key(*s.Unit)
}

// sayNoisy tells, as an event, of a point whose runs are all in and
// disagree beyond the phase's noise limit (their coefficient of
// variation) in any of its metrics: once per point, naming each metric
// that does. Judged on the complete runs, not the first two (a third may
// settle them); not a warning: the record's header says a phase's noisy
// points in one line, from its rows. A search's probes are judged by
// their intervals, not by this.
func (sr *stepRun) sayNoisy() {
	pr, sw, u := sr.pr, sr.pr.ph.Sweep, sr.step.Unit
	if sw == nil || u == nil || sw.Repeat < 2 || sw.Search != nil {
		return
	}
	key := sw.Key(*u)
	if pr.noisySaid[key] || !results.PointComplete(pr.ph, pr.state.Steps, u.Point) {
		return
	}
	runs, _ := pr.pointRuns(u.Point)
	var noisy []string
	n := 0
	for _, c := range slices.Sorted(maps.Keys(runs)) {
		xs := runs[c]
		if !results.Noisy(xs, sw.Noise) {
			continue
		}
		noisy = append(noisy, fmt.Sprintf("%s (%.1f%%)", c, results.CV(xs)*100))
		n = max(n, len(xs))
	}
	if len(noisy) == 0 {
		return
	}
	if pr.noisySaid == nil {
		pr.noisySaid = map[string]bool{}
	}
	pr.noisySaid[key] = true
	sr.r.emit(Event{Kind: Progress, Phase: pr.ph.ID, Step: sr.step.Index, Message: fmt.Sprintf("%s: point %s is noisy: its %d runs disagree by more than %s (coefficient of variation) in %s",
		pr.ph.Label(), key, n, sw.NoiseWords(), strings.Join(noisy, ", "))})
}

// pointsOf are the units of a sweep phase that a point spec names: each
// axis it gives must have that value; an axis it leaves out takes any.
func pointsOf(ph *campaign.Phase, spec string) ([]int, error) {
	sw := ph.Sweep
	if sw == nil || len(sw.Axes) == 0 {
		return nil, fmt.Errorf("%s is not a sweep: skip it whole with `greenlight skip FILE %s`", ph.ID, ph.ID)
	}
	want := map[string]string{}
	for _, part := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("point %q: write it as GREENLIGHT_POINT does, axis=value[,axis=value]: e.g. %s", spec, sw.Key(sw.Units[0]))
		}
		i := slices.IndexFunc(sw.Axes, func(a campaign.Axis) bool { return a.Name == k })
		if i < 0 {
			var names []string
			for _, a := range sw.Axes {
				names = append(names, a.Name)
			}
			return nil, fmt.Errorf("point %q: %s has no axis %q (its axes: %s)", spec, ph.ID, k, strings.Join(names, ", "))
		}
		if !slices.ContainsFunc(sw.Axes[i].Values, func(av campaign.AxisValue) bool { return av.Name == v }) {
			var vals []string
			for _, av := range sw.Axes[i].Values {
				vals = append(vals, av.Name)
			}
			return nil, fmt.Errorf("point %q: axis %s has no value %q (its values: %s)", spec, k, v, strings.Join(vals, ", "))
		}
		want[k] = v
	}
	var out []int
	for idx, st := range ph.AllSteps() {
		u := st.Unit
		if u == nil {
			continue
		}
		match := true
		for i, a := range sw.Axes {
			if v, ok := want[a.Name]; ok && a.Values[u.Values[i]].Name != v {
				match = false
			}
		}
		if match {
			out = append(out, idx)
		}
	}
	return out, nil
}

// CheckPoint says whether spec names points of phase ph's grid, and if
// not why: for a verb to refuse bad input before it reaches a runner.
func CheckPoint(ph *campaign.Phase, spec string) error {
	_, err := pointsOf(ph, spec)
	return err
}

// skipPoint skips the units of the points spec names: those not started
// are marked skipped, a running one is stopped; the phase goes on.
func (r *Runner) skipPoint(id, spec string) error {
	pr, err := r.find(id)
	if err != nil {
		return err
	}
	units, err := pointsOf(pr.ph, spec)
	if err != nil {
		return err
	}
	if err := state.Allowed(VerbSkipPoint, pr.ph, &pr.state, pr.gateOpen); err != nil {
		return err
	}
	attempt := pr.state.Attempt
	if pr.state.Status == Pending || pr.state.Status == Waiting {
		attempt++ // the attempt it is about to start
	}
	at := r.opts.Now() // the journal's time too: a runner started again says the same
	r.journal(record{T: at, Kind: state.Record(VerbSkipPoint, pr.state.Status), Phase: id, Attempt: attempt, Reason: spec})
	why := whyByYou + spec + ")"
	n := markSkipped(pr, units, why, at)
	if sr := pr.cur; sr != nil && !sr.proc.exitedSeen && slices.Contains(units, sr.step.Index) {
		sr.proc.stopFor, sr.proc.stopWhy, sr.proc.pointOnly = Skipped, why, true
		sr.stop(r.opts.Grace)
		n++
	}
	r.emit(Event{Kind: Warning, Phase: id, Message: fmt.Sprintf("%s: point %s skipped by you (%d of its runs not done)", pr.ph.Label(), spec, n)})
	return nil
}

// markSkipped marks the units not started yet as skipped by you, at: when it
// was said; it returns how many it marked.
func markSkipped(pr *phaseRun, units []int, why string, at time.Time) int {
	n := 0
	for _, idx := range units {
		if ss := &pr.state.Steps[idx]; ss.Status == Pending {
			skipStep(ss, state.SkipByYou, why)
			ss.Ended = at
			n++
		}
	}
	return n
}

// guessStep is how long step idx of a phase should take: its history;
// for a sweep's unit without one, what the units measured in this
// attempt say, learning as points finish: the same point's other
// repeats; else, along an axis of numbers, a straight line fitted to the
// points measured on the same line of the grid (times that grow with m
// are not taken for the last one's); else the nearest measured points
// (fewest steps along the axes, their mean on a tie); else the step's
// estimate.
func (r *Runner) guessStep(pr *phaseRun, idx int) (time.Duration, string) {
	steps := pr.ph.AllSteps()
	s := steps[idx]
	d, src := r.store.hist.guess(s)
	sw := pr.ph.Sweep
	if src == SourceHistory || sw == nil || s.Unit == nil {
		return d, src
	}
	type measured struct {
		unit *campaign.Unit
		took time.Duration
	}
	var done []measured
	for j, o := range steps {
		ss := pr.state.Steps[j]
		if o.Unit != nil && ss.Status == Done && !ss.Started.IsZero() && ss.Ended.After(ss.Started) {
			done = append(done, measured{o.Unit, ss.Ended.Sub(ss.Started)})
		}
	}
	if len(done) == 0 {
		return d, src
	}
	var same time.Duration
	var repeats int
	for _, m := range done {
		if m.unit.Point == s.Unit.Point {
			same += m.took
			repeats++
		}
	}
	if repeats > 0 {
		return same / time.Duration(repeats), SourceNeighbours
	}
	// Along one axis, the others the same: a line fitted to those measured.
	for a, ax := range sw.Axes {
		var xs, ys []float64
		for _, m := range done {
			same := true
			for b := range sw.Axes {
				same = same && (b == a || m.unit.Values[b] == s.Unit.Values[b])
			}
			x, err := strconv.ParseFloat(ax.Values[m.unit.Values[a]].Name, 64)
			if !same || err != nil || m.unit.Values[a] == s.Unit.Values[a] {
				continue
			}
			xs, ys = append(xs, x), append(ys, m.took.Seconds())
		}
		x, err := strconv.ParseFloat(ax.Values[s.Unit.Values[a]].Name, 64)
		if len(xs) < 2 || err != nil || floats.Min(xs) == floats.Max(xs) {
			continue
		}
		alpha, beta := stat.LinearRegression(xs, ys, nil, false)
		guess := alpha + beta*x
		// A line is no law: never below half the quickest measured.
		guess = math.Max(guess, floats.Min(ys)/2)
		return time.Duration(guess * float64(time.Second)), SourceNeighbours
	}
	best, n := -1, 0
	var sum time.Duration
	for _, m := range done {
		dist := 0
		for a := range sw.Axes {
			dist += abs(m.unit.Values[a] - s.Unit.Values[a])
		}
		switch {
		case best < 0 || dist < best:
			best, n, sum = dist, 1, m.took
		case dist == best:
			n++
			sum += m.took
		}
	}
	return sum / time.Duration(n), SourceNeighbours
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// unitsDoneSaid is, for a sweep with units done, " after 27 of 200
// units": a skip keeps what they measured, and says how much that is.
func (pr *phaseRun) unitsDoneSaid() string {
	if pr.ph.Sweep == nil {
		return ""
	}
	done := 0
	for _, ss := range pr.state.Steps {
		if ss.Status == Done {
			done++
		}
	}
	if done == 0 {
		return ""
	}
	return fmt.Sprintf(" after %d of %d units", done, len(pr.state.Steps))
}

// unitFailedAt is, in a grid that goes on past failed points, the step
// of step idx's unit before it that failed (its unit's later steps are
// not run), or -1.
func (pr *phaseRun) unitFailedAt(idx int) int {
	steps := pr.ph.AllSteps()
	if sw := pr.ph.Sweep; sw == nil || !sw.GoOn || steps[idx].Unit == nil {
		return -1
	}
	for _, u := range pr.pointUnits()[steps[idx].Unit.Point] {
		if !slices.Contains(u.Steps, idx) {
			continue
		}
		for _, i := range u.Steps {
			if i == idx {
				break
			}
			if pr.state.Steps[i].Status == Failed {
				return i
			}
		}
	}
	return -1
}

// retryPoint runs again the units of the points spec names, as a new
// attempt of the phase that keeps every other unit as it ended: those
// done, and, in a grid that goes on past failed points, those failed
// (each retried by its own retry --point). Units never run run too. The
// journal of the attempt the phase ended with says which ended how.
func (r *Runner) retryPoint(id, spec string) error {
	pr, err := r.find(id)
	if err != nil {
		return err
	}
	again, err := pointsOf(pr.ph, spec)
	if err != nil {
		return err
	}
	if err := state.Allowed(VerbRetryPoint, pr.ph, &pr.state, pr.gateOpen); err != nil {
		return err
	}
	recs, err := readJournal(r.dirs.Journal())
	if err != nil {
		return err
	}
	h, _ := journalHistory(recs)
	pr.reset()
	r.journal(record{Kind: state.Record(VerbRetryPoint, pr.state.Status), Phase: id, Attempt: pr.state.Attempt, Reason: spec})
	pr.gateOpen = true
	for _, o := range r.phases {
		if o.state.Status == Blocked {
			o.reset()
		}
	}
	kept := 0
	if ph := h[id]; ph != nil {
		kept = r.carryBut(pr, ph, again)
	}
	r.q.stopping, r.q.finished = false, false
	r.emit(Event{Kind: Warning, Phase: id, Message: fmt.Sprintf("%s: point %s will run again (%d of its runs); the %d other runs that ended are kept",
		pr.ph.Label(), spec, len(again), kept)})
	return nil
}

// carryBut keeps, into the phase's next attempt, the units of its last
// attempt (h) that ended, but those at the steps again: done ones, and
// failed ones where the grid goes on past them. It returns how many.
// Nothing is kept of a grid edited since (its units are others).
func (r *Runner) carryBut(pr *phaseRun, h *phaseHistory, again []int) int {
	sw := pr.ph.Sweep
	if sw == nil || pr.ph.UnitHash == "" || h.unitHash != pr.ph.UnitHash {
		return 0
	}
	pr.carried = map[int]record{}
	for idx := range h.stepStart {
		end, ok := h.stepEnd[idx]
		if !ok || idx >= len(pr.state.Steps) || slices.Contains(again, idx) || !(end.Status == Done || end.Status == Failed && sw.GoOn) {
			continue
		}
		r.carry(pr, h, idx, idx)
	}
	pr.cur = nil
	return len(pr.carried)
}

// goOn records a failed unit of a grid that goes on past it
// (on_failure: continue): the unit's other steps are not run, the point
// is failed in every view, and the grid goes on with the next unit.
func (sr *stepRun) goOn(reason string, now time.Time) {
	r, pr := sr.r, sr.pr
	key := pr.ph.Sweep.Key(*sr.step.Unit)
	r.warn(fmt.Sprintf("%s: point %s failed (%s); the grid goes on (on_failure: continue): greenlight retry %s --point %s runs it again alone",
		pr.ph.Label(), key, reason, pr.ph.ID, key))
	sr.next(now)
}

// endGrid ends a phase whose steps have all been through: done, or, where
// a grid went on past failed points, failed, naming them and the verb
// that runs them again alone.
func (r *Runner) endGrid(pr *phaseRun) {
	var failed []string
	if sw := pr.ph.Sweep; sw != nil && sw.GoOn {
		steps := pr.ph.AllSteps()
		for i, ss := range pr.state.Steps {
			if ss.Status == Failed && i < len(steps) && steps[i].Unit != nil {
				if k := sw.Key(*steps[i].Unit); !slices.Contains(failed, k) {
					failed = append(failed, k)
				}
			}
		}
	}
	if len(failed) == 0 {
		r.endPhase(pr, Done, "")
		return
	}
	r.endPhase(pr, Failed, fmt.Sprintf("%d of %d points failed (%s), the others ran; greenlight retry %s --point %s runs it again alone",
		len(failed), pr.ph.Sweep.Points, strings.Join(failed, "; "), pr.ph.ID, failed[0]))
}
