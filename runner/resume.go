package runner

import (
	"cmp"
	"fmt"
	"os"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"

	"github.com/greenlight-run/greenlight/runner/supervise"
)

// phaseHistory is what the journal says of one phase's latest attempt.
type phaseHistory struct {
	attempt   int
	hash      string
	unitHash  string
	started   time.Time
	open      bool
	end       *record
	stepStart map[int]record
	stepEnd   map[int]record
	facts     map[int]record // steps' facts (facts.go), or a stamp alone
	ready     bool
	gate      bool
	skips     []record // points skipped by you since the phase's last retry
	hashes    []string // the definitions its attempts ran, in order
	readopted bool     // a runner re-adopted a step of this attempt
	letGo     bool     // its failure was let go: it stays failed (keep.go)
	// retryPoint: the points a retry --point said to run again, since
	// its last start ("" for a whole retry, or none).
	retryPoint string
	// ranTotal is the running time of its ended runs; ranBefore, of those
	// before its latest start (PhaseState.Ran), in ranRuns runs.
	ranTotal, ranBefore time.Duration
	runsTotal, ranRuns  int
}

// editedSince says an attempt of the phase ran another definition than
// ph's: the record says the definition changed since an earlier run.
func (h *phaseHistory) editedSince(ph *campaign.Phase) bool {
	for _, x := range h.hashes {
		if x != "" && x != ph.Hash && x != ph.LegacyHash {
			return true
		}
	}
	return false
}

// resume rebuilds the phases' state from the journal and the step folders:
// finished phases are kept unless their definition changed, live steps and
// services are re-adopted, and a step whose supervisor vanished (a reboot)
// runs again.
// journalHistory reads the journal's records into what each phase's
// latest attempt did, and the campaign's first start and last end.
func journalHistory(recs []record) (map[string]*phaseHistory, campaignTimes) {
	var times campaignTimes
	hist := map[string]*phaseHistory{}
	for _, rec := range recs {
		h := hist[rec.Phase]
		if h == nil && rec.Phase != "" {
			h = &phaseHistory{stepStart: map[int]record{}, stepEnd: map[int]record{}, facts: map[int]record{}}
			hist[rec.Phase] = h
		}
		switch rec.Kind {
		case recCampaign:
			if times.started.IsZero() {
				times.started = rec.T
			}
			times.lastStart = rec.T
		case recFinished:
			times.prevEnded = rec.T
		case recPhaseStart:
			*h = phaseHistory{attempt: rec.Attempt, hash: rec.Hash, unitHash: rec.UnitHash, started: rec.T, open: true, gate: h.gate, skips: h.skips,
				stepStart: map[int]record{}, stepEnd: map[int]record{}, facts: map[int]record{}, hashes: append(h.hashes, rec.Hash),
				readopted: h.readopted && rec.Attempt == h.attempt, // a stopped attempt continued is the same attempt
				ranTotal:  h.ranTotal, runsTotal: h.runsTotal, ranBefore: h.ranTotal, ranRuns: h.runsTotal}
		case recPhaseEnd:
			rc := rec
			if h.open && !h.started.IsZero() && !rec.Unstarted && rec.T.After(h.started) {
				h.ranTotal += rec.T.Sub(h.started)
				h.runsTotal++
			}
			h.end, h.open = &rc, false
			if rec.Unstarted {
				h.started, h.stepStart, h.stepEnd = time.Time{}, map[int]record{}, map[int]record{}
			}
			h.attempt = max(h.attempt, rec.Attempt)
		case recStepStart:
			h.stepStart[rec.Step] = rec
		case recStepPID:
			if st, ok := h.stepStart[rec.Step]; ok && st.Attempt == rec.Attempt {
				st.PID = rec.PID
				h.stepStart[rec.Step] = st
			}
		case recStepJob:
			if st, ok := h.stepStart[rec.Step]; ok && st.Attempt == rec.Attempt {
				st.Job = rec.Job
				h.stepStart[rec.Step] = st
			}
		case recStepEnd:
			h.stepEnd[rec.Step] = rec
		case recFacts, recStamp:
			h.facts[rec.Step] = rec
		case recReady:
			h.ready = true
		case recGate:
			h.gate = true
		case recPointSkip:
			h.skips = append(h.skips, rec)
		case recRetry:
			h.skips = nil // a retry runs every point again
			h.letGo, h.retryPoint = false, rec.Reason
		case recLetGo:
			h.letGo = true
		case recAdopted:
			h.readopted = true
		}
	}
	return hist, times
}

func (r *Runner) resume(recs []record) {
	hist, times := journalHistory(recs)
	r.claims = claimsOf(recs)
	for _, rec := range recs {
		switch rec.Kind {
		case recKept:
			r.kept = append(r.kept, rec.Kept...)
		case recKeptStopped:
			r.kept = nil // a campaign's end stopped them
		}
	}
	if r.times.started.IsZero() {
		r.times.started = times.started
	}
	r.times.prevEnded = times.prevEnded
	r.mode.quiet = true
	defer func() { r.mode.quiet = false }()
	for _, ph := range r.plan.Phases {
		pr := newPhaseRun(ph, r.dirs.Artifacts()+"")
		r.phases = append(r.phases, pr)
		h := hist[ph.ID]
		if h == nil {
			continue
		}
		pr.state.Attempt = h.attempt
		// Its runs so far, all ended: a phase that runs again adds this
		// run to them (a phase restored running or ended sets its own).
		pr.state.Ran, pr.state.RanRuns = h.ranTotal, h.runsTotal
		changed := h.hash != "" && h.hash != ph.Hash && h.hash != ph.LegacyHash
		pr.state.Readopted = h.readopted
		pr.state.Changed = h.editedSince(ph)
		// A greenlight was given for the work as it was: an edited phase
		// asks again.
		pr.gateOpen = h.gate && !changed
		switch {
		case h.open && changed:
			r.restoreSteps(pr, h, len(ph.AllSteps()))
			if pr.cur != nil && !pr.cur.proc.exitedSeen {
				pr.cur.stop(r.opts.Grace)
			}
			pr.reset()
			pr.state.Changed = true
			if !r.keepUnits(pr, h, true) {
				r.warnings = append(r.warnings, fmt.Sprintf("%s changed in the campaign file while it ran: stopped the old run, it will run again", ph.Label()))
			}
		case h.open:
			r.adopt(pr, h)
		case h.end != nil && !changed && (h.end.Status == Done || h.end.Status == Skipped):
			r.restoreEnded(pr, h)
		case h.end != nil && !changed && h.end.Status == Stopped && r.keepUnits(pr, h, false):
			// Stopped part-way: run continues its attempt, the units it
			// finished kept.
		case h.end != nil && changed && r.keepUnits(pr, h, true):
			// The grid was edited: the units it had done are kept.
		case h.end != nil && !changed && h.retryPoint != "":
			// Retried by point, not yet started: the units it keeps are
			// kept as the live runner kept them.
			if again, err := pointsOf(ph, h.retryPoint); err == nil {
				r.carryBut(pr, h, again)
			}
		case h.end != nil && !changed && h.end.Status == Failed && h.letGo:
			r.restoreEnded(pr, h) // let go: it stays failed, not run again
			pr.state.LetGo = true
		case h.end != nil && changed:
			pr.state.Changed = true
			r.warnings = append(r.warnings, fmt.Sprintf("%s changed since it last ran: it runs again", ph.Label()))
		case h.end != nil && h.attempt > 0:
			r.warnings = append(r.warnings, fmt.Sprintf("%s %s last time (%s): it runs again", ph.Label(), h.end.Status, h.end.Reason))
		}
		applySkips(pr, h)
		pr.settle()
	}
}

// applySkips marks the points skipped by you since the phase was last
// retried: a skip holds across stops, restarts and runs again (it names
// the point, not an attempt); only retry, a new start from scratch, lets
// them run. Units already done are left as they are.
func applySkips(pr *phaseRun, h *phaseHistory) {
	for _, rec := range h.skips {
		if units, err := pointsOf(pr.ph, rec.Reason); err == nil {
			markSkipped(pr, units, whyByYou+rec.Reason+")", rec.T)
		}
	}
}

// restoreSteps reads back the steps of an attempt from their folders, up
// to (not including) step upto; it leaves pr.cur on the last one started
// (a search's units run out of their order).
func (r *Runner) restoreSteps(pr *phaseRun, h *phaseHistory, upto int) {
	var last time.Time
	for idx := 0; idx < upto && idx < len(pr.ph.AllSteps()); idx++ {
		start, ok := h.stepStart[idx]
		if !ok {
			continue // not run: a sweep's point skipped or cut by until:
		}
		end, ended := h.stepEnd[idx]
		var endp *record
		if ended && end.Attempt == start.Attempt {
			// An end journaled for an earlier try is not this one's: a try
			// started again (its supervisor died) before the runner died is
			// re-adopted like any step.
			endp = &end
		}
		sr := r.restoreStep(pr, idx, start, endp)
		pr.state.Steps[idx].Facts = h.factsOf(idx, start.Attempt)
		if pr.cur == nil || !start.T.Before(last) {
			pr.cur, last = sr, start.T
			pr.state.Current = idx
		}
	}
}

// restoreStep reads back one step, run as start says (into the phase's
// step idx, which is where it ran unless a grid was edited), and ended as
// end says (nil: not journaled as ended).
func (r *Runner) restoreStep(pr *phaseRun, idx int, start record, end *record) *stepRun {
	steps := pr.ph.AllSteps()
	sr := &stepRun{r: r, pr: pr, step: steps[idx], try: start.Attempt, dir: start.Dir, files: filesIn(start.Dir), stage: -1, adopted: true}
	ss := &pr.state.Steps[idx]
	*ss = StepState{Index: idx, Name: steps[idx].Label(), Point: pointOf(pr.ph, steps[idx]), Status: Running, Attempt: start.Attempt, Started: start.T, Log: sr.files.log, Progress: -1}
	sr.started, sr.proc.sup = start.T, start.PID
	ss.Job, ss.Counters = start.Job, start.Counters
	now := r.opts.Now()
	sr.stagesKept, sr.replaying = readStagesKept(start.Dir), true
	sr.readLog(now, true)
	sr.drainResults(now)
	sr.readSummary()
	st, err := supervise.ReadStatus(sr.files.status)
	if err != nil {
		st = nil
	}
	sr.on().restore(start, st)
	if st != nil {
		ss.PGID = st.PGID
		if st.CommandEnded() {
			ss.Ended, ss.ExitCode = st.Ended, st.ExitCode
			takeEnd(ss, st)
		}
	}
	if end != nil {
		ss.Status, ss.Reason, ss.Skip = end.Status, end.Reason, end.skipBy()
		sr.proc.exitedSeen = true
	}
	if end != nil || st != nil && st.CommandEnded() {
		// Its end was seen: the rows held for pairing (vllm-bench blocks
		// and --save-result files) are its rows, as they were at its end.
		// Its claims are the journal's; a step that ended while no runner
		// ran claims now what its run wrote.
		if len(r.claims.byStep[sr.dir]) == 0 && !ss.Ended.IsZero() {
			sr.claim(earlier(now, ss.Ended.Add(sr.quietFor()+claimSlack)))
		}
		sr.readSavedResults(now)
		if sr.step.ResultsFormat == campaign.FormatNVBandwidth && end != nil {
			sr.readNVBandwidth(cmp.Or(ss.Ended, now), false) // said when it ended; its rows of its end
		}
	}
	return sr
}

// keepUnits takes back, for a sweep, every unit done in its last attempt
// that the grid still has: they are the phase's steps again, done, and
// only the others run. edited: the grid was edited since (its values,
// repeats or order; one unit's work the same), and the units go into a
// new attempt; otherwise the phase was stopped part-way and the same
// attempt continues. It reports whether it kept the phase so.
// factsOf are the facts journaled for try attempt of the step at idx;
// nil when none were (an end without a monitor, or another try's).
func (h *phaseHistory) factsOf(idx, attempt int) *StepFacts {
	if f, ok := h.facts[idx]; ok && f.Attempt == attempt {
		return f.factsOf()
	}
	return nil
}

// carry keeps the step at old of an earlier attempt (h) as step idx of
// the phase's next attempt, as it ended: read back from its folder, its
// facts, and its start record, which startPhase journals into the new
// attempt (the unit it ran is the same, whatever its index now).
func (r *Runner) carry(pr *phaseRun, h *phaseHistory, old, idx int) {
	start, end := h.stepStart[old], h.stepEnd[old]
	r.restoreStep(pr, idx, start, &end)
	pr.state.Steps[idx].Index = idx
	pr.state.Steps[idx].Facts = h.factsOf(old, start.Attempt)
	start.Step = idx
	if u := pr.ph.AllSteps()[idx].Unit; u != nil && pr.ph.Sweep != nil {
		start.Unit = pr.ph.Sweep.Identity(*u)
	}
	pr.carried[idx] = start
}

func (r *Runner) keepUnits(pr *phaseRun, h *phaseHistory, edited bool) bool {
	sw := pr.ph.Sweep
	if sw == nil || pr.ph.UnitHash == "" || h.unitHash != pr.ph.UnitHash {
		return false
	}
	done := map[string]int{} // identity -> the old step index
	for idx, start := range h.stepStart {
		if end, ok := h.stepEnd[idx]; ok && end.Status == Done && start.Unit != "" {
			done[start.Unit] = idx
		}
	}
	if !edited && len(done) == 0 {
		return false // stopped before a unit ended: it starts over, as a new attempt
	}
	kept := 0
	pr.carried = map[int]record{}
	for idx, st := range pr.ph.AllSteps() {
		if st.Unit == nil {
			continue
		}
		old, ok := done[sw.Identity(*st.Unit)]
		if !ok {
			continue
		}
		r.carry(pr, h, old, idx)
		kept++
	}
	pr.cur = nil
	n := len(pr.ph.AllSteps())
	if sw := pr.ph.Sweep; sw != nil && sw.Search != nil {
		// A search's grid is its plan, not its work: say its runs.
		pr.state.Changed = pr.state.Changed || edited
		pr.continues = !edited
		if !edited {
			pr.state.Started = h.started
		}
		pr.state.Ran, pr.state.RanRuns = h.ranTotal, h.runsTotal
		r.infos = append(r.infos, fmt.Sprintf("%s: its %d runs done are kept, and the search goes on from them (greenlight retry %s starts it over)",
			pr.ph.Label(), kept, pr.ph.ID))
		return true
	}
	if edited {
		pr.state.Ran, pr.state.RanRuns = h.ranTotal, h.runsTotal // the units kept were run then
		pr.state.Changed = true
		r.warnings = append(r.warnings, fmt.Sprintf("%s: its grid changed since it last ran: %d of its %d units were done and are kept; the other %d run",
			pr.ph.Label(), kept, n, n-kept))
		return true
	}
	pr.continues = true
	pr.state.Started = h.started                             // the same attempt: a stop before it starts again keeps its units
	pr.state.Ran, pr.state.RanRuns = h.ranTotal, h.runsTotal // its runs so far, all ended
	r.infos = append(r.infos, fmt.Sprintf("%s: %d of %d units were done and are kept; the other %d run (greenlight retry %s runs them all again)",
		pr.ph.Label(), kept, n, n-kept, pr.ph.ID))
	return true
}

// adopt takes over a phase that was running when the last monitor ended.
func (r *Runner) adopt(pr *phaseRun, h *phaseHistory) {
	r.restoreSteps(pr, h, len(pr.ph.AllSteps()))
	pr.state.Status, pr.state.Started = Running, h.started
	pr.state.Ran, pr.state.RanRuns = h.ranBefore, h.ranRuns
	sr := pr.cur
	if sr == nil {
		pr.state.Current = 0
		return // started, but no step began: the loop starts step 1
	}
	if sr.proc.exitedSeen {
		// Its last step ended and was journaled, the next did not start.
		ss := pr.state.Steps[sr.step.Index]
		pr.cur = nil
		if ss.Status == Done {
			if next := pr.nextStep(sr.step.Index + 1); next < len(pr.ph.AllSteps()) {
				pr.state.Current = next
			} else {
				r.endPhase(pr, Done, "")
			}
		} else {
			r.endPhase(pr, ss.Status, ss.Reason)
		}
		return
	}
	st, err := supervise.ReadStatus(sr.files.status)
	alive, adopted := sr.on().alive(pr.ph.Service != nil)
	r.times.ranAny = true // a step of this run is taken over: not a finished campaign
	switch {
	case err == nil && st.CommandEnded():
		// It ended while nobody watched (or its supervisor died after its
		// command ended: its outcome is known); follow() records how.
		r.readopted(sr)
	case alive:
		r.readopted(sr)
		if !h.ready {
			sr.watchAdoptedLoad() // killed mid-load: its Load row is still to be written
		}
		sr.out.logOff, sr.out.logRest = 0, nil // read again for readiness and stages
		pr.state.Steps[sr.step.Index].Status = Running
		if pr.ph.Service != nil {
			sr.readyLog = false
		}
		r.infos = append(r.infos, pr.ph.Label()+": "+adopted)
		sr.readLog(r.opts.Now(), true)
		sr.replaying = false // what it prints from now on is seen as it comes
		sr.prog.rebase(r.opts.Now())
		// Read back at once, the stages' lines all carry this instant: a
		// stage the last runner did not keep (an older runner's folder)
		// says nothing but the time from the start to the stage it is in.
		for i := 1; i < len(sr.stageStarts); i++ {
			if _, kept := sr.stagesKept[i]; !kept && i != sr.stage {
				sr.stageStarts[i] = time.Time{}
			}
		}
	default:
		settle, why := sr.where.gone()
		if settle {
			r.warnings = append(r.warnings, pr.ph.Label()+": "+why)
			r.readopted(sr)
			return
		}
		// One decision, one path, as when this runner sees a supervisor
		// die (runAgainLost): the try is journaled ended with its outcome
		// unknown, what its tree left is stopped, and the unit alone runs
		// again as the next try, started by the loop. A try with no status
		// file never began (the runner was killed as it started it): it
		// did not end, and the next try is its start.
		if _, err := os.Stat(sr.files.status); err != nil {
			// Its supervisor may be on its way (a loaded machine): it
			// must not start the command beside the next try.
			supervise.StopSupervisorOf(sr.files.status)
			msg := fmt.Sprintf("%s: step %d's try %d never began (its runner stopped as it started it): it starts as try %d", pr.ph.Label(), sr.step.Index+1, sr.try, sr.try+1)
			if left := sr.stopLeft(); left != "" {
				r.warnings = append(r.warnings, msg+left)
			} else {
				r.infos = append(r.infos, msg)
			}
		} else {
			r.warnings = append(r.warnings, sr.endLost(why))
		}
		pr.state.Steps[sr.step.Index].Status = Pending
		pr.state.Steps[sr.step.Index].Results = nil
		pr.cur = nil
		pr.state.Current = sr.step.Index
	}
}

// readopted takes sr over as this runner's, journaled: the record read
// back says its phase was re-adopted as the window did.
func (r *Runner) readopted(sr *stepRun) {
	sr.adopted = true
	sr.pr.state.Readopted = true
	r.journal(record{Kind: recAdopted, Phase: sr.pr.ph.ID, Step: sr.step.Index, Attempt: sr.pr.state.Attempt})
}

// restoreEnded restores a phase whose attempt ended as the journal says.
func (r *Runner) restoreEnded(pr *phaseRun, h *phaseHistory) {
	r.restoreSteps(pr, h, len(pr.ph.AllSteps()))
	pr.state.Status, pr.state.Reason = h.end.Status, h.end.Reason
	pr.state.Started, pr.state.Ended = h.started, h.end.T
	pr.state.Ran, pr.state.RanRuns = h.ranBefore, h.ranRuns
	if h.end.Status == Done {
		pr.state.Missing = missingExpects(pr.ph, pr.state.Steps)
		pr.state.ExpectFailed += len(pr.state.Missing)
	}
	pr.state.Artifacts = r.phaseArtifacts(pr, r.opts.Now())
	pr.state.Unclaimed = r.unclaimed(pr)
	if h.end.Slurm != nil {
		pr.state.Slurm = h.end.Slurm // Slurm's last word, not the bare id the step record gives
	}
	pr.cur = nil
}
