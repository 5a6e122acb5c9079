package runner

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/greenlight-run/greenlight/internal/format"
)

// Freezing: SIGSTOP and SIGCONT to running steps' groups, and their timeout clocks.

func (r *Runner) setFrozen(f bool) error {
	if r.q.frozen == f {
		return nil
	}
	kind, word := Frozen, "frozen"
	if !f {
		kind, word = Thawed, "thawed"
	}
	if f {
		running := false
		for _, pr := range r.phases {
			running = running || pr.cur != nil && pr.ph.Service == nil && !pr.cur.proc.exitedSeen
		}
		if !running {
			return errors.New("no step is running to freeze (a service is never frozen: its clients would time out)")
		}
	}
	n := 0
	for _, pr := range r.phases {
		if sr := pr.cur; sr != nil && pr.ph.Service == nil && !sr.proc.exitedSeen && sr.on().freeze(f, r.opts.Now()) {
			n++
		}
	}
	r.q.frozen = f
	r.emit(Event{Kind: kind, Message: fmt.Sprintf("%s %s", word, format.Count(n, "running step"))})
	return nil
}

// freezeStep stops (SIGSTOP) or continues a step's process group, stops
// or starts its timeout clock in the supervisor (when the supervisor takes
// the signals) and in the phase, and reports whether the group got it.
func (sr *stepRun) freeze(frozen bool, now time.Time) bool {
	r, pr := sr.r, sr.pr
	group, clock := syscall.SIGCONT, syscall.SIGUSR2
	if frozen {
		group, clock = syscall.SIGSTOP, syscall.SIGUSR1
	}
	if syscall.Kill(-sr.proc.pgid, group) != nil {
		return false
	}
	if sr.proc.pausesClock && sr.proc.sup > 0 {
		syscall.Kill(sr.proc.sup, clock)
	}
	r.freezeMark(pr, frozen, now)
	return true
}

// freezeMark records a phase frozen or thawed, and its frozen time.
func (r *Runner) freezeMark(pr *phaseRun, frozen bool, now time.Time) {
	pr.state.Frozen = frozen
	switch {
	case frozen:
		pr.frozenEver, pr.frozenAt = true, now
	case !pr.frozenAt.IsZero():
		pr.frozenFor += now.Sub(pr.frozenAt)
		pr.frozenAt = time.Time{}
	}
}
