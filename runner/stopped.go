package runner

import (
	"fmt"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/state"
)

// A verb said to a stopped campaign (no runner runs it) is taken as any
// fact is: journaled under the state dir's lock, it acts when the
// campaign runs again, which reads it back as a runner would have.

// TakeWhileStopped journals verb v (one whose row says a stopped
// campaign takes it: approve, skip, a point's skip) for target (a phase,
// or state.PointTarget of a phase and a point) of a campaign that no
// runner runs, by the verbs' one precondition. It returns what to tell
// the person, from the same row.
func TakeWhileStopped(plan *campaign.Plan, stateDir string, v state.Verb, target string) (string, error) {
	phase, point := state.SplitTarget(target)
	dirs := Layout(stateDir)
	lock, err := takeLock(dirs.Lock())
	if err != nil {
		return "", err
	}
	defer lock.Close()
	st, err := Replay(plan, stateDir)
	if err != nil {
		return "", err
	}
	ph := plan.Phase(phase)
	p := st.Phase(phase)
	if ph == nil || p == nil {
		return "", fmt.Errorf("no phase %q", phase)
	}
	said, ok := state.SaidStopped(v, target, p.Status)
	if !ok {
		return "", fmt.Errorf("%s is not taken while the campaign is stopped", v)
	}
	if point != "" {
		if _, err := pointsOf(ph, point); err != nil {
			return "", err
		}
	}
	recs, err := readJournal(dirs.Journal())
	if err != nil {
		return "", err
	}
	hist, times := journalHistory(recs)
	attempt, gateOpen := 0, false
	if h := hist[phase]; h != nil {
		attempt, gateOpen = h.attempt, h.gate
	}
	if err := state.Allowed(v, ph, p, gateOpen); err != nil {
		return "", err
	}
	rec := record{Kind: state.Record(v, p.Status), Phase: phase, Attempt: attempt, Reason: point}
	if rec.Kind == recPhaseEnd {
		// A skip ends the phase with the campaign's stop: the record reads
		// it ended then, the campaign still stopped, not run past its end.
		rec.T, rec.Hash, rec.Status = times.prevEnded, ph.Hash, Skipped
		rec.Reason = "by you, while the campaign was stopped" + (&phaseRun{ph: ph, state: *p}).unitsDoneSaid()
	}
	if err := appendTo(dirs, rec); err != nil {
		return "", err
	}
	return said, nil
}

// appendTo appends rec to the journal, fsynced, for a caller that holds
// the state dir's lock.
func appendTo(dirs Layout, rec record) error {
	j, err := openJournal(dirs.Journal())
	if err != nil {
		return err
	}
	defer j.close()
	if rec.T.IsZero() {
		rec.T = time.Now()
	}
	return j.write(rec, true)
}

// NoteWhileStopped journals a person's note for a campaign no runner
// runs; `greenlight report` (or the next run) writes it into the record.
func NoteWhileStopped(stateDir, text string) error {
	text = strings.TrimSpace(text)
	if text == "" {
		return fmt.Errorf("an empty note")
	}
	dirs := Layout(stateDir)
	lock, err := takeLock(dirs.Lock())
	if err != nil {
		return err
	}
	defer lock.Close()
	return appendTo(dirs, record{Kind: recNote, Reason: text})
}
