package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/slurm"
)

// A step of a phase with `slurm:` runs as a Slurm job: sbatch of a script
// that execs greenlight's own supervisor on the node Slurm picks, so the
// step's output still goes straight to its log and its status file is
// written beside it, on the filesystem the nodes share. The runner reads
// those files as for a local step, and asks Slurm (scontrol) where the job
// is: queued and why, running where, ended how. Every Slurm command runs
// in a goroutine of its own; its answer comes back to the loop as
// slurmNews, so a slow slurmctld never holds the loop.

// SlurmJob is what the window, `status --json` and the results file show
// of a phase's current (or last) Slurm job.
type SlurmJob struct {
	ID        string    `json:",omitzero"`
	State     string    `json:",omitzero"` // Slurm's: PENDING, RUNNING, COMPLETED, TIMEOUT, ...
	Reason    string    `json:",omitzero"` // why it pends (Resources, Priority, ...) or how it ended
	Nodes     string    `json:",omitzero"` // Slurm's node list: gpu[01-02]
	Node      string    `json:",omitzero"` // the address of the node the batch script runs on: ${GREENLIGHT_NODE}
	Partition string    `json:",omitzero"`
	Submitted time.Time `json:",omitzero"`
	Started   time.Time `json:",omitzero"` // when it started running
	StartsAt  time.Time `json:",omitzero"` // Slurm's expected start, while it pends
	// QueueWait is the time from submission to start, or so far while it
	// pends.
	QueueWait time.Duration `json:",omitzero"`
}

// Queued says the job waits in Slurm's queue.
func (j *SlurmJob) Queued() bool {
	return j != nil && (j.State == "SUBMITTING" || slurm.State(j.State).Pending())
}

// slurmJob is the loop's record of a step's job.
type slurmJob struct {
	id, name   string
	submitting bool // sbatch not yet answered
	querying   bool // a scontrol is out
	asked      time.Time
	urgent     bool       // ask at the next look, not in slurmEvery
	last       *slurm.Job // Slurm's last word; nil before the first
	unknown    bool       // Slurm (and sacct) no longer know it
	terminalAt time.Time  // when Slurm was first seen to have ended it
	exited     *StepStatus
	exitedAt   time.Time // when the status file said it ended
	cancel     bool      // a stop asked before sbatch answered
	addrAsked  bool
	nodeAddr   string
	froze      bool
}

// slurmNews is a Slurm command's answer, for the loop.
type slurmNews struct {
	sr   *stepRun
	kind string // "submitted", "shown", "addr", "freeze", "thaw"
	id   string
	job  *slurm.Job
	addr string
	err  error
}

const (
	slurmEvery  = 2 * time.Second  // how often a job's state is asked
	slurmSettle = 15 * time.Second // how long the status file and Slurm's word may disagree on an end
)

// jobName names a step's job: a runner that died between sbatch and its
// journal finds the job again by it, so a step is never submitted twice.
func (r *Runner) jobName(pr *phaseRun, dir string) string {
	return "gl." + campaign.SafeName(r.plan.Name) + "." + pr.ph.ID + "." + filepath.Base(dir)
}

// launchSlurm writes the step's batch script and submits it in the
// background; the loop hears the job id as slurmNews.
func (r *Runner) launchSlurm(sr *stepRun, env []string, supArgs []string) error {
	pr := sr.pr
	script := filepath.Join(sr.dir, "job.sh")
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\n# greenlight: campaign %s, phase %s, step %d, as a Slurm job.\n", oneLine(r.plan.Name), pr.ph.ID, sr.step.Index+1)
	// GREENLIGHT_NODE: the node of the service the step uses, when the
	// runner gave one; the job's own node otherwise (a service's job).
	b.WriteString(": \"${GREENLIGHT_NODE:=${SLURMD_NODENAME:-$(hostname -s)}}\"\nexport GREENLIGHT_NODE\n")
	b.WriteString("exec " + shellQuote(r.opts.Self[0]))
	for _, a := range supArgs {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString("\n")
	if err := os.WriteFile(script, []byte(b.String()), 0o755); err != nil {
		return err
	}
	sl := pr.ph.Slurm
	sub := slurm.Submit{Request: slurm.Request{Partition: sl.Partition, Nodes: sl.Nodes, GPUsPerNode: sl.GPUsPerNode,
		Time: sl.Time, Account: sl.Account, Args: sl.Args},
		Name: r.jobName(pr, sr.dir), Script: script, Output: sr.files.log, Dir: sr.step.Dir, Env: env}
	sr.job = &slurmJob{name: sub.Name, submitting: true}
	pr.state.Slurm = &SlurmJob{Partition: sl.Partition, Submitted: sr.started, State: "SUBMITTING"}
	go func() {
		id, err := slurm.Sbatch(context.Background(), sub)
		r.slurmSend(slurmNews{sr: sr, kind: "submitted", id: id, err: err})
	}()
	return nil
}

func (r *Runner) slurmSend(n slurmNews) {
	select {
	case r.watch.slurm <- n:
	case <-r.life.done:
	}
}

// slurmHeard takes a Slurm command's answer in the loop.
func (r *Runner) slurmHeard(n slurmNews) {
	sr, now := n.sr, r.opts.Now()
	pr := sr.pr
	j := sr.job
	switch n.kind {
	case "submitted":
		j.submitting = false
		if n.err != nil {
			r.onExit(sr, &StepStatus{State: "exited", ExitCode: 1, Error: "sbatch refused the job: " + n.err.Error(), Ended: now}, now)
			return
		}
		j.id, j.urgent = n.id, true
		r.slurmAdopted(sr, n.id)
		r.emit(Event{Kind: Progress, Phase: pr.ph.ID, Step: sr.step.Index,
			Message: fmt.Sprintf("%s: step %d submitted to Slurm as job %s%s", pr.ph.Label(), sr.step.Index+1, n.id, partitionWords(pr.ph.Slurm.Partition))})
		if j.cancel || sr.proc.exitedSeen {
			sr.stop(r.opts.Grace)
		}
	case "shown":
		j.querying = false
		if sr.proc.exitedSeen {
			return
		}
		switch {
		case errors.Is(n.err, slurm.ErrUnknown):
			j.unknown = true
		case n.err != nil:
			if !strings.Contains(pr.state.Steps[sr.step.Index].Stage, n.err.Error()) {
				r.warn(fmt.Sprintf("%s: asking Slurm of job %s: %v", pr.ph.Label(), j.id, n.err))
			}
		default:
			j.unknown = false
			r.slurmSaw(sr, n.job, now)
		}
	case "addr":
		if n.err != nil {
			j.nodeAddr = n.job.BatchHost
		} else {
			j.nodeAddr = n.addr
		}
		pr.state.Slurm.Node = j.nodeAddr
		r.emit(Event{Kind: Progress, Phase: pr.ph.ID, Step: sr.step.Index})
	case "freeze", "thaw":
		if n.err != nil {
			word := "suspend"
			if n.kind == "thaw" {
				word = "resume"
			}
			if n.kind == "freeze" {
				j.froze = false
				r.freezeMark(pr, false, now)
				// Nothing else frozen: the campaign is not frozen either.
				r.q.frozen = slices.ContainsFunc(r.phases, func(o *phaseRun) bool { return o.state.Frozen })
			}
			r.warn(fmt.Sprintf("%s: Slurm would not %s job %s (%v): it goes on as it was; scontrol suspend is for Slurm operators and administrators", pr.ph.Label(), word, j.id, n.err))
		}
	}
}

// slurmAdopted records a step's job id: in the journal (fsynced: a job
// outlives a crash of the runner's machine, and must be found again), in
// the state the window shows.
func (r *Runner) slurmAdopted(sr *stepRun, id string) {
	pr := sr.pr
	r.journal(record{Kind: recStepJob, Phase: pr.ph.ID, Step: sr.step.Index, Attempt: sr.try, Job: id})
	pr.state.Steps[sr.step.Index].Job = id
	if pr.state.Slurm == nil {
		pr.state.Slurm = &SlurmJob{Partition: pr.ph.Slurm.Partition, Submitted: sr.started}
	}
	pr.state.Slurm.ID = id
	if pr.state.Slurm.State == "SUBMITTING" {
		pr.state.Slurm.State = "PENDING"
	}
}

func partitionWords(p string) string {
	if p == "" {
		return ""
	}
	return " (partition " + p + ")"
}

// slurmSaw takes what scontrol said of a step's job.
func (r *Runner) slurmSaw(sr *stepRun, job *slurm.Job, now time.Time) {
	pr, j := sr.pr, sr.job
	if sj := pr.state.Slurm; sj != nil && !sj.Started.IsZero() && job.State.Pending() && job.State != "REQUEUED" {
		return // an answer older than the status file that says it runs
	}
	prev := j.last
	j.last = job
	sj := pr.state.Slurm
	if sj == nil {
		sj = &SlurmJob{ID: job.ID, Partition: pr.ph.Slurm.Partition}
		pr.state.Slurm = sj
	}
	ss := &pr.state.Steps[sr.step.Index]
	sj.ID, sj.State, sj.Reason, sj.Nodes = job.ID, string(job.State), job.Reason, job.Nodes
	if !job.Submitted.IsZero() {
		sj.Submitted = job.Submitted
	}
	switch {
	case job.State.Pending():
		sj.StartsAt = job.Started // Slurm's expectation, zero when it has none
		sj.QueueWait = now.Sub(sj.Submitted)
		ss.Stage = "queued in Slurm"
		if job.Reason != "" {
			ss.Stage += ": " + pendWords(job.Reason)
		}
		sr.started = now // the step's own clock starts when the job does
	default:
		sj.StartsAt = time.Time{}
		if sj.Started.IsZero() && !job.Started.IsZero() {
			r.slurmStarted(sr, job.Started, now)
		}
		if job.State == "SUSPENDED" && !j.froze {
			ss.Stage = "suspended in Slurm"
		}
		if job.BatchHost != "" && !j.addrAsked {
			j.addrAsked = true
			host := job.BatchHost
			go func() {
				a, err := slurm.NodeAddr(context.Background(), host)
				r.slurmSend(slurmNews{sr: sr, kind: "addr", addr: a, err: err, job: job})
			}()
		}
	}
	if job.State.Terminal() && j.terminalAt.IsZero() {
		j.terminalAt = now
	}
	if prev == nil || prev.State != job.State || prev.Reason != job.Reason || prev.Nodes != job.Nodes {
		r.emit(Event{Kind: Progress, Phase: pr.ph.ID, Step: sr.step.Index})
	}
}

// slurmStarted records a step's job running: from Slurm's word, or from
// its status file when that comes first (the supervisor runs on the node).
func (r *Runner) slurmStarted(sr *stepRun, started, now time.Time) {
	pr := sr.pr
	sj, ss := pr.state.Slurm, &pr.state.Steps[sr.step.Index]
	if sj == nil || !sj.Started.IsZero() {
		return
	}
	if sj.Queued() {
		sj.State, sj.Reason, sj.StartsAt = "RUNNING", "", time.Time{}
	}
	sj.Started = started
	sj.QueueWait = max(0, started.Sub(sj.Submitted))
	// The step's time is its run, not its wait: its history and ETA must
	// not learn the queue.
	if started.After(now) || started.Before(ss.Started) {
		started = now
	}
	ss.Started, sr.started = started, started
	if strings.HasPrefix(ss.Stage, "queued in Slurm") {
		ss.Stage = ""
	}
	where := ""
	if sj.Nodes != "" {
		where = " on " + sj.Nodes
	}
	r.emit(Event{Kind: StepStarted, Phase: pr.ph.ID, Step: sr.step.Index,
		Message: fmt.Sprintf("%s: Slurm job %s runs%s after %s in the queue", pr.ph.Label(), sj.ID, where, FormatDuration(sj.QueueWait))})
	if r.q.frozen && pr.ph.Service == nil {
		r.freezeSlurm(pr, sr, true, now)
	}
}

// pendWords says Slurm's pending reason with what it means.
func pendWords(reason string) string {
	switch reason {
	case "Resources":
		return "Resources (waiting for nodes to free up)"
	case "Priority":
		return "Priority (jobs of higher priority go first)"
	case "BeginTime":
		return "BeginTime (not before its start time)"
	case "Dependency":
		return "Dependency (waits for another job)"
	case "QOSMaxJobsPerUserLimit", "AssocMaxJobsLimit", "QOSMaxGRESPerUser":
		return reason + " (a limit of your account or QOS)"
	case "PartitionNodeLimit", "PartitionTimeLimit":
		return reason + " (the request exceeds what the partition allows: it will never start)"
	case "ReqNodeNotAvail":
		return reason + " (a node it needs is down, drained or reserved)"
	}
	return reason
}

// pollSlurm asks Slurm of the step's job when due. Called from follow.
func (r *Runner) pollSlurm(sr *stepRun, now time.Time) {
	j := sr.job
	if j.submitting || j.querying || j.id == "" || r.mode.readOnly {
		return
	}
	if !j.urgent && now.Sub(j.asked) < slurmEvery {
		return
	}
	j.querying, j.urgent, j.asked = true, false, now
	id := j.id
	go func() {
		ctx := context.Background()
		job, err := slurm.Show(ctx, id)
		if errors.Is(err, slurm.ErrUnknown) {
			// Purged by the controller (MinJobAge): accounting may know.
			if a, aerr := slurm.Accounting(ctx, id); aerr == nil {
				job, err = a, nil
			}
		}
		r.slurmSend(slurmNews{sr: sr, kind: "shown", id: id, job: job, err: err})
	}()
}

// slurmEnd decides, for a step on Slurm, whether and how it ended: st is
// its status file's word (nil when it has none). It returns the status
// to record, or nil to wait for the other side: the status file may lag
// Slurm's word on a shared filesystem, and Slurm's final state (TIMEOUT,
// NODE_FAIL) says more than the exit code of a step it killed.
func (r *Runner) slurmEnd(sr *stepRun, st *StepStatus, now time.Time) *StepStatus {
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
		out := &StepStatus{State: "exited", ExitCode: code, Ended: j.last.Ended}
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
		return &StepStatus{State: "exited", ExitCode: -1, Ended: now,
			Error: fmt.Sprintf("lost: Slurm no longer knows job %s (accounting off or purged) and its status file does not say it ended", j.id)}
	}
	return nil
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
	id, queued := j.id, j.last == nil || j.last.State.Pending()
	wait := 3*grace + 10*time.Second
	go func() {
		ctx := context.Background()
		if queued || slurm.Signal(ctx, id, "TERM") != nil {
			slurm.Cancel(ctx, id)
			return
		}
		deadline := time.Now().Add(wait)
		for time.Now().Before(deadline) {
			time.Sleep(time.Second)
			if job, err := slurm.Show(ctx, id); err != nil || job.State.Terminal() {
				return
			}
		}
		slurm.Cancel(ctx, id)
	}()
}

// freezeSlurm suspends or resumes a running job (scontrol suspend, which
// Slurm allows its operators); a refusal comes back as slurmNews and is
// said plainly.
func (r *Runner) freezeSlurm(pr *phaseRun, sr *stepRun, frozen bool, now time.Time) bool {
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

// readoptSlurm takes a journaled job back after a restart: by its id, or,
// when the runner died between sbatch and its journal, by its name.
func (r *Runner) readoptSlurm(sr *stepRun, id string) {
	sr.job = &slurmJob{id: id, name: r.jobName(sr.pr, sr.dir), urgent: true}
	if sr.pr.state.Slurm == nil {
		sr.pr.state.Slurm = &SlurmJob{ID: sr.job.id, Partition: sr.pr.ph.Slurm.Partition, Submitted: sr.started}
	}
}

// findUnjournaled looks for the job of a step whose runner died between
// sbatch's answer and the journal, by the job's name.
func (r *Runner) findUnjournaled(sr *stepRun) {
	if sr.job.id != "" || r.mode.readOnly {
		return
	}
	ids, err := slurm.FindByName(context.Background(), sr.job.name)
	if err == nil && len(ids) > 0 {
		sr.job.id = ids[len(ids)-1]
		r.slurmAdopted(sr, sr.job.id)
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

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Words says the job in a line, for the window, `status` and the results
// file: "Slurm job 1234 PENDING (Resources) · queued 2m · starts ~14:05",
// "Slurm job 1234 RUNNING on gpu[01-02] · queued 3s".
func (j *SlurmJob) Words(now time.Time) string {
	if j == nil {
		return ""
	}
	id := j.ID
	if id == "" {
		id = "(not yet submitted)"
	}
	s := "Slurm job " + id
	if j.State != "" {
		s += " " + j.State
	}
	if j.Queued() {
		if j.Reason != "" {
			s += " (" + j.Reason + ")"
		}
		if !j.Submitted.IsZero() {
			s += " · queued " + FormatDuration(now.Sub(j.Submitted))
		}
		if !j.StartsAt.IsZero() {
			s += " · starts ~" + j.StartsAt.Format("15:04") + " (Slurm)"
		}
		return s
	}
	if j.Nodes != "" {
		s += " on " + j.Nodes
	}
	if j.Reason != "" && slurm.State(j.State).Terminal() {
		s += " (" + j.Reason + ")"
	}
	if !j.Started.IsZero() {
		s += " · queued " + FormatDuration(j.QueueWait)
	}
	return s
}
