package runner

import (
	"math"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

// SourceLearned is an ETA whose stages still to come are rescaled by the
// pace the earlier ones showed.
const SourceLearned = "learned pace"

// A service's start-up (vLLM: engine start, 64 weight shards, CUDA graph
// capture, API server) is one model of stages. Each stage has an expected
// duration: from the history of earlier loads, else its share of the
// guess (the whole load's history, else the campaign's estimate). Once a
// stage has been measured, the pace it showed (actual over expected,
// weighted by how much of it was seen) rescales the stages still to come,
// so a guess off by 2x fades as the load goes on.

// priorWeight is how much the guess counts before anything is seen, as a
// share of the whole start-up observed at its expected pace: early
// evidence from a stage of 1% does not swing the ETA by itself.
const priorWeight = 0.05

// stageExpect is the expected duration of each of a service's stages and
// where they come from ("" when there is no basis: no history, no
// estimate; shares alone then say only how the stages compare).
func (r *Runner) stageExpect(svc *campaign.Service, key string) ([]time.Duration, string) {
	total, basis := r.store.hist.typical(key), SourceHistory
	if total <= 0 {
		total, basis = svc.Estimate, SourceEstimate
	}
	if total <= 0 {
		total, basis = time.Hour, "" // nominal: only the shares' ratios matter
	}
	var shares float64
	for _, s := range svc.Stages {
		shares += s.Share
	}
	exp := make([]time.Duration, len(svc.Stages))
	learned := 0
	for i, s := range svc.Stages {
		if h := r.store.hist.typical(stageKey(key, s.Name)); h > 0 {
			exp[i] = h
			learned++
			continue
		}
		if shares > 0 {
			exp[i] = time.Duration(s.Share / shares * float64(total))
		}
	}
	if learned == len(exp) && learned > 0 {
		basis = SourceHistory
	}
	return exp, basis
}

func stageKey(key, stage string) string { return key + "#stage:" + stage }

// stagePace is the time left in stages cur and after, given when each
// stage reached so far started (zero: skipped or not yet), the current
// stage's own progress bar, and the expected durations. evidence says
// whether anything was measured yet.
func stagePace(exp []time.Duration, starts []time.Time, cur int, now time.Time, bar *progressTrack, withPrior bool) (rem time.Duration, pace float64, evidence, barOK bool) {
	var whole float64
	for _, e := range exp {
		whole += e.Seconds()
	}
	// The pace is a weighted geometric mean of actual over expected, each
	// part weighted by the share of the whole it covers: a guess off by 2x
	// or by 18x fades alike, and a 1% stage moves it little.
	var logSum, weight float64
	observe := func(actual, expected float64) {
		if actual > 0 && expected > 0 && whole > 0 {
			w := expected / whole
			logSum += w * math.Log(actual/expected)
			weight += w
		}
	}
	last := -1
	for i := 0; i <= cur && i < len(starts); i++ {
		if starts[i].IsZero() {
			continue
		}
		if last >= 0 {
			// Stages skipped between two reached ones count together.
			var expected float64
			for j := last; j < i; j++ {
				expected += exp[j].Seconds()
			}
			observe(starts[i].Sub(starts[last]).Seconds(), expected)
		}
		last = i
	}
	elapsed := now.Sub(starts[cur])
	barLeft, barOK := time.Duration(0), false
	if bar != nil && bar.seen {
		barLeft, barOK = bar.remaining(now)
	}
	if barOK && bar.f > 0 && exp[cur] > 0 && whole > 0 {
		projected := (elapsed + barLeft).Seconds()
		w := bar.f * exp[cur].Seconds() / whole
		logSum += w * math.Log(projected/exp[cur].Seconds())
		weight += w
	}
	evidence = weight > 0
	prior := 0.0
	if withPrior {
		// The guess fades fast as the load is seen: by a quarter of it,
		// a guess 18x off (a replay compressed in time) no longer counts.
		prior = priorWeight * math.Pow(max(0, 1-weight), 4)
	}
	pace = 1
	if weight+prior > 0 {
		pace = math.Exp(logSum / (weight + prior))
	}
	// What the stage should take at this pace, never less than a twentieth
	// of it (a stage running long is held, not counted down to zero).
	want := time.Duration(pace * float64(exp[cur]))
	curLeft := max(want-elapsed, want/20)
	if barOK {
		// The stage's own bar, trusted more as more of it is seen: the
		// first shards of uneven size say little.
		w := 1.0
		if exp[cur] > 0 {
			w = bar.f / (bar.f + barTrust)
		}
		curLeft = time.Duration(w*float64(barLeft) + (1-w)*float64(curLeft))
	}
	rem = curLeft
	for _, e := range exp[cur+1:] {
		rem += time.Duration(pace * float64(e))
	}
	return rem, pace, evidence, barOK
}

// barTrust is the fraction of a bar that must be seen for it to count as
// much as the stage's expected time.
const barTrust = 0.15

// serviceETA is a starting service's ETA by the stage model.
func (sr *stepRun) serviceETA(now time.Time) ETA {
	r := sr.r
	svc := sr.pr.ph.Service
	e := ETA{Fraction: -1}
	if sr.prog.seen {
		e.Done, e.Total, e.Rate = sr.prog.done, sr.prog.total, sr.prog.rateText()
	}
	exp, basis := r.stageExpect(svc, sr.loadKey())
	cur := max(sr.stage, 0)
	starts := sr.stageStarts
	if len(starts) == 0 {
		return stepETA(now, sr.started, &sr.prog, r.store.hist.typical(sr.loadKey()), sr.step.Estimate, 0)
	}
	rem, _, evidence, barOK := stagePace(exp, starts, cur, now, &sr.prog, basis != "")
	switch {
	case barOK && cur == len(exp)-1:
		e.Source = SourceProgress
	case evidence:
		e.Source = SourceLearned
	case basis != "":
		e.Source = basis
	default:
		return e // shares alone, nothing measured: no number
	}
	e.Known, e.Remaining = true, rem
	if el := now.Sub(sr.started); el+rem > 0 {
		e.Fraction = float64(el) / float64(el+rem)
	}
	return e
}

// learnStages records how long each stage of a load took, for the next
// load to predict each stage from, not from shares of a guess.
func (sr *stepRun) learnStages(ready time.Time) {
	r := sr.r
	svc := sr.pr.ph.Service
	last := -1
	for i := 0; i <= len(svc.Stages); i++ {
		var at time.Time
		if i == len(svc.Stages) {
			at = ready
		} else if i < len(sr.stageStarts) {
			at = sr.stageStarts[i]
		}
		if at.IsZero() {
			continue
		}
		if last >= 0 && i == last+1 {
			r.store.hist.add(stageKey(sr.step.Key, svc.Stages[last].Name), at.Sub(sr.stageStarts[last]))
		}
		last = i
	}
}

// stepsPace is how the steps of a phase that ended in this attempt ran
// against what was expected of them (history, else estimate), with the
// guess counting as a small prior; 1 with nothing to go on.
func (r *Runner) stepsPace(pr *phaseRun) float64 {
	var actual, expected, whole float64
	for i, s := range pr.ph.AllSteps() {
		d, _ := r.store.hist.guess(s)
		whole += d.Seconds()
		ss := pr.state.Steps[i]
		if d > 0 && ss.Status == Done && !ss.Started.IsZero() && ss.Ended.After(ss.Started) {
			actual += ss.Ended.Sub(ss.Started).Seconds()
			expected += d.Seconds()
		}
	}
	if expected == 0 {
		return 1
	}
	prior := priorWeight * whole
	return (actual + prior) / (expected + prior)
}
