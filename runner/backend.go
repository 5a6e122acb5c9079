package runner

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/greenlight-run/greenlight/runner/supervise"
)

// backend is where a step's try runs: here, under its supervisor detached
// in a session of its own (local), or as a Slurm job whose batch script
// execs the supervisor on a node (slurmBackend). The step's files (log,
// status, results) are read the same way for both; what differs is how
// the step is started, signalled, frozen, known to live or to have ended,
// and taken back after a restart. A third backend implements this and
// touches nothing else.
type backend interface {
	// launch starts the supervisor (args after the command) in env; the
	// supervisor's own last words go to log.
	launch(env, args []string, log *os.File) error
	// stop ends the step, grace apart between its signals.
	stop(grace time.Duration)
	// freeze stops (on) or continues the running step; it reports
	// whether the step took it.
	freeze(on bool, now time.Time) bool
	// freezePending says a freeze was asked before the step could take
	// it: follow looks again at every poll, not every 250 ms.
	freezePending() bool
	// look runs first in every follow (a job's controller asked).
	look(now time.Time)
	// ended takes the status file's word, st when it changed since the
	// last look (nil when not), and says how the step ended: nil while it
	// runs.
	ended(st *supervise.Status, now time.Time) *supervise.Status
	// queue is how long the step waited in a queue and whether it still
	// waits, with the queue's expected start: a phase's timeout counts
	// neither.
	queue() (waited time.Duration, queued bool, startsAt time.Time)
	// node is where the step runs, for ${GREENLIGHT_NODE}: "localhost",
	// or "" until its node is known.
	node() string
	// remoteClock says the status file's times are another machine's.
	remoteClock() bool
	// restore takes the step back after a restart: its journaled start,
	// and its status file when it could be read.
	restore(start record, st *supervise.Status)
	// alive says, at a restart, whether the step still runs, and in what
	// words to say it was re-adopted (service: it is a service).
	alive(service bool) (alive bool, adopted string)
	// gone says, at a restart, what to do with a step that no longer
	// runs: settle it from what it left (its end is read by follow), or
	// run it again; why is said.
	gone() (settle bool, why string)
}

// newBackend is the backend a step's try runs on: its phase's Slurm
// settings say which.
func newBackend(sr *stepRun) backend {
	if sr.pr.ph.Slurm != nil {
		sr.job = &slurmJob{}
		return &slurmBackend{sr}
	}
	return &localBackend{sr}
}

// localBackend runs a step here: its supervisor detached in a session of
// its own, reaped by this runner when it started it, its process group
// signalled directly.
type localBackend struct{ sr *stepRun }

func (b *localBackend) launch(env, args []string, log *os.File) error {
	sr, r := b.sr, b.sr.r
	cmd := exec.Command(r.opts.Self[0], args...)
	cmd.Env = env
	cmd.Dir = sr.step.Dir
	cmd.Stdout, cmd.Stderr = log, log // the supervisor's own last words
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	sr.proc.sup = cmd.Process.Pid
	sr.proc.lastAlive = sr.started
	go func() {
		cmd.Wait() // a non-zero exit is the step's; the code says which
		ex := stepExit{sr: sr, code: -1}
		if cmd.ProcessState != nil && cmd.ProcessState.Exited() {
			ex.code = cmd.ProcessState.ExitCode()
		}
		select {
		case r.watch.exited <- ex:
		case <-r.life.done:
		}
	}()
	return nil
}

// stop stops the step's process group (SIGINT, SIGTERM, SIGKILL, grace
// apart; a service's stop_timeout instead of grace), or its supervisor
// before it started the command.
func (b *localBackend) stop(grace time.Duration) {
	sr := b.sr
	if sr.proc.pgid <= 0 {
		if st, err := supervise.ReadStatus(sr.files.status); err == nil {
			sr.proc.pgid = st.PGID
		}
	}
	pgid := sr.proc.pgid
	if sr.step != nil && sr.pr.ph.Service != nil && sr.pr.ph.Service.StopTimeout > 0 {
		grace = sr.pr.ph.Service.StopTimeout
	}
	if pgid > 0 {
		go supervise.StopGroup(pgid, grace)
	} else if sr.proc.sup > 0 {
		// Not started its command yet: the supervisor passes it on.
		syscall.Kill(sr.proc.sup, syscall.SIGTERM)
	}
}

func (b *localBackend) freeze(on bool, now time.Time) bool {
	sr := b.sr
	if sr.proc.pgid == 0 {
		// Started moments ago: its status file may already say where.
		if st, err := supervise.ReadStatus(sr.files.status); err == nil {
			sr.proc.pgid, sr.proc.pausesClock = st.PGID, st.PausesClock
		}
	}
	return sr.proc.pgid > 0 && sr.freeze(on, now)
}

func (b *localBackend) freezePending() bool {
	sr := b.sr
	return sr.r.q.frozen && sr.proc.pgid == 0 && sr.pr.ph.Service == nil
}

func (b *localBackend) look(time.Time) {}

func (b *localBackend) ended(st *supervise.Status, now time.Time) *supervise.Status {
	sr, r := b.sr, b.sr.r
	if st != nil {
		if sr.proc.pgid == 0 && st.PGID > 0 {
			sr.proc.pgid = st.PGID
			if r.q.frozen && sr.pr.ph.Service == nil {
				sr.freeze(true, now)
			}
		}
		if st.Supervisor > 0 {
			sr.proc.sup = st.Supervisor
		}
		if st.State == "exited" {
			return st
		}
	}
	if !sr.proc.reaped && now.Sub(sr.proc.lastAlive) <= 5*time.Second {
		return nil
	}
	sr.proc.lastAlive = now
	if !sr.proc.reaped && supervise.Alive(sr.proc.sup, sr.files.status) {
		return nil
	}
	// Re-check: it may have written its status just now.
	if st, err := supervise.ReadStatus(sr.files.status); err == nil && st.State == "exited" {
		return st
	} else if err == nil && st.State == supervise.StateEnded {
		// Its command ended (its exit status written, by its supervisor or
		// by its own shell), and its supervisor died: the step's outcome
		// is known, and it does not run again; what is left is stopped here.
		left := sr.stopLeft()
		switch {
		case st.EndFromShell:
			r.warn(fmt.Sprintf("%s: step %d's supervisor died before it wrote the step's end; its own shell wrote exit %d: the run is taken as it ended, not run again%s", sr.pr.ph.Label(), sr.step.Index+1, st.ExitCode, left))
		case left != "":
			r.warn(fmt.Sprintf("%s: step %d's supervisor died after its command ended (exit %d)%s", sr.pr.ph.Label(), sr.step.Index+1, st.ExitCode, left))
		}
		st.State = "exited"
		return st
	}
	if sr.proc.reaped && sr.proc.waitCode >= 0 {
		// Its status file could not be written (a full disk, the state
		// dir removed): the supervisor's exit code is the step's.
		r.warn(fmt.Sprintf("%s: step %d's status file could not be written (%s); its exit code %d is taken from its supervisor",
			sr.pr.ph.Label(), sr.step.Index+1, spaceNote(sr.files.status), sr.proc.waitCode))
		return &supervise.Status{State: "exited", ExitCode: sr.proc.waitCode, Ended: now}
	}
	return &supervise.Status{State: "exited", ExitCode: -1, Error: "its supervisor died (machine restarted or killed); the step's end was not seen", Ended: now, Lost: true}
}

func (b *localBackend) queue() (time.Duration, bool, time.Time) { return 0, false, time.Time{} }
func (b *localBackend) node() string                            { return "localhost" }
func (b *localBackend) remoteClock() bool                       { return false }

func (b *localBackend) restore(start record, st *supervise.Status) {
	if st != nil {
		b.sr.proc.pgid, b.sr.proc.sup = st.PGID, st.Supervisor
	}
}

func (b *localBackend) alive(service bool) (bool, string) {
	sr := b.sr
	if !supervise.Alive(sr.proc.sup, sr.files.status) {
		// Its pid may not have reached the journal (the last runner was
		// killed as it started the step): look for it by its status file.
		pid := supervise.Find(sr.files.status)
		if pid == 0 {
			return false, ""
		}
		sr.proc.sup = pid
	}
	if service {
		return true, fmt.Sprintf("re-adopted the running service (pid %d): no reload", sr.proc.sup)
	}
	return true, fmt.Sprintf("re-adopted step %d still running (pid %d)", sr.step.Index+1, sr.proc.sup)
}

func (b *localBackend) gone() (bool, string) {
	return false, "its supervisor died (machine restarted or killed); the step's end was not seen"
}
