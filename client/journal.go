package client

import (
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/state"
)

// Journal is a campaign's journal when no runner runs it: read back as
// the runner reads it, and a verb or a note journaled under the state
// dir's lock. The command hands in the runner's (runner.Journal), so a
// client reaches the runner's reading of its journal without building
// the runner: it knows the link, the state types and this.
type Journal interface {
	Replay(plan *campaign.Plan, stateDir string) (*state.State, error)
	TakeWhileStopped(plan *campaign.Plan, stateDir string, v state.Verb, target string) (said string, err error)
	NoteWhileStopped(stateDir, text string) error
}
