package runner

import (
	"fmt"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/state"
)

// Replay is what a campaign's journal and step folders say happened, for
// `greenlight report` and `greenlight status` when no runner runs it. It
// runs, signals and writes nothing, and decides nothing: a phase is as
// its last attempt was recorded (running, or ended with its status), not
// what a runner resuming it would make of it (re-run, re-adopt).
func Replay(plan *campaign.Plan, stateDir string) (*State, error) {
	if stateDir == "" {
		stateDir = state.DefaultStateDir(plan)
	}
	dirs := Layout(stateDir)
	recs, err := readJournal(dirs.Journal())
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("no journal in %s: this campaign has not run here (or use --state-dir)", stateDir)
	}
	hist, times := journalHistory(recs)
	if times.started.IsZero() {
		times.started = recs[0].T
	}
	// A Runner value only to hold the phases for snapshot(): never
	// started, no journal, no lock; quiet, so the steps read back announce
	// nothing.
	v := &Runner{plan: plan, opts: Options{Now: time.Now, Poll: time.Second, Grace: time.Second}, dirs: dirs, times: times, mode: runMode{quiet: true}}
	v.store.hist = loadHistory(dirs.History())
	v.claims = claimsOf(recs)
	for _, ph := range plan.Phases {
		pr := newPhaseRun(ph, dirs.Artifacts())
		v.phases = append(v.phases, pr)
		h := hist[ph.ID]
		if h == nil {
			continue
		}
		pr.state.Attempt, pr.gateOpen = h.attempt, h.gate
		pr.state.Changed = h.editedSince(ph)
		pr.state.Readopted = h.readopted
		switch {
		case h.open:
			v.restoreSteps(pr, h, len(ph.AllSteps()))
			pr.state.Status, pr.state.Started = Running, h.started
			if ph.Service != nil && h.ready {
				pr.state.Status = Ready // up and serving, as the live runner had it
			}
			pr.state.Ran, pr.state.RanRuns = h.ranBefore, h.ranRuns
			if sr := pr.cur; sr != nil && sr.proc.exitedSeen && pr.state.Steps[sr.step.Index].Status == Done && sr.step.Index+1 < len(ph.AllSteps()) {
				pr.state.Current = sr.step.Index + 1
			}
			pr.cur = nil
		case h.end != nil && h.end.Unstarted && h.end.Status == Stopped && times.lastStart.After(h.end.T):
			// Stopped before it started, by a stop a later runner's start
			// undid: pending again, as that runner had it (not "stopped"
			// by a stop minutes before).
		case h.end != nil:
			v.restoreEnded(pr, h)
			pr.state.LetGo = h.letGo && h.end.Status == Failed
		}
		applySkips(pr, h)
		pr.settle()
	}
	v.warnings = warningsOf(recs)
	v.notes = notesOf(recs)
	s := v.snapshot()
	// Finished, if the journal's last word is the campaign's end and every
	// phase it knows of ended.
	done := !times.prevEnded.IsZero()
	for _, p := range s.Phases {
		if !p.Status.Finished() || p.Ended.After(times.prevEnded) {
			done = false
		}
	}
	if done {
		s.Finished, s.Ended, s.Now = true, times.prevEnded, times.prevEnded
	}
	return s, nil
}

// Journal is the journal of a campaign no runner runs, as a client reads
// and writes it (client.Journal): Replay, TakeWhileStopped and
// NoteWhileStopped, handed to the client by the command.
type Journal struct{}

func (Journal) Replay(plan *campaign.Plan, stateDir string) (*State, error) {
	return Replay(plan, stateDir)
}

func (Journal) TakeWhileStopped(plan *campaign.Plan, stateDir string, v state.Verb, target string) (string, error) {
	return TakeWhileStopped(plan, stateDir, v, target)
}

func (Journal) NoteWhileStopped(stateDir, text string) error { return NoteWhileStopped(stateDir, text) }
