package link

import (
	"github.com/greenlight-run/greenlight/runner/state"
)

// A request a client makes of the runner names a verb of the verbs' one
// table (state.Verb: its request, the runner's method, its precondition
// and words), or OpState, which the link answers itself.

// OpState asks for the whole state, results included.
const OpState state.Verb = "state"
