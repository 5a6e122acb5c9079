package runner

import "github.com/greenlight-run/greenlight/runner/state"

// The journal record each verb writes; its precondition and words are
// the verbs' table (state.Allowed), read live and stopped alike.
var verbRecords = map[Verb]string{
	VerbSkip:       recPhaseEnd,
	VerbSkipPoint:  recPointSkip,
	VerbRetry:      recRetry,
	VerbRetryPoint: recRetry,
	VerbApprove:    recGate,
}

// recordFor is the journal record verb v writes for a phase in status st:
// skip lets a failed phase go (it stays failed).
func recordFor(v Verb, st Status) string {
	if state.LetsGo(v, st) {
		return recLetGo
	}
	return verbRecords[v]
}
