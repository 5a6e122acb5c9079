package runner

import (
	"fmt"
	"strconv"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/search"
)

// A search phase (campaign.Search) is planned as a sweep over its grid,
// each value's runs grouped; which of them run is the search's to say.
// Its state is never kept apart: it is replayed from the units' rows each
// time a unit ends, so a runner started again (after a stop, a kill -9)
// continues the search where it was, and a run stamped under bad
// conditions after the search moved on is taken back at the next
// decision (the probe it counted in gets another run).

// SearchProbes replays a search phase's decisions from its units' rows:
// each probe the search asked for, with its runs (stamped ones left out)
// and verdict, and the unit it asks for next (-1: none, the search is
// done or waits on a unit still running).
func SearchProbes(ph *campaign.Phase, steps []StepState) (*search.Search, int) {
	ss := ph.Sweep.Search
	s := search.Over(ss.Values)
	byPoint := unitsByPoint(ph)
	skip := ph.PointColumns()
	for {
		v, done := s.Next()
		if done {
			return s, -1
		}
		point := 0
		for i, x := range ss.Values {
			if x == v {
				point = i
			}
		}
		runs, used, next, running := probeRuns(ph, byPoint[point], steps, skip)
		if used >= ss.MinRepeats {
			j := search.Judge(ss.SLO, runs)
			if j.Verdict != search.Indeterminate || used >= ss.MaxRepeats {
				s.Record(search.Probe{Value: v, Repeats: used, Judgement: j, Runs: runs})
				continue
			}
		}
		switch {
		case running:
			return s, -1 // its run in flight decides
		case next < 0: // its spare units all spent on stamped runs
			s.Record(search.Probe{Value: v, Repeats: used, Judgement: search.Judge(ss.SLO, runs), Runs: runs})
			continue
		}
		return s, next
	}
}

// probeRuns are a probe's usable runs (SLO metric → values, from units
// done and not stamped), how many units they are, the first step of its
// next unit not yet run (-1: none left), and whether a unit of it runs.
func probeRuns(ph *campaign.Phase, units []sweepUnit, steps []StepState, skip map[string]bool) (runs map[string][]float64, used, next int, running bool) {
	runs, next = map[string][]float64{}, -1
	for k, run := range gather(ph, units, steps, skip) {
		switch {
		case run.Outcome == UnitRunning:
			running = true
		case run.Outcome == UnitPending:
			if _, at := units[k].state(steps); next < 0 {
				next = at // a unit of several steps goes on where it is
			}
		case run.Counts():
			for _, t := range ph.Sweep.Search.SLO {
				if f, ok := run.Value(t.Metric); ok {
					runs[t.Metric] = append(runs[t.Metric], f)
				}
			}
			used++
		}
	}
	return runs, used, next, running
}

// searchNext is the first step of the unit the search asks for, or
// len(steps) when it is done: the units it never asked for are skipped,
// saying so.
func (pr *phaseRun) searchNext() int {
	n := len(pr.ph.AllSteps())
	s, next := SearchProbes(pr.ph, pr.state.Steps)
	if next >= 0 {
		return next
	}
	if _, done := s.Next(); !done {
		return n // a unit still runs: nothing to start
	}
	why := whyNotProbed + "the search " + SearchWords(pr.ph.Sweep.Search, s)
	for i := range pr.state.Steps {
		if ss := &pr.state.Steps[i]; ss.Status == Pending {
			ss.Status, ss.Reason = Skipped, why
		}
	}
	return n
}

// SearchWords says what a search found, the one wording of its
// conclusion (the runner's skip reason, status, the record): "found
// concurrency 181 (199 fails p99_tpot_ms <= 50)", or "(199 could not be
// told)" where the bracket's top is undecided after its runs.
func SearchWords(ss *campaign.Search, s *search.Search) string {
	r := s.Result()
	above := func(v int) string {
		for _, p := range s.Probes {
			if p.Value != v {
				continue
			}
			if p.Verdict == search.Fail {
				return fmt.Sprintf("%d fails %s", v, p.Binding)
			}
			return fmt.Sprintf("%d could not be told after %d runs", v, p.Repeats)
		}
		return strconv.Itoa(v) + " does not pass"
	}
	switch {
	case !r.OK && r.Above == ss.Values[0]:
		return fmt.Sprintf("found no %s in [%d, %d] that meets the SLO: the lowest, %s", ss.Axis, ss.Lo, ss.Hi, above(r.Above))
	case !r.OK:
		return fmt.Sprintf("found no %s in [%d, %d] that meets the SLO", ss.Axis, ss.Lo, ss.Hi)
	case r.Above == 0:
		return fmt.Sprintf("found the whole range meets the SLO, up to %s %d", ss.Axis, r.Limit)
	}
	return "found " + ss.Axis + " " + strconv.Itoa(r.Limit) + " (" + above(r.Above) + ")"
}

// searchRemaining is a search phase's ETA: the probes still to come at
// most (the search's promise less the probes judged), each run its least
// number of times, less the runs the probe under way has had, at the
// mean time of the runs done in this attempt (its estimate or history
// before any); cur is the running unit's own ETA, counted for its run.
func (r *Runner) searchRemaining(pr *phaseRun, cur ETA, now time.Time) ETA {
	ss := pr.ph.Sweep.Search
	s, next := SearchProbes(pr.ph, pr.state.Steps)
	if _, done := s.Next(); done && next < 0 {
		return ETA{Known: true, Source: SourceProbes, Fraction: 1}
	}
	// A run's time: the mean of the units done (a unit of several steps
	// takes all of them), or its steps' guess before any.
	var ran time.Duration
	n, under := 0, 0
	v, _ := s.Next() // the probe under way: the search counts it once judged
	for point, units := range pr.pointUnits() {
		for _, u := range units {
			if st, _ := u.state(pr.state.Steps); st != Done {
				continue
			}
			for _, i := range u.steps {
				ran += max(0, pr.state.Steps[i].Ended.Sub(pr.state.Steps[i].Started))
			}
			n++
			if ss.Values[point] == v {
				under++
			}
		}
	}
	var each time.Duration
	if n > 0 {
		each = ran / time.Duration(n)
	} else {
		for _, i := range pr.pointUnits()[0][0].steps {
			d, _ := r.guessStep(pr, i)
			each += d
		}
	}
	runs := max(0, ss.MaxProbes()-len(s.Probes))*ss.MinRepeats - min(under, ss.MinRepeats)
	e := ETA{Source: SourceProbes, Known: each > 0, Fraction: -1}
	if cur.Known && pr.state.Status == Running && pr.cur != nil {
		runs-- // the running one: its own ETA
		e.Remaining = cur.Remaining
	}
	e.Remaining += time.Duration(max(0, runs)) * each
	if most := ss.MaxProbes(); most > 0 {
		e.Fraction = min(1, float64(len(s.Probes))/float64(most))
	}
	return e
}
