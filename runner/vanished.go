package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/greenlight-run/greenlight/internal/files"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

// A state dir or journal removed while the campaign runs (a clean-up
// script, `rm -rf .greenlight` in the wrong pane) must not turn live steps
// into dead ones. The runner looks once a second; when its journal is gone
// it makes the folders again, writes the journal anew from what it holds
// in memory, gives running steps their folders back so their supervisors
// can record how they ended, and says so.

// checkState looks, at most once a second, whether the journal is still
// the file the runner appends to.
func (r *Runner) checkState(now time.Time) {
	if r.store.jr == nil || now.Sub(r.looked.state) < time.Second {
		return
	}
	r.looked.state = now
	if r.store.jr.stillAt(r.dirs.Journal()) {
		return
	}
	// The whole dir went if its lock file went too, even when something
	// (the socket's watch, a supervisor) has made the folder again since.
	_, rootErr := os.Stat(r.dirs.Root())
	rootGone := rootErr != nil || r.store.lock != nil && !sameFile(r.store.lock, r.dirs.Lock())
	what := "the journal " + r.dirs.Journal() + " was removed"
	if rootGone {
		what = "the state dir " + r.dirs.Root() + " was removed"
	}
	if err := r.rebuildState(); err != nil {
		r.warn(fmt.Sprintf("%s while the campaign ran, and greenlight could not make it again (%v): running steps go on, but a restart of greenlight will not know them", what, err))
		return
	}
	msg := fmt.Sprintf("%s while the campaign ran: greenlight made it again and wrote the journal anew from what it holds; running steps go on", what)
	if rootGone {
		msg += "; the logs and result files of steps already ended are gone (their results are in the results file)"
	}
	r.warn(msg)
}

// rebuildState makes the state dir's folders, its lock and its journal
// again, and the folders of running steps.
func (r *Runner) rebuildState() error {
	for _, d := range []string{r.dirs.Steps(), r.dirs.Artifacts()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if _, err := os.Stat(r.dirs.Lock()); err != nil {
		// Our lock was on the removed file: take the new one, so a second
		// greenlight is still refused.
		if lf, err := takeLock(r.dirs.Lock()); err == nil {
			r.unlock()
			r.store.lock = lf
		}
	}
	for _, pr := range r.phases {
		os.MkdirAll(pr.artDir, 0o755)
		if sr := pr.cur; sr != nil && !sr.proc.exitedSeen {
			if err := os.MkdirAll(sr.dir, 0o755); err != nil {
				return err
			}
			if _, err := os.Stat(sr.files.results); err != nil {
				// The step's next `>> $GREENLIGHT_RESULTS` makes a new file.
				sr.out.resOff, sr.out.resRest, sr.out.sumOff = 0, nil, 0
			}
			if _, err := os.Stat(sr.files.status); err != nil {
				supervise.Preallocate(sr.files.status)
				sr.proc.statusSeen = statKey{}
			}
			sr.watchFolder() // the old watch went with the folder
		}
	}
	var buf bytes.Buffer
	for _, rec := range r.memoryJournal() {
		b, _ := json.Marshal(rec)
		buf.Write(append(b, '\n'))
	}
	if err := files.Replace(r.dirs.Journal(), buf.Bytes(), true); err != nil {
		return err
	}
	jr, err := openJournal(r.dirs.Journal())
	if err != nil {
		return err
	}
	r.store.jr.close()
	r.store.jr = jr
	return nil
}

// memoryJournal is the journal that would have led to the state the
// runner holds now.
func (r *Runner) memoryJournal() []record {
	recs := []record{{T: r.times.started, Kind: recCampaign, Hash: r.plan.Hash}}
	for _, pr := range r.phases {
		ps := &pr.state
		if pr.gateOpen {
			recs = append(recs, record{T: r.times.started, Kind: recGate, Phase: ps.ID})
		}
		if ps.Started.IsZero() {
			continue
		}
		recs = append(recs, record{T: ps.Started, Kind: recPhaseStart, Phase: ps.ID, Attempt: ps.Attempt, Hash: pr.ph.Hash})
		for _, ss := range ps.Steps {
			if ss.Started.IsZero() || ss.Log == "" {
				continue
			}
			dir := strings.TrimSuffix(ss.Log, ".log")
			recs = append(recs, record{T: ss.Started, Kind: recStepStart, Phase: ps.ID, Step: ss.Index, Attempt: ss.Attempt, Dir: dir, Counters: ss.Counters})
			if sr := pr.cur; sr != nil && sr.step.Index == ss.Index && sr.proc.sup > 0 {
				recs = append(recs, record{T: ss.Started, Kind: recStepPID, Phase: ps.ID, Step: ss.Index, Attempt: ss.Attempt, PID: sr.proc.sup})
			}
			if ss.Job != "" {
				recs = append(recs, record{T: ss.Started, Kind: recStepJob, Phase: ps.ID, Step: ss.Index, Attempt: ss.Attempt, Job: ss.Job})
			}
			if ss.Status.Finished() {
				recs = append(recs, record{T: ss.Ended, Kind: recStepEnd, Phase: ps.ID, Step: ss.Index, Attempt: ss.Attempt,
					Status: ss.Status, Skip: ss.Skip, ExitCode: ss.ExitCode, Reason: ss.Reason})
			}
		}
		if ps.Status == Ready {
			recs = append(recs, record{T: ps.Started, Kind: recReady, Phase: ps.ID})
		}
		if ps.Status.Finished() {
			recs = append(recs, record{T: ps.Ended, Kind: recPhaseEnd, Phase: ps.ID, Attempt: ps.Attempt, Hash: pr.ph.Hash, Status: ps.Status, Reason: ps.Reason})
		}
	}
	for _, w := range r.warnings {
		recs = append(recs, record{T: r.times.started, Kind: recWarning, Reason: w})
	}
	for _, n := range r.notes {
		recs = append(recs, record{T: n.T, Kind: recNote, Reason: n.Text})
	}
	if r.q.finished {
		recs = append(recs, record{T: r.times.ended, Kind: recFinished})
	}
	return recs
}

// stillAt reports whether path is still the file the journal appends to.
func (j *journal) stillAt(path string) bool { return sameFile(j.f, path) }

// sameFile reports whether path names the file f has open.
func sameFile(f *os.File, path string) bool {
	var open, there syscall.Stat_t
	if syscall.Fstat(int(f.Fd()), &open) != nil || syscall.Stat(path, &there) != nil {
		return false
	}
	return open.Dev == there.Dev && open.Ino == there.Ino
}
