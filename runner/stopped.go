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

// TakeWhileStopped journals verb ("skip", or "approve") for phase (and,
// for a skip, point: one point of a sweep, or "") of a campaign that no
// runner runs. It returns what to tell the person.
func TakeWhileStopped(plan *campaign.Plan, stateDir, verb, phase, point string) (string, error) {
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
	recs, err := readJournal(dirs.Journal())
	if err != nil {
		return "", err
	}
	hist, times := journalHistory(recs)
	attempt, gateOpen := 0, false
	if h := hist[phase]; h != nil {
		attempt, gateOpen = h.attempt, h.gate
	}
	var rec record
	var said string
	switch {
	case verb == "approve":
		if err := state.Allowed(VerbApprove, ph, p, gateOpen); err != nil {
			return "", err
		}
		rec = record{Kind: verbRecords[VerbApprove], Phase: phase}
		said = fmt.Sprintf("%s greenlit: it starts when the campaign runs again", phase)
	case verb == "skip" && point != "":
		if _, err := pointsOf(ph, point); err != nil {
			return "", err
		}
		if err := state.Allowed(VerbSkipPoint, ph, p, gateOpen); err != nil {
			return "", err
		}
		rec = record{Kind: verbRecords[VerbSkipPoint], Phase: phase, Attempt: attempt, Reason: point}
		said = fmt.Sprintf("%s: point %s skipped: it stays skipped when the campaign runs again", phase, point)
	case verb == "skip" && p.Status == Failed:
		if err := state.Allowed(VerbSkip, ph, p, gateOpen); err != nil {
			return "", err
		}
		rec = record{Kind: recordFor(VerbSkip, Failed), Phase: phase, Attempt: attempt}
		said = fmt.Sprintf("%s let go: it stays failed, and does not run again when the campaign runs", phase)
	case verb == "skip":
		if err := state.Allowed(VerbSkip, ph, p, gateOpen); err != nil {
			return "", err
		}
		// It ends with the campaign's stop: the record reads it ended
		// then, the campaign still stopped, not run past its end.
		rec = record{Kind: verbRecords[VerbSkip], T: times.prevEnded, Phase: phase, Attempt: attempt, Hash: ph.Hash, Status: Skipped, Reason: "by you, while the campaign was stopped" + (&phaseRun{ph: ph, state: *p}).unitsDoneSaid()}
		said = fmt.Sprintf("%s skipped: what it measured is kept; the campaign goes on without it when it runs again", phase)
	default:
		return "", fmt.Errorf("%s is not taken while the campaign is stopped", verb)
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
