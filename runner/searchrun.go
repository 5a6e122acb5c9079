package runner

import (
	"time"

	"github.com/greenlight-run/greenlight/results"
	"github.com/greenlight-run/greenlight/runner/state"
)

// A search phase (campaign.Search) is planned as a sweep over its grid,
// each value's runs grouped; which of them run is the search's to say.
// Its state is never kept apart: it is replayed from the units' rows each
// time a unit ends, so a runner started again (after a stop, a kill -9)
// continues the search where it was, and a run stamped under bad
// conditions after the search moved on is taken back at the next
// decision (the probe it counted in gets another run).

// searchNext is the first step of the unit the search asks for, or
// len(steps) when it is done: the units it never asked for are skipped,
// saying so.
func (pr *phaseRun) searchNext() int {
	n := len(pr.ph.AllSteps())
	s, next := results.SearchProbes(pr.ph, pr.state.Steps)
	if next >= 0 {
		return next
	}
	if _, done := s.Next(); !done {
		return n // a unit still runs: nothing to start
	}
	why := whyNotProbed + "the search " + results.SearchWords(pr.ph.Sweep.Search, s)
	for i := range pr.state.Steps {
		if ss := &pr.state.Steps[i]; ss.Status == Pending {
			skipStep(ss, state.SkipNotProbed, why)
		}
	}
	return n
}

// searchRemaining is a search phase's ETA: the probes still to come at
// most (the search's promise less the probes judged), each run its least
// number of times, less the runs the probe under way has had, at the
// mean time of the runs done in this attempt (its estimate or history
// before any); cur is the running unit's own ETA, counted for its run.
func (r *Runner) searchRemaining(pr *phaseRun, cur ETA, now time.Time) ETA {
	ss := pr.ph.Sweep.Search
	s, next := results.SearchProbes(pr.ph, pr.state.Steps)
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
			if st, _ := u.State(pr.state.Steps); st != Done {
				continue
			}
			for _, i := range u.Steps {
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
		for _, i := range pr.pointUnits()[0][0].Steps {
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
