package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/internal/safe"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/slurm"
	"github.com/greenlight-run/greenlight/runner/slurm/words"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

// A step of a phase with `slurm:` runs as a Slurm job: sbatch of a script
// that execs greenlight's own supervisor on the node Slurm picks, so the
// step's output still goes straight to its log and its status file is
// written beside it, on the filesystem the nodes share. The runner reads
// those files as for a local step, and asks Slurm (scontrol) where the job
// is: queued and why, running where, ended how. Every Slurm command runs
// in a goroutine of its own; its answer comes back to the loop as
// slurmNews, so a slow slurmctld never holds the loop.

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
	exited     *supervise.Status
	exitedAt   time.Time // when the status file said it ended
	cancel     bool      // a stop asked before sbatch answered
	addrAsked  bool
	nodeAddr   string
	froze      bool
	lastErr    string    // the last failure to ask Slurm, said once
	cancelAt   time.Time // a graceful stop asked: scancel if it still runs then
	since      time.Time // when Slurm's word last changed
	word       string    // at a restart, what Slurm said of it
	// staleRun is the Started of the status file of the run Slurm
	// requeued: that run's end is not the step's.
	staleRun time.Time
	// requeuedRun is when the run Slurm requeued had started, until the
	// next run is seen: that run still completing is not the next's start.
	requeuedRun time.Time
	ranOn       string // its node list as last seen running
	// dropRows: Slurm requeued the job and the run it killed has not
	// been seen to end: the rows it writes as it completes are not the
	// step's (slurmRequeued, settleRequeued).
	dropRows bool
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
	slurmEvery       = 2 * time.Second  // how often a job's state is asked while it is new
	slurmSteadyAfter = 30 * time.Second // a state held this long is steady
	slurmSteadyEvery = 10 * time.Second // how often a steady job is asked
	slurmSettle      = 15 * time.Second // how long the status file and Slurm's word may disagree on an end
)

// jobName names a step's job: a runner that died between sbatch and its
// journal finds the job again by it, so a step is never submitted twice.
// The step folder's path is in it (hashed): two campaigns of one name in
// two folders must never take each other's jobs.
func (sr *stepRun) jobName() string {
	sum := sha256.Sum256([]byte(sr.dir))
	return "gl." + campaign.SafeName(sr.r.plan.Name) + "." + sr.pr.ph.ID + "." + filepath.Base(sr.dir) + "." + hex.EncodeToString(sum[:4])
}

// launchSlurm writes the step's batch script and submits it in the
// background; the loop hears the job id as slurmNews.
func (sr *stepRun) launchSlurm(env []string, supArgs []string) error {
	r := sr.r
	pr := sr.pr
	script := filepath.Join(sr.dir, "job.sh")
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\n# greenlight: campaign %s, phase %s, step %d, as a Slurm job.\n", safe.Line(r.plan.Name, safe.Value), pr.ph.ID, sr.step.Index+1)
	// GREENLIGHT_NODE: the node of the service the step uses, when the
	// runner gave one; the job's own node otherwise (a service's job).
	b.WriteString(": \"${GREENLIGHT_NODE:=${SLURMD_NODENAME:-$(hostname -s)}}\"\nexport GREENLIGHT_NODE\n")
	b.WriteString("exec " + safe.Shell(r.opts.Self[0]))
	for _, a := range supArgs {
		b.WriteString(" " + safe.Shell(a))
	}
	b.WriteString("\n")
	if err := os.WriteFile(script, []byte(b.String()), 0o755); err != nil {
		return err
	}
	sl := pr.ph.Slurm
	var groups []slurm.Group
	for _, g := range sl.Groups {
		groups = append(groups, slurm.Group{Partition: g.Partition, Nodes: g.Nodes, GPUsPerNode: g.GPUsPerNode, Args: g.Args})
	}
	sub := slurm.Submit{Request: slurm.Request{Partition: sl.Partition, Nodes: sl.Nodes, GPUsPerNode: sl.GPUsPerNode,
		Time: sl.Time, Account: sl.Account, Args: sl.Args, Groups: groups},
		Name: sr.jobName(), Script: script, Output: sr.files.log, Dir: sr.step.Dir, Env: env}
	*sr.job = slurmJob{name: sub.Name, submitting: true}
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
func (sr *stepRun) slurmHeard(n slurmNews) {
	r := sr.r
	now := r.opts.Now()
	pr := sr.pr
	j := sr.job
	switch n.kind {
	case "submitted":
		j.submitting = false
		if n.err != nil {
			sr.onExit(&supervise.Status{State: "exited", ExitCode: 1, Error: "sbatch refused the job: " + n.err.Error(), Ended: now}, now)
			return
		}
		j.id, j.urgent = n.id, true
		sr.slurmAdopted(n.id)
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
			// Said once per kind of failure, not every poll: a controller
			// down for an hour is one line, and the job goes on meanwhile.
			if n.err.Error() != j.lastErr {
				j.lastErr = n.err.Error()
				r.warn(fmt.Sprintf("%s: Slurm does not answer for job %s (%v); its status file is followed meanwhile", pr.ph.Label(), j.id, n.err))
			}
		default:
			if j.lastErr != "" {
				j.lastErr = ""
				r.emit(Event{Kind: Progress, Phase: pr.ph.ID, Step: sr.step.Index, Message: fmt.Sprintf("%s: Slurm answers again for job %s", pr.ph.ID, j.id)})
			}
			j.unknown = false
			sr.slurmSaw(n.job, now)
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
func (sr *stepRun) slurmAdopted(id string) {
	r := sr.r
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
func (sr *stepRun) slurmSaw(job *slurm.Job, now time.Time) {
	r := sr.r
	pr, j := sr.pr, sr.job
	prev := j.last
	requeued := prev != nil && job.Restarts > prev.Restarts
	if (job.State == "RUNNING" || job.State == "SUSPENDED") && job.Nodes != "" {
		j.ranOn = job.Nodes
	}
	if sj := pr.state.Slurm; sj != nil && !sj.Started.IsZero() && job.State.Pending() && job.State != "REQUEUED" && !requeued {
		return // an answer older than the status file that says it runs
	}
	j.last = job
	sj := pr.state.Slurm
	if sj == nil {
		sj = &SlurmJob{ID: job.ID, Partition: pr.ph.Slurm.Partition}
		pr.state.Slurm = sj
	}
	ss := &pr.state.Steps[sr.step.Index]
	sj.ID, sj.State, sj.Reason, sj.Nodes, sj.Restarts = job.ID, string(job.State), job.Reason, job.Nodes, job.Restarts
	if len(job.Failed) > 0 {
		sj.Failed = job.Failed
	}
	if requeued {
		sr.slurmRequeued(prev, job, now)
	}
	if !job.Submitted.IsZero() {
		sj.Submitted = job.Submitted
	}
	switch {
	case job.State.Pending():
		sj.StartsAt = job.Started // Slurm's expectation, zero when it has none
		sj.QueueWait = now.Sub(sj.Submitted)
		ss.Stage = "queued in Slurm"
		if job.Reason != "" {
			ss.Stage += ": " + words.Reason(job.Reason)
		}
		sr.started = now // the step's own clock starts when the job does
	default:
		sj.StartsAt = time.Time{}
		if !j.requeuedRun.IsZero() && !job.Started.After(j.requeuedRun) {
			break // the run Slurm requeued, still completing: not the next run's start
		}
		j.requeuedRun = time.Time{}
		if sj.Started.IsZero() && !job.Started.IsZero() {
			sr.slurmStarted(job.Started, now)
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
		j.since = now
	}
	switch {
	case prev == nil || prev.State != job.State || prev.Reason != job.Reason:
		r.emit(Event{Kind: Progress, Phase: pr.ph.ID, Step: sr.step.Index, Message: pr.ph.ID + ": " + sj.Words(now)})
	case prev.Nodes != job.Nodes:
		r.emit(Event{Kind: Progress, Phase: pr.ph.ID, Step: sr.step.Index})
	}
}

// slurmStarted records a step's job running: from Slurm's word, or from
// its status file when that comes first (the supervisor runs on the node).
func (sr *stepRun) slurmStarted(started, now time.Time) {
	r := sr.r
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
		Message: fmt.Sprintf("%s: Slurm job %s runs%s after %s in the queue", pr.ph.Label(), sj.ID, where, format.Duration(sj.QueueWait))})
	if r.q.frozen && pr.ph.Service == nil {
		sr.freezeSlurm(true, now)
	}
}

// pollSlurm asks Slurm of the step's job when due. Called from follow.
func (sr *stepRun) pollSlurm(now time.Time) {
	r := sr.r
	j := sr.job
	if j.submitting || j.id == "" {
		return
	}
	sr.cancelIfDue(now)
	if j.querying {
		return
	}
	// Often while a job's state is new (a start, a reason that changes),
	// seldom once it holds: each ask is a scontrol of some 4 ms of CPU,
	// and the step's own files say its progress and its end at once.
	every := slurmEvery
	if !j.since.IsZero() && now.Sub(j.since) > slurmSteadyAfter && j.exited == nil {
		every = slurmSteadyEvery
	}
	if !j.urgent && now.Sub(j.asked) < every {
		return
	}
	j.querying, j.urgent, j.asked = true, false, now
	id := j.id
	ran := j.ranOn // the nodes it ran on: a job ending or requeued lists only those still completing, or none
	restarts := 0
	if j.last != nil {
		restarts = j.last.Restarts
	}
	go func() {
		ctx := context.Background()
		job, err := slurm.Show(ctx, id)
		if errors.Is(err, slurm.ErrUnknown) {
			// Purged by the controller (MinJobAge): accounting may know.
			if a, aerr := slurm.Accounting(ctx, id); aerr == nil {
				job, err = a, nil
			}
		}
		if err == nil && ran != "" && (job.State.Terminal() || job.State == "COMPLETING") {
			job.Nodes = ran // the record names the nodes it ran on, not those left completing
		}
		// A node failure ends or requeues the job: which node failed is
		// the nodes' word, not the job's.
		if err == nil && (job.State == "NODE_FAIL" || job.Restarts > restarts) {
			list := ran
			if list == "" {
				list = job.Nodes
			}
			job.Failed, _ = slurm.FailedNodes(ctx, list)
		}
		r.slurmSend(slurmNews{sr: sr, kind: "shown", id: id, job: job, err: err})
	}()
}

// slurmBackend runs a step as a Slurm job (see the top of this file).
type slurmBackend struct{ sr *stepRun }

func (b *slurmBackend) launch(env, args []string, _ *os.File) error {
	return b.sr.launchSlurm(env, args)
}
func (b *slurmBackend) stop(grace time.Duration)           { b.sr.stopSlurm(grace) }
func (b *slurmBackend) freeze(on bool, now time.Time) bool { return b.sr.freezeSlurm(on, now) }
func (b *slurmBackend) freezePending() bool                { return false }
func (b *slurmBackend) look(now time.Time)                 { b.sr.pollSlurm(now) }
func (b *slurmBackend) remoteClock() bool                  { return true }

// ended: the job's processes are on another node; nothing of them is
// signalled from here, and Slurm says whether it lives. Its status file
// and Slurm's word are reconciled by slurmEnd.
func (b *slurmBackend) ended(st *supervise.Status, now time.Time) *supervise.Status {
	sr := b.sr
	sr.settleRequeued(st, now)
	if sr.staleStatus(st) {
		st = nil
	}
	if st != nil {
		if st.State == "running" && sr.pr.state.Slurm.Queued() {
			sr.slurmStarted(st.Started, now)
		}
		return sr.slurmEnd(st, now)
	}
	// No status file yet, or one unchanged: Slurm's word may end it.
	cur, err := supervise.ReadStatus(sr.files.status)
	if err != nil || sr.staleStatus(cur) {
		cur = nil
	}
	return sr.slurmEnd(cur, now)
}

func (b *slurmBackend) queue() (time.Duration, bool, time.Time) {
	sj := b.sr.pr.state.Slurm
	if sj == nil {
		return 0, false, time.Time{}
	}
	return sj.QueueWait, sj.Queued(), sj.StartsAt
}

// node is the address of the node the job's batch script runs on, ""
// until Slurm has said which.
func (b *slurmBackend) node() string { return b.sr.job.nodeAddr }

func (b *slurmBackend) restore(start record, _ *supervise.Status) { b.sr.readoptSlurm(start.Job) }

func (b *slurmBackend) alive(service bool) (bool, string) {
	sr := b.sr
	sr.findUnjournaled()
	alive, word := slurmAlive(sr.job.id)
	sr.job.word = word
	if service {
		return alive, fmt.Sprintf("re-adopted the service's Slurm job %s (%s): no reload", sr.job.id, word)
	}
	return alive, fmt.Sprintf("re-adopted step %d's Slurm job %s (%s): not submitted again", sr.step.Index+1, sr.job.id, word)
}

func (b *slurmBackend) gone() (bool, string) {
	sr := b.sr
	if sr.job.id != "" {
		// Slurm ended it while no runner watched: the loop settles it
		// from its status file, or from Slurm's final word.
		return true, fmt.Sprintf("step %d's Slurm job %s ended while no runner watched (%s)", sr.step.Index+1, sr.job.id, sr.job.word)
	}
	return false, fmt.Sprintf("step %d was never submitted to Slurm (%s): submitting it now", sr.step.Index+1, sr.job.word)
}
