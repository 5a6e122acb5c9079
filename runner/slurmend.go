package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/greenlight-run/greenlight/runner/supervise"

	"github.com/greenlight-run/greenlight/runner/slurm"
)

// A Slurm step's end (Slurm's word and its status file's, reconciled),
// its stop and freeze, and its re-adoption after a restart.

// slurmEnd decides, for a step on Slurm, whether and how it ended: st is
// its status file's word (nil when it has none). It returns the status
// to record, or nil to wait for the other side: the status file may lag
// Slurm's word on a shared filesystem, and Slurm's final state (TIMEOUT,
// NODE_FAIL) says more than the exit code of a step it killed.
func (sr *stepRun) slurmEnd(st *supervise.Status, now time.Time) *supervise.Status {
	j := sr.job
	if j.submitting {
		return nil
	}
	final := j.last != nil && j.last.State.Terminal()
	if st != nil && st.State == "exited" {
		if j.exited == nil {
			j.exited, j.exitedAt, j.urgent = st, now, true
		}
		if !final && !j.unknown && now.Sub(j.exitedAt) < slurmSettle {
			return nil // Slurm has not said yet: ask again
		}
		out := *st
		if final && j.last.State.Abnormal() && sr.proc.stopFor == "" {
			out.Error = j.last.Why()
			if out.ExitCode == 0 {
				out.ExitCode = 1
			}
		}
		return &out
	}
	switch {
	case final:
		if now.Sub(j.terminalAt) < slurmSettle {
			return nil // its status file may not have reached us yet
		}
		code, sig := j.last.Code()
		out := &supervise.Status{State: "exited", ExitCode: code, Ended: j.last.Ended}
		if sig > 0 {
			out.ExitCode = 128 + sig
		}
		switch {
		case j.last.State.Abnormal():
			out.Error = j.last.Why()
		default:
			out.Error = fmt.Sprintf("Slurm says job %s ended %s (exit %s), but its status file %s was never written: is the state dir on a filesystem the nodes share?",
				j.id, j.last.State, j.last.ExitCode, sr.files.status)
		}
		if out.Error != "" && out.ExitCode == 0 {
			out.ExitCode = 1
		}
		if out.Ended.IsZero() || out.Ended.After(now) {
			out.Ended = now
		}
		return out
	case j.unknown:
		return &supervise.Status{State: "exited", ExitCode: -1, Ended: now,
			Error: fmt.Sprintf("lost: Slurm no longer knows job %s (accounting off or purged) and its status file does not say it ended", j.id)}
	}
	return nil
}

// slurmRequeued follows a job Slurm requeued (a node failed under it and
// the job may run again: no --no-requeue): the same job, queued again,
// never submitted anew; the run it killed ended nothing of the step.
func (sr *stepRun) slurmRequeued(prev, job *slurm.Job, now time.Time) {
	r, pr, j := sr.r, sr.pr, sr.job
	if cur, err := supervise.ReadStatus(sr.files.status); err == nil {
		j.staleRun = cur.Started
	}
	j.exited, j.exitedAt, j.terminalAt, j.requeuedRun = nil, time.Time{}, time.Time{}, prev.Started
	// The rows the killed run wrote are not the step's: the run Slurm
	// starts again writes its own (addRow drops any the killed run writes
	// as it completes, until the next run is seen).
	ss := &pr.state.Steps[sr.step.Index]
	for _, row := range ss.Results {
		for _, ch := range row.Checks {
			if !ch.Pass {
				pr.state.ExpectFailed--
			}
		}
	}
	ss.Results, j.dropRows = nil, true
	j.ranOn = "" // its next run's nodes are Slurm's to choose
	sj := pr.state.Slurm
	sj.Started, sj.Node = time.Time{}, ""
	j.addrAsked, j.nodeAddr = false, ""
	why := "a node failed under it"
	if len(job.Failed) > 0 {
		why = (&slurm.Job{Failed: job.Failed, Nodes: prev.Nodes}).FailedWords()
	}
	r.emit(Event{Kind: Progress, Phase: pr.ph.ID, Step: sr.step.Index,
		Message: fmt.Sprintf("%s: Slurm requeued job %s (restart %d; %s): it runs again when Slurm starts it, not submitted again", pr.ph.Label(), job.ID, job.Restarts, why)})
}

// staleStatus says whether st is the status file of a run Slurm
// requeued.
func (sr *stepRun) staleStatus(st *supervise.Status) bool {
	return st != nil && !sr.job.staleRun.IsZero() && st.Started.Equal(sr.job.staleRun)
}

// stopSlurm ends a step's job: a queued job is cancelled; a running one
// gets SIGTERM in its batch script (greenlight's supervisor, which stops
// the step's group with the grace it was given and records the end), and
// is cancelled outright if it is still there after that.
func (sr *stepRun) stopSlurm(grace time.Duration) {
	j := sr.job
	if j.id == "" {
		j.cancel = true // sbatch has not answered: cancelled when it does
		return
	}
	id, queued := j.id, sr.pr.state.Slurm.Queued()
	if !queued && j.cancelAt.IsZero() {
		// The loop cancels it outright if it is still there by then
		// (follow, which asks Slurm of it anyway).
		j.cancelAt = sr.r.opts.Now().Add(3*grace + 10*time.Second)
	}
	go func() {
		ctx := context.Background()
		if queued || slurm.Signal(ctx, id, "TERM") != nil {
			slurm.Cancel(ctx, id)
		}
	}()
}

// cancelIfDue cancels a job that a graceful stop did not end in time.
func (sr *stepRun) cancelIfDue(now time.Time) {
	j := sr.job
	if j.cancelAt.IsZero() || now.Before(j.cancelAt) || j.last != nil && j.last.State.Terminal() {
		return
	}
	j.cancelAt = time.Time{}
	id := j.id
	go slurm.Cancel(context.Background(), id)
}

// freezeSlurm suspends or resumes a running job (scontrol suspend, which
// Slurm allows its operators); a refusal comes back as slurmNews and is
// said plainly.
func (sr *stepRun) freezeSlurm(frozen bool, now time.Time) bool {
	r, pr := sr.r, sr.pr
	j := sr.job
	if j.id == "" || pr.state.Slurm == nil || pr.state.Slurm.Queued() || pr.state.Slurm.Started.IsZero() || j.froze == frozen {
		return false
	}
	j.froze = frozen
	id, kind := j.id, "thaw"
	if frozen {
		kind = "freeze"
	}
	go func() {
		var err error
		if frozen {
			err = slurm.Suspend(context.Background(), id)
		} else {
			err = slurm.Resume(context.Background(), id)
		}
		r.slurmSend(slurmNews{sr: sr, kind: kind, id: id, err: err})
	}()
	r.freezeMark(pr, frozen, now)
	return true
}

// readoptSlurm takes a journaled job back after a restart, by its id.
func (sr *stepRun) readoptSlurm(id string) {
	*sr.job = slurmJob{id: id, name: sr.jobName(), urgent: true}
	if sr.pr.state.Slurm == nil {
		sr.pr.state.Slurm = &SlurmJob{ID: sr.job.id, Partition: sr.pr.ph.Slurm.Partition, Submitted: sr.started}
	}
}

// findUnjournaled looks for the job of a step whose runner died between
// sbatch's answer and the journal, by the job's name.
func (sr *stepRun) findUnjournaled() {
	r := sr.r
	if sr.job.id != "" {
		return
	}
	ids, err := slurm.FindByName(context.Background(), sr.job.name)
	if err == nil && len(ids) > 0 {
		sr.job.id = ids[len(ids)-1]
		sr.slurmAdopted(sr.job.id)
		r.warnings = append(r.warnings, fmt.Sprintf("%s: found Slurm job %s of step %d by its name (its id was not journaled)", sr.pr.ph.Label(), sr.job.id, sr.step.Index+1))
	}
}

// slurmAlive says, at a restart, whether Slurm still has the job queued
// or running (so it is re-adopted, never submitted again).
func slurmAlive(id string) (bool, string) {
	if id == "" {
		return false, "no job id was journaled"
	}
	job, err := slurm.Show(context.Background(), id)
	switch {
	case errors.Is(err, slurm.ErrUnknown):
		return false, "Slurm no longer knows job " + id
	case err != nil:
		// Slurm unreachable: assume it lives; the loop asks again.
		return true, err.Error()
	}
	return !job.State.Terminal(), string(job.State)
}

// settleRequeued ends the dropping of a requeued run's rows once that run
// is seen to have ended (its status file says so) or the next run has
// begun (a status file of another run): what the results file holds then
// is the killed run's, read and dropped, and what comes after is the next
// run's.
func (sr *stepRun) settleRequeued(st *supervise.Status, now time.Time) {
	j := sr.job
	if j == nil || !j.dropRows {
		return
	}
	if st == nil {
		cur, err := supervise.ReadStatus(sr.files.status)
		if err != nil {
			return
		}
		st = cur
	}
	if sr.staleStatus(st) && st.State == "running" {
		return // the killed run still completing
	}
	sr.drainResults(now)
	j.dropRows = false
}
