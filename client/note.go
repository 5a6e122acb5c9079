package client

import (
	"errors"
	"fmt"
	"io"

	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/link"
	"github.com/greenlight-run/greenlight/runner/state"
)

// AddNote gives a person's note to the campaign's runner when one runs
// it (journaled, then written); when none does, it journals the note
// itself and says so: rebuild is then true, and the caller writes the
// record again from the state dir.
func AddNote(j Journal, plan *campaign.Plan, stateDir, text string, stdout io.Writer) (rebuild bool, err error) {
	c, err := link.Dial(stateDir)
	if err == nil {
		defer c.Close()
		if _, err := c.Request(state.VerbNote, text); err != nil {
			return false, err
		}
		fmt.Fprintf(stdout, "greenlight: note added to %s (its runner, pid %d, writes it)\n", plan.Report, c.PID())
		return false, nil
	}
	if !errors.Is(err, link.ErrNoRunner) {
		return false, err
	}
	if !HasJournal(stateDir) {
		return false, fmt.Errorf("%s %w (no journal in %s): a note goes with a campaign's record", plan.Name, ErrNeverRan, stateDir)
	}
	if err := j.NoteWhileStopped(stateDir, text); err != nil {
		return false, err
	}
	fmt.Fprintf(stdout, "greenlight: note added to the journal; rebuilding %s from it\n", plan.Report)
	return true, nil
}
