package runner

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/results"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// phaseRun is the loop's own record of a phase.
type phaseRun struct {
	ph             *campaign.Phase
	state          PhaseState
	cur            *stepRun // running step, or the service's run
	gateOpen       bool
	gateAnnounced  bool
	frozenEver     bool
	frozenAt       time.Time     // when the current freeze began; zero when thawed
	frozenFor      time.Duration // frozen time of this attempt, before frozenAt
	artDir         string
	artScanPending bool
	savedRead      map[string]bool        // --save-result files already read as rows
	noisySaid      map[string]bool        // a sweep's points said noisy, by point and metric
	metricsSaid    bool                   // its metrics: names were held against its first rows (slips.go)
	byPoint        map[int][]results.Unit // a sweep's units by point (pointUnits)
	// carried are the units of an edited grid done in an earlier attempt,
	// by step index, with the record of their start (their folder): they
	// are journaled into the next attempt as done, not run again.
	carried map[int]record
	// continues: the next start goes on with the attempt a stop cut (its
	// carried units done) instead of beginning a new one.
	continues bool
	warm      *prewarmRun // its service's model read in before it starts (prewarm.go)
	// keptSince: a service kept up for failed phases alone, since when
	// (keep.go); zero when it is not kept.
	keptSince time.Time
}

func newPhaseRun(ph *campaign.Phase, artRoot string) *phaseRun {
	pr := &phaseRun{ph: ph, artDir: artRoot + string(os.PathSeparator) + ph.ID}
	pr.state = PhaseState{ID: ph.ID, Title: ph.Label(), Manual: ph.Manual, GPUs: ph.GPUs}
	pr.reset()
	pr.state.Attempt = 0
	return pr
}

// reset makes the phase pending again, keeping its attempt count.
func (pr *phaseRun) reset() {
	att := pr.state.Attempt
	// The runs it had keep their time: the phase's duration is all of them.
	ran, runs := pr.state.Ran, pr.state.RanRuns
	if !pr.state.Started.IsZero() && pr.state.Ended.After(pr.state.Started) {
		ran, runs = ran+pr.state.Ended.Sub(pr.state.Started), runs+1
	}
	pr.state = PhaseState{ID: pr.ph.ID, Title: pr.ph.Label(), Manual: pr.ph.Manual, GPUs: pr.ph.GPUs,
		Status: Pending, Attempt: att, Changed: pr.state.Changed, Ran: ran, RanRuns: runs}
	for _, s := range pr.ph.AllSteps() {
		pr.state.Steps = append(pr.state.Steps, StepState{Index: s.Index, Name: s.Label(), Point: pointOf(pr.ph, s), Status: Pending, Progress: -1})
	}
	pr.cur = nil
	pr.gateOpen = false
	pr.gateAnnounced = false
	pr.carried, pr.continues = nil, false
	pr.warm = nil
	pr.keptSince = time.Time{}
}

// schedule starts every phase that may start now.
func (r *Runner) schedule(now time.Time) {
	if r.q.stopping {
		return
	}
	r.checkDisk(now, true) // nothing starts on a disk past its limit
	for _, pr := range r.phases {
		if pr.state.Status != Ready || pr.cur == nil || pr.cur.proc.exitedSeen || pr.cur.proc.stopFor != "" {
			continue
		}
		if r.serviceNeeded(pr) {
			pr.unkeep()
		} else if !r.keep(pr, now) {
			pr.cur.proc.stopFor = Done
			pr.cur.stop(r.opts.Grace)
			r.emit(Event{Kind: Warning, Phase: pr.ph.ID, Message: fmt.Sprintf("no phase needs %s any more: stopping it", pr.ph.Label())})
		}
	}
	r.restartServices()
	for _, pr := range r.phases {
		if pr.state.Status != Pending && pr.state.Status != Waiting {
			continue
		}
		if why := r.skippedWith(pr); why != "" {
			r.endPhase(pr, Skipped, why)
			continue
		}
		if why := r.blockedBy(pr); why != "" {
			r.endPhase(pr, Blocked, why)
			continue
		}
		if !r.needsMet(pr) || r.q.paused || r.prewarming(pr, now) || r.conflicts(pr) {
			continue
		}
		if h := r.leftover(pr); h != nil {
			r.stopLeftover(h, pr)
			continue
		}
		if pr.ph.Manual && !pr.gateOpen && !r.approved(pr.ph.ID) {
			if !pr.gateAnnounced {
				pr.gateAnnounced = true
				pr.state.Status = Waiting
				r.emit(Event{Kind: GateWaiting, Phase: pr.ph.ID, Message: fmt.Sprintf("%s waits for your greenlight: press g in greenlight's window, or run greenlight again with --approve %s", pr.ph.Label(), pr.ph.ID)})
			}
			continue
		}
		r.startPhase(pr, now)
	}
}

// restartServices makes a service that ended (stopped with the campaign,
// or because no phase needed it then) pending again when a phase that
// uses it is still to run: a campaign stopped and run again, or a phase
// retried after its service went down.
func (r *Runner) restartServices() {
	for _, pr := range r.phases {
		if pr.ph.Service == nil || (pr.state.Status != Done && pr.state.Status != Stopped) || !r.serviceNeeded(pr) {
			continue
		}
		var by []string
		for _, o := range r.phases {
			if r.plan.Uses(o.ph.ID, pr.ph.ID) && (o.state.Status == Pending || o.state.Status == Waiting) {
				by = append(by, o.ph.ID)
			}
		}
		pr.reset()
		r.emit(Event{Kind: Warning, Phase: pr.ph.ID, Message: fmt.Sprintf("%s is needed again by %s: starting it again", pr.ph.Label(), strings.Join(by, ", "))})
	}
}

func (r *Runner) approved(id string) bool {
	for _, a := range r.opts.Approve {
		if a == id || a == "all" {
			return true
		}
	}
	return false
}

func (r *Runner) blockedBy(pr *phaseRun) string {
	for _, n := range pr.ph.Needs {
		o, _ := r.find(n)
		switch o.state.Status {
		case Failed, Blocked, Stopped:
			return fmt.Sprintf("needs %s, which %s", n, o.state.Status)
		case Skipped:
			if o.ph.Service != nil {
				return fmt.Sprintf("needs the service %s, which was skipped", n)
			}
		}
	}
	return ""
}

// skippedWith says why a phase run under a swept service's point is
// skipped with it: you skipped that point's service (one server setting
// of the grid), so its benchmarks are skipped, not failed. "" otherwise.
func (r *Runner) skippedWith(pr *phaseRun) string {
	pt := pr.ph.Point
	if pt == nil {
		return ""
	}
	for _, n := range pr.ph.Needs {
		o, _ := r.find(n)
		if o.state.Status == Skipped && o.ph.Service != nil && o.ph.Point != nil && o.ph.Point.Service == pt.Service && o.ph.Point.Key == pt.Key {
			return fmt.Sprintf("its service point %s (%s) was skipped", n, pt.Key)
		}
	}
	return ""
}

func (r *Runner) needsMet(pr *phaseRun) bool {
	for _, n := range pr.ph.Needs {
		o, _ := r.find(n)
		if s := o.state.Status; s != Done && s != Ready && s != Skipped {
			return false
		}
		if o.ph.Service != nil && o.state.Status != Ready {
			return false // a service must be up, not merely have been up
		}
	}
	return r.afterEnded(pr) == ""
}

// afterEnded is the first phase pr comes after (a swept service's
// previous point) that has not ended, or "". Two points of one swept
// service never run at once, whatever GPUs they hold: a point started
// again (a phase under it retried) waits for the one that is up, as the
// next point waits for it.
func (r *Runner) afterEnded(pr *phaseRun) string {
	for _, n := range pr.ph.After {
		if o, _ := r.find(n); o != nil && !o.state.Status.Finished() {
			return n
		}
	}
	if pt := pr.ph.Point; pt != nil && pr.ph.Service != nil {
		for _, o := range r.phases {
			if o != pr && o.ph.Service != nil && o.ph.Point != nil && o.ph.Point.Service == pt.Service && o.cur != nil && !o.cur.proc.exitedSeen {
				return o.ph.ID
			}
		}
	}
	return ""
}

// ranFor is how long the phase's attempt has been able to run: its time
// frozen does not count against its timeout.
func (pr *phaseRun) ranFor(now time.Time) time.Duration {
	d := now.Sub(pr.state.Started) - pr.frozenFor
	if !pr.frozenAt.IsZero() {
		d -= now.Sub(pr.frozenAt)
	}
	return d
}

// conflicts reports whether a running phase holds GPUs this one needs. A
// ready service holds its GPUs only against phases that do not use it.
func (r *Runner) conflicts(pr *phaseRun) bool { return r.holder(pr) != nil }

// holder is a running phase that holds GPUs this one needs, or nil.
func (r *Runner) holder(pr *phaseRun) *phaseRun {
	for _, o := range r.phases {
		if o == pr || o.cur == nil || o.cur.proc.exitedSeen {
			continue
		}
		if o.state.Status == Ready && r.plan.Uses(pr.ph.ID, o.ph.ID) {
			continue
		}
		if o.state.Status == Running || o.state.Status == Ready {
			if campaign.Contend(o.ph, pr.ph) {
				return o
			}
		}
	}
	return nil
}

func (r *Runner) serviceNeeded(svc *phaseRun) bool {
	for _, o := range r.phases {
		if !r.plan.Uses(o.ph.ID, svc.ph.ID) {
			continue
		}
		switch o.state.Status {
		case Pending, Waiting, Running:
			return true
		case Ready: // a service up on top of this one
			return true
		}
	}
	return false
}

func (r *Runner) startPhase(pr *phaseRun, now time.Time) {
	r.times.ranAny = true
	pr.state.Status = Running
	if !pr.continues || pr.state.Attempt == 0 {
		pr.state.Attempt++
		pr.state.Readopted = false // a new attempt: nothing of it was re-adopted
	}
	pr.continues = false
	if !pr.state.Started.IsZero() && pr.state.Ended.After(pr.state.Started) {
		// A run before this one (a stop, a retry): its time is the phase's.
		pr.state.Ran += pr.state.Ended.Sub(pr.state.Started)
		pr.state.RanRuns++
	}
	pr.state.Started = now
	pr.state.Ended = time.Time{}
	pr.frozenFor, pr.frozenAt = 0, time.Time{}
	pr.state.Reason = ""
	r.journal(record{T: now, Kind: recPhaseStart, Phase: pr.ph.ID, Attempt: pr.state.Attempt, Hash: pr.ph.Hash, UnitHash: pr.ph.UnitHash})
	r.emit(Event{Kind: PhaseStarted, Phase: pr.ph.ID, Message: fmt.Sprintf("%s started", pr.ph.Label())})
	for idx := 0; idx < len(pr.state.Steps); idx++ { // an edited grid's kept units, in this attempt's journal
		ss := pr.state.Steps[idx]
		if start, ok := pr.carried[idx]; ok && (ss.Status == Done || ss.Status == Failed) {
			r.journal(record{T: start.T, Kind: recStepStart, Phase: pr.ph.ID, Step: idx, Attempt: start.Attempt, Dir: start.Dir, Unit: start.Unit, Counters: start.Counters})
			if f := ss.Facts; f != nil {
				r.journal(record{Kind: recFacts, Phase: pr.ph.ID, Step: idx, Attempt: start.Attempt, Facts: f})
			}
			r.journal(record{Kind: recStepEnd, Phase: pr.ph.ID, Step: idx, Attempt: start.Attempt, Status: ss.Status, Skip: ss.Skip, ExitCode: ss.ExitCode, Reason: ss.Reason})
		}
	}
	pr.carried = nil
	idx := pr.nextStep(0)
	if idx >= len(pr.ph.AllSteps()) {
		r.endGrid(pr)
		return
	}
	r.startStep(pr, idx, 1, now)
}

func (r *Runner) startStep(pr *phaseRun, idx, try int, now time.Time) {
	step := pr.ph.AllSteps()[idx]
	if why := r.serviceDied(pr); why != "" {
		// Never a step against no server: the phase fails with the
		// service's own last words.
		r.endPhase(pr, Failed, fmt.Sprintf("step %d (%s) not started: %s", idx+1, step.Label(), why))
		return
	}
	pr.state.Current = idx
	// Journaled (fsynced) before the step starts: an fsync while a step
	// begins writing can make the filesystem flush its output and slow it.
	dir, err := newStepDir(r.dirs, pr, step, try)
	var sr *stepRun
	var counters *Counters
	if err == nil {
		unit := ""
		if step.Unit != nil && pr.ph.Sweep != nil {
			unit = pr.ph.Sweep.Identity(*step.Unit)
		}
		// Its start is the instant the state holds: the record rebuilt from
		// the journal reads the same time the live one wrote.
		// Its GPUs' energy counters, read as late as can be before it
		// starts: its energy is their difference at its end.
		counters = r.meter()
		r.journal(record{T: now, Kind: recStepStart, Phase: pr.ph.ID, Step: idx, Attempt: try, Dir: dir, Unit: unit, Counters: counters})
		sr, err = launchStep(r, pr, step, try, dir, now)
	}
	ss := &pr.state.Steps[idx]
	*ss = StepState{Index: idx, Name: step.Label(), Point: pointOf(pr.ph, step), Status: Running, Attempt: try, Started: now, Progress: -1, Counters: counters}
	if err != nil {
		ss.Status, ss.Reason, ss.Ended = Failed, err.Error(), now
		r.endPhase(pr, Failed, fmt.Sprintf("step %d (%s) could not start: %v", idx+1, step.Label(), err))
		return
	}
	ss.Log = sr.files.log
	if pr.cur != nil {
		pr.cur.unwatchFolder()
	}
	pr.cur = sr
	sr.watchFolder()
	// The supervisor's pid, for re-adoption if we die before its status
	// file exists; page cache is enough, a machine crash kills it too.
	r.journalNoSync(record{Kind: recStepPID, Phase: pr.ph.ID, Step: idx, Attempt: try, PID: sr.proc.sup})
	msg := fmt.Sprintf("%s: step %d/%d %s", pr.ph.Label(), idx+1, len(pr.ph.AllSteps()), step.Label())
	if sw := pr.ph.Sweep; sw != nil && sw.Search != nil {
		msg = fmt.Sprintf("%s: %s", pr.ph.Label(), step.Label()) // which unit is the search's to say: the grid's count says nothing
	}
	r.emit(Event{Kind: StepStarted, Phase: pr.ph.ID, Step: idx, Message: msg})
}

// endPhase records a phase's final status for this run.
func (r *Runner) endPhase(pr *phaseRun, st Status, reason string) {
	pr.stopPrewarm() // ended before it started: its model is not read in for nothing
	if st == Done {
		pr.state.Missing = missingExpects(pr.ph, pr.state.Steps)
		pr.state.ExpectFailed += len(pr.state.Missing)
	}
	if st == Done && pr.state.ExpectFailed > 0 && pr.ph.FailOnExpect {
		st, reason = Failed, expectReason(pr.state)
	}
	pr.state.Status, pr.state.Reason = st, reason
	pr.state.Ended = phaseEnd(pr.state, r.opts.Now())
	pr.state.Frozen = false
	pr.artScanPending = true
	r.sayOutside(pr, r.opts.Now())
	pr.state.Artifacts = r.phaseArtifacts(pr, r.opts.Now())
	pr.state.Unclaimed = r.unclaimed(pr)
	var job *SlurmJob
	if pr.state.Slurm != nil {
		sj := *pr.state.Slurm
		job = &sj
	}
	r.journal(record{Kind: recPhaseEnd, T: pr.state.Ended, Phase: pr.ph.ID, Attempt: pr.state.Attempt, Hash: pr.ph.Hash, Status: st, Reason: reason, Slurm: job,
		Unstarted: pr.state.Started.IsZero()})
	msg := fmt.Sprintf("%s %s", pr.ph.Label(), st)
	if reason != "" {
		msg += ": " + reason
	}
	if !pr.state.Started.IsZero() && st != Blocked {
		msg += " in " + RunTimeWords(pr.state, pr.state.Ended)
	}
	r.emit(Event{Kind: PhaseFinished, Phase: pr.ph.ID, Message: msg})
}

// phaseEnd is when a phase ended: when its last step ended, by its
// supervisor's status file, wherever the monitor was at the time; now only
// when no step says.
func phaseEnd(ps PhaseState, now time.Time) time.Time {
	var last time.Time
	for _, s := range ps.Steps {
		if s.Ended.After(last) {
			last = s.Ended
		}
	}
	if last.IsZero() || last.After(now) || last.Before(ps.Started) {
		return now
	}
	return last
}

// missingExpects lists the expected results no row produced as a number:
// a benchmark that died before printing its figure, or a typo in a result
// name, must read as a failed expectation, not a pass.
func missingExpects(ph *campaign.Phase, steps []StepState) []campaign.Expect {
	produced := func(col string, rows []Row) bool {
		for _, r := range rows {
			for i, c := range r.Cols {
				if _, ok := r.Values[i].(float64); ok && c == col {
					return true
				}
			}
		}
		return false
	}
	var all []Row
	for _, s := range steps {
		all = append(all, s.Results...)
	}
	var out []campaign.Expect
	for _, e := range ph.Expect {
		if !produced(e.Column, all) {
			out = append(out, e)
		}
	}
	for i, st := range ph.AllSteps() {
		for _, e := range st.Expect {
			if i < len(steps) && !produced(e.Column, steps[i].Results) {
				out = append(out, e)
			}
		}
	}
	return out
}

func expectReason(ps PhaseState) string {
	var parts []string
	if n := ps.ExpectFailed - len(ps.Missing); n > 0 {
		parts = append(parts, fmt.Sprintf("%d result(s) missed their expected value", n))
	}
	for _, m := range ps.Missing {
		parts = append(parts, fmt.Sprintf("%s (expected %s) was not produced", m.Column, m.String()))
	}
	return strings.Join(parts, "; ")
}

// RunTimeWords says a phase's running time, and over how many runs when
// more than one: "13s", "38s over 2 runs".
func RunTimeWords(p PhaseState, now time.Time) string {
	d, n := p.RunTime(now)
	if n > 1 {
		return fmt.Sprintf("%s over %d runs", format.Duration(d), n)
	}
	return format.Duration(d)
}
