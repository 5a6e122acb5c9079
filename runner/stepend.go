package runner

import (
	"cmp"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/results"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/state"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

// A step's end: recorded with its reason, then the phase's next step, a
// retry, or the phase's end; and wait_quiet's watch of growing artifacts.

// onExit records the step's end, however it was seen (its status file,
// its supervisor's exit, Slurm's word), and moves the phase on.
func (sr *stepRun) onExit(st *supervise.Status, now time.Time) {
	r := sr.r
	pr := sr.pr
	// Whatever way its end was seen, all it wrote is taken in first.
	sr.drainResults(now)
	// Claimed up to this moment, not the loop's: the loop's now may be
	// from before the step wrote its last file and exited.
	sr.claim(r.opts.Now())
	sr.readSavedResults(now)
	if sr.step.ResultsFormat == campaign.FormatNVBandwidth {
		// Its rows are of its end, live and rebuilt alike.
		sr.readNVBandwidth(cmp.Or(st.Ended, now), true)
	}
	sr.readSummary()
	sr.proc.exitedSeen = true
	if sr.health.probe != nil {
		sr.health.probe.cancel()
	}
	if pr.ph.Service == nil || sr.proc.stopFor != "" || pr.state.Status != Ready {
		sr.unwatchFolder()
	}
	ss := &pr.state.Steps[sr.step.Index]
	ss.Ended, ss.ExitCode = st.Ended, st.ExitCode
	takeEnd(ss, st)
	if len(st.Kept) > 0 {
		r.kept = append(r.kept, st.Kept...)
		r.journal(record{Kind: recKept, Phase: pr.ph.ID, Step: sr.step.Index, Kept: st.Kept})
		r.warn(fmt.Sprintf("%s: step %d left %d process(es) running (%s): kept, as its leave_running asks; stopped when the campaign ends", pr.ph.Label(), sr.step.Index+1, len(st.Left), strings.Join(st.Left, ", ")))
	} else if len(st.Left) > 0 {
		// Its supervisor stopped them: a GPU they held is free for the next
		// phase, and the record says who they were.
		r.warn(fmt.Sprintf("%s: step %d left %d process(es) running (%s): stopped with the step", pr.ph.Label(), sr.step.Index+1, len(st.Left), strings.Join(st.Left, ", ")))
	}
	if sr.on().remoteClock() && !st.Started.IsZero() && !st.Ended.IsZero() && !ss.Started.IsZero() {
		// Its times are the node's clock, which may be off this machine's:
		// its duration is the node's, placed from its start as seen here.
		ss.Ended = ss.Started.Add(st.Ended.Sub(st.Started))
	}
	// A status file's end past now is a clock's skew, kept to now: this
	// moment's, not the loop's (taken before it read the status file, and
	// so before a step that just ended had).
	if at := r.opts.Now(); ss.Ended.IsZero() || ss.Ended.After(at) {
		ss.Ended = at
	}
	sr.witnessed()
	dur := ss.Ended.Sub(ss.Started)
	reason := exitReason(st)
	if sr.step.ResultsFormat == campaign.FormatNCCLTests {
		for _, p := range sr.nccl.end() {
			r.warn(fmt.Sprintf("%s: step %d's nccl-tests output, %s", pr.ph.Label(), sr.step.Index+1, p))
		}
	}
	if pr.state.Frozen {
		pr.state.Frozen = false
	}
	svc := pr.ph.Service != nil
	switch {
	case sr.proc.pointOnly && sr.proc.stopFor == Skipped:
		// Only its point was skipped (a later skip of the phase, a stop or
		// a timeout says otherwise).
		skipStep(ss, state.SkipByYou, sr.proc.stopWhy)
		r.journal(record{Kind: recStepEnd, Phase: pr.ph.ID, Step: sr.step.Index, Attempt: sr.try, Status: Skipped, Skip: ss.Skip, ExitCode: st.ExitCode, Reason: sr.proc.stopWhy})
		r.emit(Event{Kind: StepFinished, Phase: pr.ph.ID, Step: sr.step.Index, Message: fmt.Sprintf("%s: step %d %s %s", pr.ph.Label(), sr.step.Index+1, sr.step.Label(), sr.proc.stopWhy)})
		sr.next(now)
	case sr.proc.stopFor != "":
		ss.Status, ss.Reason = sr.proc.stopFor, sr.proc.stopWhy
		if sr.proc.stopFor == Done {
			ss.Status = Done
		}
		r.journal(record{Kind: recStepEnd, Phase: pr.ph.ID, Step: sr.step.Index, Attempt: sr.try, Status: ss.Status, ExitCode: st.ExitCode, Reason: sr.proc.stopWhy})
		if svc && sr.proc.stopFor == Done {
			r.emit(Event{Kind: ServiceStopped, Phase: pr.ph.ID, Message: fmt.Sprintf("%s stopped", pr.ph.Label())})
		}
		r.endPhase(pr, sr.proc.stopFor, sr.proc.stopWhy)
	case svc && pr.state.Status == Ready:
		ss.Status, ss.Reason = Failed, reason
		r.journal(record{Kind: recStepEnd, Phase: pr.ph.ID, Attempt: sr.try, Status: Failed, ExitCode: st.ExitCode, Reason: reason})
		why := quoteLast(fmt.Sprintf("the service %s died (%s)", pr.ph.ID, reason), sr.files.log, probedPaths(pr.ph)...)
		for _, o := range r.phases {
			if r.plan.Uses(o.ph.ID, pr.ph.ID) && o.state.Status == Running && o.cur != nil && !o.cur.proc.exitedSeen {
				o.cur.proc.stopFor, o.cur.proc.stopWhy = Failed, why
				o.cur.stop(r.opts.Grace)
			}
		}
		r.endPhase(pr, Failed, why+" while phases needed it")
	case svc:
		ss.Status, ss.Reason = Failed, reason
		r.journal(record{Kind: recStepEnd, Phase: pr.ph.ID, Attempt: sr.try, Status: Failed, ExitCode: st.ExitCode, Reason: reason})
		r.endPhase(pr, Failed, quoteLast("the service "+reason+" before it was ready", sr.files.log, probedPaths(pr.ph)...))
	case st.ExitCode == 0 || sr.step.AllowFailure:
		ss.Status = Done
		if st.ExitCode != 0 {
			ss.Reason = reason + " (allowed to fail)"
		}
		r.journal(record{Kind: recStepEnd, Phase: pr.ph.ID, Step: sr.step.Index, Attempt: sr.try, Status: Done, ExitCode: st.ExitCode})
		if st.ExitCode == 0 && !sr.adopted {
			r.store.hist.add(sr.step.Key, dur)
		}
		if r.checkDisk(now, true); sr.diskFilled || r.disk.low {
			r.warn(fmt.Sprintf("%s: the disk filled up while step %d %s ran (%s free now): it exited %d and is recorded done; check that its outputs are whole",
				pr.ph.Label(), sr.step.Index+1, sr.step.Label(), format.Bytes(r.disk.free), st.ExitCode))
		}
		r.emit(Event{Kind: StepFinished, Phase: pr.ph.ID, Step: sr.step.Index, Message: fmt.Sprintf("%s: step %d %s done in %s", pr.ph.Label(), sr.step.Index+1, sr.step.Label(), format.Duration(dur))})
		if sr.quietFor() > 0 {
			sr.proc.exitedSeen = false
			sr.quiet.waiting = true
			sr.quiet.since, sr.quiet.at = now, now
			sr.quiet.size, sr.quiet.rate = 0, 0
			for _, a := range globArtifacts(pr.ph.Artifacts, pr.artDir) {
				sr.quiet.size += a.Size // what is there already did not flow in the wait
			}
			ss.Status, ss.Stage = Running, "waiting for artifacts to stop growing"
			if pr.ph.Capture != nil {
				ss.Stage = "flushing traces"
			}
			return
		}
		sr.next(now)
	case st.Lost:
		sr.runAgainLost(reason, now)
	default:
		ss.Status, ss.Reason = Failed, reason
		r.journal(record{Kind: recStepEnd, Phase: pr.ph.ID, Step: sr.step.Index, Attempt: sr.try, Status: Failed, ExitCode: st.ExitCode, Reason: reason})
		r.emit(Event{Kind: StepFinished, Phase: pr.ph.ID, Step: sr.step.Index, Message: fmt.Sprintf("%s: step %d %s failed: %s", pr.ph.Label(), sr.step.Index+1, sr.step.Label(), reason)})
		if sr.try <= pr.ph.Retries {
			pr.state.Retried++
			r.warn(fmt.Sprintf("%s: step %d %s failed (%s); retry %d of %d", pr.ph.Label(), sr.step.Index+1, sr.step.Label(), reason, sr.try, pr.ph.Retries))
			r.startStep(pr, sr.step.Index, sr.try+1, now)
			return
		}
		if sw := pr.ph.Sweep; sw != nil && sw.GoOn && sr.step.Unit != nil {
			sr.goOn(quoteLast(reason, sr.files.log), now)
			return
		}
		r.endPhase(pr, Failed, quoteLast(fmt.Sprintf("step %d (%s) %s", sr.step.Index+1, sr.step.Label(), reason), sr.files.log))
	}
}

// runAgainLost runs again a step whose supervisor died before its end
// was seen: its outcome is unknown, so that unit alone runs again (a new
// try, not counted against retries:), never the phase or its grid. What
// is left of its tree (marked by its own results path) is stopped first,
// so the two never run side by side.
func (sr *stepRun) runAgainLost(reason string, now time.Time) {
	sr.r.warn(sr.endLost(reason))
	sr.r.startStep(sr.pr, sr.step.Index, sr.try+1, now)
}

// endLost journals the end of a try whose supervisor died before its end
// was seen, and stops what its tree left; it returns the words for it.
// Whether this runner saw the supervisor die or found it gone at a
// restart, the unit runs again as the next try.
func (sr *stepRun) endLost(reason string) string {
	r, pr := sr.r, sr.pr
	ss := &pr.state.Steps[sr.step.Index]
	ss.Status, ss.Reason = Failed, reason
	r.journal(record{Kind: recStepEnd, Phase: pr.ph.ID, Step: sr.step.Index, Attempt: sr.try, Status: Failed, ExitCode: -1, Reason: reason})
	msg := fmt.Sprintf("%s: step %d %s: %s; its outcome is unknown: it runs again as try %d (the output of try %d stays in %s)",
		pr.ph.Label(), sr.step.Index+1, sr.step.Label(), reason, sr.try+1, sr.try, sr.dir)
	return msg + sr.stopLeft()
}

// stopLeft stops what is left of a step whose supervisor died: its
// cgroup at once (cgroup.kill), where it ran in one, then any process
// still carrying its mark (its own results path). It says what it
// stopped as a clause of the warning; "" when nothing was left.
func (sr *stepRun) stopLeft() string {
	var said []string
	cg := sr.cgroupPlanned()
	if st, err := supervise.ReadStatus(sr.files.status); err == nil && st.Cgroup != "" {
		cg = st.Cgroup // the one it made (another name where that was taken)
	}
	if n := supervise.KillCgroup(cg, sr.r.opts.Grace+time.Second); n > 0 {
		said = append(said, fmt.Sprintf("%d process(es) in its cgroup %s, at once (cgroup.kill)", n, cg))
	}
	if left := supervise.StopMarked("GREENLIGHT_RESULTS="+sr.files.results, sr.r.opts.Grace); len(left) > 0 {
		said = append(said, strings.Join(left, ", "))
	}
	if len(said) == 0 {
		return ""
	}
	return "; stopped first what its tree left running: " + strings.Join(said, "; ")
}

// cgroupPlanned is the cgroup a step's supervisor is asked to make (""
// without the campaign's, and for a Slurm job: Slurm's holds it).
func (sr *stepRun) cgroupPlanned() string {
	if sr.r.cgroup == "" || sr.pr.ph.Slurm != nil {
		return ""
	}
	return filepath.Join(sr.r.cgroup, sr.pr.ph.ID+"."+filepath.Base(sr.dir))
}

func (sr *stepRun) next(now time.Time) {
	r, pr := sr.r, sr.pr
	sr.proc.exitedSeen = true
	sr.sayNoisy()
	sr.sayImprecise()
	sr.sayMetricsSlip()
	if why := results.SearchSlip(pr.ph, pr.state.Steps); why != "" {
		for i := range pr.state.Steps {
			if ss := &pr.state.Steps[i]; ss.Status == Pending {
				skipStep(ss, state.SkipNotProbed, whyNotProbed+"the search stopped (its SLO names a column no run wrote)")
			}
		}
		r.endPhase(pr, Failed, why)
		return
	}
	idx := pr.nextStep(sr.step.Index + 1)
	if idx < len(pr.ph.AllSteps()) {
		r.checkDisk(now, true)
		if r.q.paused || r.q.stopping {
			pr.state.Current = idx
			pr.cur = nil
			pr.state.Status = Running
			return
		}
		r.startStep(pr, idx, 1, now)
		return
	}
	r.endGrid(pr)
}

// checkQuiet waits, after a step's command ended, until the phase's
// artifacts stop growing (a trace still being flushed); for a guarded
// capture, until every rank's trace is there and quiet, or the flush has
// stalled.
func (sr *stepRun) checkQuiet(now time.Time) {
	if c := sr.pr.ph.Capture; c != nil {
		if !sr.checkFlush(c, now) {
			return
		}
	} else if size := artifactBytes(sr.pr.ph.Artifacts, sr.pr.artDir); size != sr.quiet.size {
		sr.quiet.size, sr.quiet.since = size, now
		return
	}
	if now.Sub(sr.quiet.since) >= sr.quietFor() {
		sr.claim(sr.r.opts.Now()) // what it wrote in its wait_quiet is its too
		sr.quiet.waiting = false
		sr.pr.state.Steps[sr.step.Index].Status = Done
		sr.pr.state.Steps[sr.step.Index].Stage = ""
		sr.next(now)
	}
}

// artifactBytes is the bytes of every file a phase's globs (and its own
// folder) hold now.
func artifactBytes(globs []string, dir string) int64 {
	var size int64
	for _, a := range globArtifacts(globs, dir) {
		size += a.Size
	}
	return size
}

func exitReason(st *supervise.Status) string {
	switch {
	case st.Error != "":
		return st.Error
	case st.TimedOut:
		return "timed out"
	case st.Signal != "":
		return "killed by " + signalWords(st.Signal)
	default:
		return fmt.Sprintf("exited with code %d", st.ExitCode)
	}
}

// signalWords says a signal as a person looks it up: its name and number
// and what usually sends it ("SIGKILL (9): the OOM killer, or kill -9"),
// from the words the supervisor wrote (Go's: "killed").
func signalWords(said string) string {
	for n := syscall.Signal(1); n < 65; n++ {
		if n.String() != said {
			continue
		}
		name := unix.SignalName(n)
		if name == "" {
			break
		}
		out := fmt.Sprintf("%s (%d)", name, int(n))
		switch n {
		case syscall.SIGKILL:
			out += ": the OOM killer, or kill -9"
		case syscall.SIGSEGV:
			out += ": a crash (segmentation fault)"
		case syscall.SIGBUS:
			out += ": a crash (bus error)"
		case syscall.SIGABRT:
			out += ": aborted (a failed assertion, or a fatal error in a library)"
		case syscall.SIGTERM:
			out += ": asked to stop"
		case syscall.SIGINT:
			out += ": interrupted (Ctrl-C)"
		case syscall.SIGHUP:
			out += ": its terminal went away"
		case syscall.SIGPIPE:
			out += ": it wrote to a pipe nobody read"
		}
		return out
	}
	return said
}

// takeEnd takes what a step's supervisor said of its tree at its end.
func takeEnd(ss *StepState, st *supervise.Status) {
	ss.CPU, ss.PeakMem, ss.PeakOf = st.CPU, st.PeakMem, st.PeakOf
	ss.Left, ss.LeftPIDs, ss.LeftKept = st.Left, st.LeftPIDs, len(st.Kept) > 0
}
