package runner

import (
	"math"
	"slices"
	"time"
)

// updateETA refreshes a running step's progress and ETA and publishes a
// Progress event when either moved enough to show.
func (sr *stepRun) updateETA(now time.Time) {
	r := sr.r
	pr := sr.pr
	ss := &pr.state.Steps[sr.step.Index]
	if pr.ph.Service != nil && len(pr.ph.Service.Stages) > 0 && pr.state.Status == Running {
		ss.ETA = sr.serviceETA(now)
	} else {
		// The steps before it in this phase say how the guesses hold up.
		pace := r.stepsPace(pr)
		scale := func(d time.Duration) time.Duration { return time.Duration(pace * float64(d)) }
		ss.ETA = stepETA(now, sr.started, &sr.prog, scale(r.store.hist.typical(sr.loadKey())), scale(sr.step.Estimate), 0)
		if pace != 1 && (ss.ETA.Source == SourceHistory || ss.ETA.Source == SourceEstimate) {
			ss.ETA.Source = SourceLearned
		}
	}
	if _, queued, startsAt := sr.on().queue(); queued {
		ss.ETA.Queued, ss.ETA.StartsAt = true, startsAt
		if !startsAt.IsZero() && startsAt.After(now) {
			ss.ETA.Remaining += startsAt.Sub(now)
		}
	}
	ss.Progress = ss.ETA.Fraction
	pr.state.ETA = r.phaseRemaining(pr, now)
	// Publish a stage change at once, progress at most every 250 ms when it
	// moved a percent, and once a second otherwise: every event redraws
	// the screen, and the idle budget is half a percent of a core.
	moved := math.Abs(ss.Progress-sr.shown.frac) >= 0.01
	due := now.Sub(sr.shown.at) >= time.Second || moved && now.Sub(sr.shown.at) >= 250*time.Millisecond
	// A job in Slurm's queue moves no bar, but its wait shortens.
	queued := ss.ETA.Queued && now.Sub(sr.shown.at) >= 5*time.Second
	if ss.Stage != sr.shown.stage || due && ss.Progress != sr.shown.frac || queued {
		sr.shown.at, sr.shown.frac, sr.shown.stage = now, ss.Progress, ss.Stage
		r.emit(Event{Kind: Progress, Phase: pr.ph.ID, Step: sr.step.Index})
	}
}

// phaseRemaining is the running step's ETA plus the steps after it, or the
// phase's own estimate when its steps have none.
func (r *Runner) phaseRemaining(pr *phaseRun, now time.Time) ETA {
	steps := pr.ph.AllSteps()
	cur := pr.state.Current
	e := ETA{Fraction: -1}
	if pr.state.Status == Running && cur < len(pr.state.Steps) {
		e = pr.state.Steps[cur].ETA
		e.Fraction = -1
		if ss := pr.state.Steps[cur]; !e.Known && ss.Status == Running && !ss.Started.IsZero() {
			// A sweep's unit with no history of its own: what its measured
			// neighbours say, less the time it has run.
			if d, src := r.guessStep(pr, cur); src == SourceNeighbours {
				e = ETA{Known: true, Remaining: max(0, d-now.Sub(ss.Started)), Source: src, Fraction: -1}
			}
		}
		cur++
	} else if pr.state.Status == Running {
		return e
	} else {
		cur = 0
		e.Known = true
	}
	if sw := pr.ph.Sweep; sw != nil && sw.Search != nil {
		return r.searchRemaining(pr, e, now)
	}
	pace := r.stepsPace(pr)
	expect := 0 // repeat: until: the runs a point is expected to take, as measured
	if sw := pr.ph.Sweep; sw != nil && sw.Repeats.Precision > 0 {
		expect = pr.expectedRuns()
	}
	for k := range steps[cur:] {
		if st := pr.state.Steps[cur+k].Status; st == Done || st == Skipped {
			continue // an edited grid's kept unit, a point skipped or cut
		}
		if u := steps[cur+k].Unit; expect > 0 && u != nil && u.Repeat > expect {
			continue // a run its point is expected not to need
		}
		d, src := r.guessStep(pr, cur+k)
		if src == SourceNeighbours {
			e.Remaining += d // measured in this attempt: the pace is in it already
			if e.Source == "" {
				e.Source = src
			}
			continue
		}
		if d == 0 {
			e.Partial = true
			continue
		}
		e.Remaining += time.Duration(pace * float64(d))
		if e.Source == "" {
			e.Source = src
			if pace != 1 {
				e.Source = SourceLearned
			}
		}
	}
	if e.Partial && pr.ph.Estimate > 0 {
		rem := pr.ph.Estimate
		if !pr.state.Started.IsZero() && pr.state.Status == Running {
			rem -= now.Sub(pr.state.Started)
		}
		if rem > e.Remaining {
			e = ETA{Source: SourceEstimate, Known: true, Remaining: max(rem, 0), Fraction: -1}
			if rem < 0 {
				e.Known, e.Over = false, -rem
			}
		}
	}
	if !e.Known && !e.Partial && e.Over == 0 && e.Source == "" {
		e.Partial = true
	}
	if total := r.phaseTotal(pr); total > 0 && pr.state.Status == Running && e.Known {
		e.Fraction = min(1, max(0, 1-float64(e.Remaining)/float64(total)))
	}
	return e
}

func (r *Runner) phaseTotal(pr *phaseRun) time.Duration {
	var t time.Duration
	for i := range pr.ph.AllSteps() {
		d, _ := r.guessStep(pr, i)
		t += d
	}
	if t == 0 {
		t = pr.ph.Estimate
	}
	return t
}

func (r *Runner) campaignETA(now time.Time) ETA {
	sims := make([]simPhase, 0, len(r.phases))
	for _, pr := range r.phases {
		s := simPhase{id: pr.ph.ID, needs: r.plan.UsedPhases(pr.ph.ID), after: pr.ph.After, gpus: pr.ph.GPUs, service: pr.ph.Service != nil, slurm: pr.ph.Slurm != nil}
		switch st := pr.state.Status; {
		case st.Finished() || st == Ready:
			s.finished = true
		case st == Running:
			s.running = true
			s.remaining, s.known = pr.state.ETA.Remaining, pr.state.ETA.Known && !pr.state.ETA.Partial
		default:
			e := r.phaseRemaining(pr, now)
			s.remaining, s.known = e.Remaining, e.Known && !e.Partial
			s.waiting = pr.ph.Manual && !pr.gateOpen && !r.approved(pr.ph.ID)
		}
		sims = append(sims, s)
	}
	return campaignETA(sims)
}

func (r *Runner) snapshot() *State {
	now := r.opts.Now()
	s := &State{Name: r.plan.Name, Started: r.times.started, Ended: r.times.ended, Now: now, Paused: r.q.paused, PauseWhy: r.q.pauseWhy,
		Frozen: r.q.frozen, Finished: r.q.finished, DiskFree: r.disk.free}
	s.Warnings = slices.Clone(r.warnings)
	s.ReportHeld = r.reportHeld.shown
	s.Notes = slices.Clone(r.notes)
	s.Phases = make([]PhaseState, len(r.phases))
	for i, pr := range r.phases {
		ps := pr.state
		ps.Steps = slices.Clone(pr.state.Steps)
		ps.Artifacts = slices.Clone(pr.state.Artifacts)
		ps.Unclaimed = slices.Clone(pr.state.Unclaimed)
		if ps.Slurm != nil {
			sj := *ps.Slurm // the loop goes on changing its own
			ps.Slurm = &sj
		}
		if ps.Status == Ready && ps.Kept == "" && (pr.cur == nil || pr.cur.proc.stopFor == "") && !r.serviceNeeded(pr) {
			// Read back from the journal (no runner's keep decided it):
			// kept by the same rule, its keep: limit not known here.
			if ids := KeptFor(r.plan, pr.ph, r.stateOf); len(ids) > 0 {
				ps.Kept = keptWords(ids, time.Time{})
			}
		}
		ps.WasFrozen = pr.frozenEver
		ps.GateOpen = pr.gateOpen
		if ps.Status != Running {
			ps.ETA = r.phaseRemaining(pr, now)
		}
		if ps.Status == Pending || ps.Status == Waiting {
			ps.WaitReason = r.waitReason(pr)
		}
		s.Phases[i] = ps
		if pr.cur != nil && !pr.cur.proc.exitedSeen && pr.cur.proc.sup > 0 {
			s.Sessions = append(s.Sessions, pr.cur.proc.sup)
		}
		// A step's group leader is the campaign's even once the step has
		// ended: a GPU listing that lags names it after its exit, when
		// /proc can no longer say which session it was in.
		// A Slurm job's group counts only when the job runs on this
		// machine: another node's pids mean nothing here.
		for _, ss := range ps.Steps {
			if ss.PGID > 0 && (pr.ph.Slurm == nil || ps.Slurm.OnThisMachine()) {
				s.Sessions = append(s.Sessions, ss.PGID)
			}
		}
	}
	// What steps kept running (leave_running) is the campaign's: its own
	// session (a setsid'd daemon) is not a step's.
	for _, k := range r.kept {
		s.Sessions = append(s.Sessions, k.PID)
	}
	s.ETA = r.campaignETA(now)
	return s
}
