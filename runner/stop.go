package runner

import "strings"

// stopAll stops the campaign: pending phases end stopped (journaled), a
// running step is signalled and ends stopped, a ready service is stopped
// as no longer needed; the stop and the units it cut are said.
func (r *Runner) stopAll() {
	r.q.stopping = true
	var cut []string // the units the stop cuts: they run again
	for _, pr := range r.phases {
		switch pr.state.Status {
		case Pending, Waiting:
			pr.stopPrewarm()
			pr.state.Status, pr.state.Reason = Stopped, "campaign stopped"
			// Journaled, so that status and the record read from the
			// journal (no runner left) say "stopped" as the window does;
			// resume runs it again, as any stopped phase.
			r.journal(record{Kind: recPhaseEnd, T: r.opts.Now(), Phase: pr.ph.ID, Attempt: pr.state.Attempt, Hash: pr.ph.Hash, Status: Stopped, Reason: "campaign stopped",
				Unstarted: pr.state.Started.IsZero()})
		case Running, Ready:
			// A step already being stopped for another reason (a skip said a
			// moment ago) ends as that: the stop does not take the skip back.
			if pr.cur != nil && !pr.cur.proc.exitedSeen && (pr.cur.proc.stopFor == "" || pr.cur.proc.pointOnly) {
				if pr.ph.Service != nil && pr.state.Status == Ready {
					pr.cur.proc.stopFor, pr.cur.proc.stopWhy = Done, ""
				} else {
					pr.cur.proc.stopFor, pr.cur.proc.stopWhy = Stopped, "campaign stopped"
				}
				pr.cur.stop(r.opts.Grace)
				if pr.state.Status == Running && pr.ph.Service == nil {
					cut = append(cut, pr.ph.ID+" "+pr.cur.step.Label())
				}
			}
		}
	}
	msg := "stopped by you: signalling every running step"
	if len(cut) > 0 {
		msg += "; cut, to run again: " + strings.Join(cut, ", ")
	}
	r.warn(msg)
}
