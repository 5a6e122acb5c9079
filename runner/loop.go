package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/runner/state"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

func (r *Runner) loop() {
	defer close(r.life.done)
	defer r.unlock()
	defer r.store.jr.close()
	// The cgroups left empty (a running step's stays) go first: the lock is
	// let go last, just before the runner's process writes its last words.
	defer supervise.RemoveCgroups(r.cgroup)
	now := r.opts.Now()
	if r.times.started.IsZero() {
		r.times.started = now // the instant the journal keeps: report reads the same
	}
	r.journal(record{T: now, Kind: recCampaign, Hash: r.plan.Hash})
	r.emit(Event{Kind: CampaignStarted, Message: fmt.Sprintf("campaign %s: %s", r.plan.Name, format.Count(len(r.plan.Phases), "phase"))})
	if r.staleCgroups > 0 {
		r.emit(Event{Kind: Progress, Message: fmt.Sprintf("removed %s with no process left in them", format.Count(r.staleCgroups, "empty greenlight cgroup"))})
	}
	// What this start has to say (resume's words, preflight's notes) is
	// journaled and sent; what earlier runners said is read back.
	for _, w := range r.warnings {
		r.journal(record{Kind: recWarning, Reason: w})
		r.emit(Event{Kind: Warning, Message: w})
	}
	r.warnings = lastWarnings(append(r.said, r.warnings...))
	r.said = nil
	// What it says that is no warning (a step re-adopted, the units a stop
	// kept) is an event: the event line and the window's log, not the
	// record's warnings, nor the status line a runner's death must hold.
	for _, m := range r.infos {
		r.emit(Event{Kind: Progress, Message: m})
	}
	r.infos = nil
	// The poll falls on whole multiples of Poll by the clock, as the GPU
	// sampler's does: one wakeup a second for both, not two.
	tick := time.NewTimer(untilNext(time.Now(), r.opts.Poll))
	defer tick.Stop()
	r.startWatcher()
	defer r.stopWatcher()
	r.step()
	for {
		select {
		case f := <-r.life.ctl:
			f()
		case ex := <-r.watch.exited:
			ex.sr.reaped(ex.code)
		case dir := <-r.watch.wake:
			r.woken(dir)
		case n := <-r.watch.slurm:
			n.sr.slurmHeard(n)
		case <-tick.C:
			tick.Reset(untilNext(time.Now(), r.opts.Poll))
		case <-r.life.quit:
			for _, pr := range r.phases {
				if pr.cur != nil && pr.cur.health.probe != nil {
					pr.cur.health.probe.cancel()
				}
			}
			r.emit(Event{Kind: Detached, Message: "greenlight let go; running steps go on, `greenlight run` again re-attaches"})
			r.closeSubs()
			return
		}
		r.step()
	}
}

// untilNext is the time from now to the next whole multiple of every.
func untilNext(now time.Time, every time.Duration) time.Duration {
	return now.Truncate(every).Add(every).Sub(now)
}

func (r *Runner) closeSubs() {
	r.pub.mu.Lock()
	defer r.pub.mu.Unlock()
	for _, s := range r.pub.subs {
		s.close()
	}
	r.pub.subs = nil
}

// step is one turn of the loop: follow what runs, then start what may.
func (r *Runner) step() {
	now := r.opts.Now()
	for _, pr := range r.phases {
		if pr.cur != nil {
			pr.cur.follow(now)
		}
	}
	r.checkDisk(now, false)
	r.checkState(now)
	r.scanArtifacts(now)
	// Fresh time: what follow() ended above ended after now.
	r.resumeBetweenSteps(r.opts.Now())
	r.schedule(r.opts.Now())
	r.checkFinished()
}

func (r *Runner) emit(e Event) {
	if r.mode.quiet {
		return
	}
	if e.Time.IsZero() {
		e.Time = r.opts.Now()
	}
	e.State = r.snapshot()
	r.pub.mu.Lock()
	for _, s := range r.pub.subs {
		s.push(e)
	}
	r.pub.mu.Unlock()
}

// journal appends rec to the journal, fsynced.
func (r *Runner) journal(rec record) { r.writeJournal(rec, true) }

// journalNoSync appends rec without fsync, for a record whose loss in a
// machine crash is harmless (the crash ends what it records too).
func (r *Runner) journalNoSync(rec record) { r.writeJournal(rec, false) }

func (r *Runner) writeJournal(rec record, sync bool) {
	if r.store.jr == nil {
		return // Replay's view: nothing is written
	}
	if rec.T.IsZero() {
		rec.T = r.opts.Now()
	}
	if err := r.store.jr.write(rec, sync); err != nil {
		r.warn(fmt.Sprintf("cannot write the journal (%v): a restart may not resume this", err))
	}
}

func (r *Runner) setPaused(p bool, why string) {
	if r.q.paused == p && r.q.pauseWhy == why {
		return
	}
	r.q.paused, r.q.pauseWhy = p, why
	if p {
		msg := "paused: running steps finish, nothing new starts"
		if why != "user" {
			msg = "paused: " + why
		}
		r.emit(Event{Kind: Paused, Message: msg})
	} else {
		r.emit(Event{Kind: Resumed, Message: "resumed"})
	}
}

func (r *Runner) find(id string) (*phaseRun, error) {
	for _, pr := range r.phases {
		if pr.ph.ID == id {
			return pr, nil
		}
	}
	return nil, fmt.Errorf("no phase %q", id)
}

func (r *Runner) skip(id string) error {
	pr, err := r.find(id)
	if err != nil {
		return err
	}
	if err := state.Allowed(VerbSkip, pr.ph, &pr.state, pr.gateOpen); err != nil {
		return err
	}
	why := "by you" + pr.unitsDoneSaid()
	switch st := pr.state.Status; {
	case st == Failed:
		r.letGo(pr)
	case st == Running || st == Ready:
		if pr.cur != nil && !pr.cur.proc.exitedSeen {
			pr.cur.proc.stopFor, pr.cur.proc.stopWhy, pr.cur.proc.pointOnly = Skipped, why, false
			pr.cur.stop(r.opts.Grace)
			r.emit(Event{Kind: Warning, Phase: id, Message: fmt.Sprintf("stopping %s to skip it", pr.ph.Label())})
		} else {
			r.endPhase(pr, Skipped, why)
		}
	default:
		r.endPhase(pr, Skipped, why)
	}
	return nil
}

func (r *Runner) retry(id string) error {
	pr, err := r.find(id)
	if err != nil {
		return err
	}
	if err := state.Allowed(VerbRetry, pr.ph, &pr.state, pr.gateOpen); err != nil {
		return err
	}
	pr.reset()
	r.journal(record{Kind: state.Record(VerbRetry, pr.state.Status), Phase: id, Attempt: pr.state.Attempt})
	pr.gateOpen = true // the person asked for it just now
	for _, o := range r.phases {
		if o.state.Status == Blocked {
			o.reset()
		}
	}
	r.q.stopping, r.q.finished = false, false
	r.emit(Event{Kind: Warning, Phase: id, Message: fmt.Sprintf("%s will run again", pr.ph.Label())})
	return nil
}

func (r *Runner) greenlight(id string) error {
	pr, err := r.find(id)
	if err != nil {
		return err
	}
	if err := state.Allowed(VerbApprove, pr.ph, &pr.state, pr.gateOpen); err != nil {
		return err
	}
	pr.gateOpen = true
	if pr.state.Status == Waiting {
		pr.state.Status = Pending
	}
	r.journal(record{Kind: state.Record(VerbApprove, pr.state.Status), Phase: id})
	r.emit(Event{Kind: Warning, Phase: id, Message: fmt.Sprintf("%s greenlit", pr.ph.Label())})
	return nil
}

func (r *Runner) checkFinished() {
	if r.q.finished {
		return
	}
	for _, pr := range r.phases {
		s := pr.state.Status
		if !s.Finished() {
			return // a ready service ends when schedule stops it
		}
		if pr.cur != nil && !pr.cur.proc.exitedSeen {
			return
		}
	}
	r.q.finished = true
	r.times.ended = r.opts.Now()
	if !r.times.ranAny {
		// Nothing ran in this attach: it ended when the journal says, its
		// last phase's end where a killed runner never wrote the
		// campaign's.
		r.times.ended = r.times.prevEnded
		if last := lastPhaseEnd(r.phases); last.After(r.times.ended) {
			r.times.ended = last
		}
		if r.times.ended.IsZero() {
			r.times.ended = r.opts.Now()
		}
	}
	if len(r.kept) > 0 {
		// What steps kept running (leave_running) is the campaign's: it
		// ends with it.
		stopped := supervise.StopKept(r.kept, r.opts.Grace)
		var names []string
		for _, k := range stopped {
			names = append(names, fmt.Sprintf("pid %d %s", k.PID, k.Name))
		}
		if len(names) > 0 {
			r.warn(fmt.Sprintf("the campaign ended: stopped %d process(es) steps kept running (leave_running): %s", len(names), strings.Join(names, ", ")))
		}
		r.kept = nil
		r.journal(record{Kind: recKeptStopped})
	}
	supervise.RemoveCgroups(r.cgroup)
	if !r.times.ended.Equal(r.times.prevEnded) {
		r.journal(record{Kind: recFinished, T: r.times.ended})
		r.times.prevEnded = r.times.ended
	}
	failed := 0
	for _, pr := range r.phases {
		if pr.state.Status.IsFailure() {
			failed++
		}
	}
	skipped := 0
	for _, pr := range r.phases {
		if pr.state.Status == Skipped {
			skipped++
		}
	}
	msg := "campaign finished: every phase done"
	if skipped > 0 {
		msg = fmt.Sprintf("campaign finished: every phase done or skipped (%s skipped)", format.Count(skipped, "phase"))
	}
	if failed > 0 {
		msg = fmt.Sprintf("campaign finished: %s failed or blocked", format.Count(failed, "phase"))
	}
	if r.q.stopping {
		msg = "campaign stopped"
	}
	if !r.times.ranAny {
		msg = fmt.Sprintf("campaign already finished at %s, nothing ran again (%s); `greenlight run --fresh %s` starts it over, keeping the old results aside",
			r.times.ended.Format("2006-01-02 15:04"), strings.TrimPrefix(msg, "campaign finished: "), r.plan.File)
	}
	r.emit(Event{Kind: CampaignFinished, Message: msg})
}

func (r *Runner) scanArtifacts(now time.Time) {
	if now.Sub(r.looked.art) < 2*time.Second {
		return
	}
	r.looked.art = now
	for _, pr := range r.phases {
		if pr.state.Status == Running || pr.artScanPending {
			pr.state.Artifacts = r.phaseArtifacts(pr, now)
			pr.artScanPending = false
		}
	}
}

func globArtifacts(globs []string, dir string) []Artifact {
	var out []Artifact
	seen := map[string]bool{}
	add := func(m string) {
		if seen[m] {
			return
		}
		seen[m] = true
		if fi, err := os.Stat(m); err == nil && fi.Mode().IsRegular() {
			out = append(out, Artifact{Path: m, Size: fi.Size(), Modified: fi.ModTime()})
		}
	}
	for _, g := range globs {
		ms, _ := filepath.Glob(g)
		for _, m := range ms {
			add(m)
		}
	}
	if dir != "" {
		ms, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, m := range ms {
			add(m)
		}
	}
	slices.SortFunc(out, func(a, b Artifact) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// startWatcher watches the folders of running steps, so that a result is
// read as soon as it is written, without polling; an idle monitor then
// wakes once a second. Without inotify the runner falls back to its tick.
func (r *Runner) startWatcher() {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		r.warn(fmt.Sprintf("cannot watch step folders (%v): results are read every %s", err, r.opts.Poll))
		return
	}
	r.watch.fs = w
	go func() {
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				select {
				case r.watch.wake <- filepath.Dir(ev.Name):
				default: // full: the tick catches up
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
			}
		}
	}()
	for _, pr := range r.phases {
		if pr.cur != nil && !pr.cur.proc.exitedSeen {
			pr.cur.watchFolder()
		}
	}
}

func (r *Runner) stopWatcher() {
	if r.watch.fs != nil {
		r.watch.fs.Close()
	}
}

func (sr *stepRun) watchFolder() {
	r := sr.r
	if r.watch.fs != nil && sr.dir != "" {
		r.watch.fs.Add(sr.dir)
	}
}

func (sr *stepRun) unwatchFolder() {
	r := sr.r
	if r.watch.fs != nil && sr.dir != "" {
		r.watch.fs.Remove(sr.dir)
	}
}

// woken follows the running step whose folder changed.
func (r *Runner) woken(dir string) {
	now := r.opts.Now()
	for _, pr := range r.phases {
		if pr.cur != nil && pr.cur.dir == dir && !pr.cur.proc.exitedSeen {
			pr.cur.follow(now)
			return
		}
	}
}

func lastPhaseEnd(phases []*phaseRun) time.Time {
	var last time.Time
	for _, pr := range phases {
		if pr.state.Ended.After(last) {
			last = pr.state.Ended
		}
	}
	return last
}
