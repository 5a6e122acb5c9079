package runner

import (
	"fmt"
	"time"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/internal/tracefile"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// A guarded capture's flush (capture: on a phase): after the step that
// stops the profiler, the phase waits for one trace per rank, showing them
// appear and grow (ranks written, bytes, bytes/s, an ETA from the growth);
// it ends once every rank's trace is there and has stopped growing, or,
// when no trace has grown for the capture's stall, says so and ends the
// wait: a flush never hangs the campaign, and the record names the ranks
// whose trace never appeared.

// quietFor is how long a step's artifacts must stop growing before it is
// done: its wait_quiet, or, for the last step of a capture phase that
// gives none, the flush's default.
func (sr *stepRun) quietFor() time.Duration { return quietOf(sr.pr.ph, sr.step) }

// quietOf is quietFor of one step of a phase.
func quietOf(ph *campaign.Phase, step *campaign.Step) time.Duration {
	if step.WaitQuiet > 0 {
		return step.WaitQuiet
	}
	if ph.Capture == nil || ph.Service != nil {
		return 0
	}
	for _, st := range ph.AllSteps() {
		if st.WaitQuiet > 0 {
			return 0 // the capture's flush follows the step that says so
		}
	}
	if step.Index == len(ph.AllSteps())-1 {
		return campaign.DefaultFlushQuiet
	}
	return 0
}

// checkFlush follows the flush at one look; it reports whether the wait
// may end once quiet (every rank's trace there, or the flush stalled).
func (sr *stepRun) checkFlush(c *campaign.Capture, now time.Time) bool {
	// The ranks written and their bytes: profiler traces this step wrote
	// (claims.go: an earlier capture's files in the same folder, another
	// phase's or another setting's, are not this one's), and those in its
	// own folder changed since it started.
	ranks, largest, size := 0, int64(0), int64(0)
	mine, _ := sr.written(now)
	seen := map[string]bool{}
	for _, a := range append(mine, globArtifacts(nil, sr.pr.artDir)...) {
		if seen[a.Path] || !tracefile.Is(a.Path) || a.Modified.Before(sr.started) || a.Size <= 0 {
			continue
		}
		seen[a.Path] = true
		ranks++
		largest = max(largest, a.Size)
		size += a.Size
	}
	q := &sr.quiet
	if dt := now.Sub(q.at).Seconds(); dt > 0 {
		r := float64(size-q.size) / dt
		q.rate = 0.5*q.rate + 0.5*max(r, 0)
	}
	q.at = now
	if size != q.size {
		q.size, q.since, q.stallSaid = size, now, false
	}
	ss := &sr.pr.state.Steps[sr.step.Index]
	words := fmt.Sprintf("flushing traces: %d of %d ranks · %s", ranks, c.Ranks, format.Bytes(uint64(size)))
	quiet := now.Sub(q.since)
	switch {
	case q.rate >= 1 && quiet < 3*time.Second:
		words += fmt.Sprintf(" · %s/s", format.Bytes(uint64(q.rate)))
		// Ranks write traces of about one size: the flush is through when
		// each is as large as the largest.
		if want := largest * int64(c.Ranks); want > size {
			if eta := time.Duration(float64(want-size) / q.rate * float64(time.Second)); eta >= time.Second {
				words += " · ETA ~" + format.Duration(eta)
			}
		}
	case ranks < c.Ranks:
		words += fmt.Sprintf(" · no growth for %s (%s ends the wait)", format.Duration(quiet), format.Duration(c.Stall))
	default:
		words += fmt.Sprintf(" · quiet for %s of %s", format.Duration(quiet), format.Duration(sr.quietFor()))
	}
	if words != ss.Stage {
		ss.Stage = words
		// The window redraws at each; the plain output says a rank's
		// trace appearing, not each second's bytes.
		e := Event{Kind: Progress, Phase: sr.pr.ph.ID, Step: sr.step.Index}
		if ranks != q.ranks {
			q.ranks = ranks
			e.Message = sr.pr.ph.Label() + ": " + words
		}
		sr.r.emit(e)
	}
	if ranks >= c.Ranks {
		return true
	}
	if quiet >= c.Stall {
		if !q.stallSaid {
			q.stallSaid = true
			sr.r.warn(fmt.Sprintf("%s: the profiler's flush grew no trace for %s: %d of %d ranks' traces written; the wait ends (the record names the missing ranks)",
				sr.pr.ph.Label(), format.Duration(c.Stall), ranks, c.Ranks))
		}
		q.since = now.Add(-sr.quietFor()) // ends at once
		return true
	}
	return false
}
