package results

import (
	"fmt"
	"strconv"

	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/search"
	"github.com/greenlight-run/greenlight/runner/state"
)

// SearchProbes replays a search phase's decisions from its units' rows:
// each probe the search asked for, with its runs (stamped ones left out)
// and verdict, and the unit it asks for next (-1: none, the search is
// done or waits on a unit still running).
func SearchProbes(ph *campaign.Phase, steps []state.StepState) (*search.Search, int) {
	ss := ph.Sweep.Search
	s := search.Over(ss.Values)
	byPoint := UnitsByPoint(ph)
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
		runs, used, next, running := ProbeRuns(ph, byPoint[point], steps, skip)
		if n, why, capped := stampedOf(ph, byPoint[point], steps, skip); capped && !running {
			// A server that held a run below its load holds the next one
			// so too: the probe is not run again, and never decides.
			s.Record(search.Probe{Value: v, Repeats: used, Judgement: search.Judge(ss.SLO, runs), Runs: runs, Stamped: n, Why: why})
			continue
		}
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
			n, why, _ := stampedOf(ph, byPoint[point], steps, skip)
			s.Record(search.Probe{Value: v, Repeats: used, Judgement: search.Judge(ss.SLO, runs), Runs: runs, Stamped: n, Why: why})
			continue
		}
		return s, next
	}
}

// ProbeRuns are a probe's usable runs (SLO metric → values, from units
// done and not stamped), how many units they are, the first step of its
// next unit not yet run (-1: none left), and whether a unit of it runs.
func ProbeRuns(ph *campaign.Phase, units []Unit, steps []state.StepState, skip map[string]bool) (runs map[string][]float64, used, next int, running bool) {
	runs, next = map[string][]float64{}, -1
	for k, run := range Gather(ph, units, steps, skip) {
		switch {
		case run.Outcome == UnitRunning:
			running = true
		case run.Outcome == UnitPending:
			if _, at := units[k].State(steps); next < 0 {
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

// stampedOf is how many of a probe's runs were taken under bad
// conditions, the first one's stamp (a cap's, where a server capped
// one), and whether a server capped one.
func stampedOf(ph *campaign.Phase, units []Unit, steps []state.StepState, skip map[string]bool) (n int, why string, capped bool) {
	for _, run := range Gather(ph, units, steps, skip) {
		if run.Outcome != UnitStamped {
			continue
		}
		n++
		if why == "" || run.Capped && !capped {
			why = run.Stamp
		}
		capped = capped || run.Capped
	}
	return n, why, capped
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
			if p.Repeats == 0 && p.Stamped > 0 {
				runs := fmt.Sprintf("its %d runs were", p.Stamped)
				if p.Stamped == 1 {
					runs = "its run was"
				}
				return fmt.Sprintf("%d could not be told: %s taken under bad conditions (%s)", v, runs, p.Why)
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
