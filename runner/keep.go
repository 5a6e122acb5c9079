package runner

// A service kept up for a failed phase: a benchmark point that failed
// once (a connection reset at concurrency 64) must not cost the model
// load of the server it ran on (36 minutes for a 1T model). While a
// failed phase that uses the service, or whose failure blocks one that
// does, may run again, the service stays up: retried, the phase runs on
// it at once. It goes when you let the phase go (s, greenlight skip), at
// its keep: limit (a night alone), or with the campaign's stop.

import (
	"fmt"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/state"
)

// KeptFor lists the failed phases the service svc stays up for: each
// failed and not let go, that uses svc, or that a blocked phase using svc
// comes after. phase gives a phase's state by id. The one rule, for the
// runner that keeps the service and for the notice of the failure.
func KeptFor(plan *campaign.Plan, svc *campaign.Phase, phase func(id string) *PhaseState) []string {
	if svc.Service == nil || svc.Service.Keep == 0 {
		return nil
	}
	var out []string
	for _, f := range plan.Phases {
		fs := phase(f.ID)
		if fs == nil || fs.Status != Failed || fs.LetGo || f.ID == svc.ID {
			continue
		}
		if plan.Uses(f.ID, svc.ID) {
			out = append(out, f.ID)
			continue
		}
		for _, b := range plan.Phases {
			if bs := phase(b.ID); bs != nil && bs.Status == Blocked && plan.Uses(b.ID, svc.ID) && plan.After(b.ID, f.ID) {
				out = append(out, f.ID)
				break
			}
		}
	}
	return out
}

// keptWords says what a kept service waits for, and the keys.
func keptWords(ids []string, until time.Time) string {
	list := strings.Join(ids, ", ")
	s := fmt.Sprintf("kept for %s (failed): r on %s runs it again on this server, s on it lets the server go", list, ids[0])
	if !until.IsZero() {
		s += "; until " + until.Format("15:04") + " (keep:)"
	}
	return s
}

// keep says whether the ready service pr, which no phase to run needs,
// stays up for failed phases that may run again; the first time, it says
// so. Past its keep: limit it goes, said.
func (r *Runner) keep(pr *phaseRun, now time.Time) bool {
	ids := KeptFor(r.plan, pr.ph, r.stateOf)
	if len(ids) == 0 {
		pr.unkeep()
		return false
	}
	limit := pr.ph.Service.Keep
	if pr.keptSince.IsZero() {
		pr.keptSince = now
		var until time.Time
		if limit > 0 {
			until = now.Add(limit)
		}
		pr.state.Kept = keptWords(ids, until)
		r.emit(Event{Kind: Warning, Phase: pr.ph.ID, Message: fmt.Sprintf("%s %s; greenlight retry %s, or greenlight skip %s, from a shell", pr.ph.Label(), pr.state.Kept, ids[0], ids[0])})
		return true
	}
	if limit > 0 && now.Sub(pr.keptSince) >= limit {
		r.emit(Event{Kind: Warning, Phase: pr.ph.ID, Message: fmt.Sprintf("%s was kept %s for %s and no retry came (keep: %s): stopping it",
			pr.ph.Label(), format.Duration(now.Sub(pr.keptSince)), strings.Join(ids, ", "), format.Duration(limit))})
		pr.unkeep()
		return false
	}
	return true
}

// unkeep: the service is no longer kept (a phase needs it again, or it
// goes).
func (pr *phaseRun) unkeep() { pr.keptSince, pr.state.Kept = time.Time{}, "" }

// letGo takes your word that a failed phase will not run again: no
// service stays up for it. Journaled, so a runner started again keeps
// nothing for it either.
func (r *Runner) letGo(pr *phaseRun) {
	pr.state.LetGo = true
	r.journal(record{Kind: state.Record(VerbSkip, Failed), Phase: pr.ph.ID, Attempt: pr.state.Attempt})
	r.emit(Event{Kind: Warning, Phase: pr.ph.ID, Message: fmt.Sprintf("%s let go: it stays failed, no service is kept up for it, and it does not run again when the campaign runs (greenlight retry %s runs it)", pr.ph.Label(), pr.ph.ID)})
}

// stateOf is the state of phase id as the loop holds it; nil for none.
func (r *Runner) stateOf(id string) *PhaseState {
	if o, err := r.find(id); err == nil {
		return &o.state
	}
	return nil
}
