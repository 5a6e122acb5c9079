package runner

import "testing"

// TestVerdicts: the one definition of each verdict the window, the
// record, status and the exit status share: can a greenlight open this
// gate, what is the campaign's word, which exit status.
func TestVerdicts(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		manual bool
		status Status
		gated  bool
	}{
		{true, Waiting, true}, {true, Pending, true}, {true, Running, false}, {true, Ready, false},
		{true, Done, false}, {true, Stopped, true}, {false, Waiting, false}, {false, Pending, false}, // stopped before its gate: approve takes it (the verbs' rule)
	} {
		p := PhaseState{Manual: tt.manual, Status: tt.status}
		if p.Gated() != tt.gated {
			t.Errorf("manual %v, %s: Gated = %v", tt.manual, tt.status, !tt.gated)
		}
	}
	phases := func(ss ...Status) []PhaseState {
		var out []PhaseState
		for _, s := range ss {
			out = append(out, PhaseState{Status: s})
		}
		return out
	}
	for _, tt := range []struct {
		st                    *State
		interrupted, detached bool
		head                  Headline
		code                  int
	}{
		{&State{Finished: true, Phases: phases(Done, Skipped)}, false, false, HeadFinished, ExitOK},
		{&State{Finished: true, Phases: phases(Done, Failed)}, false, false, HeadFailed, ExitFailed},
		{&State{Finished: true, Phases: phases(Done, Blocked)}, false, true, HeadFailed, ExitFailed},
		{&State{Finished: true, Phases: phases(Done, Stopped)}, false, false, HeadStopped, ExitInterrupted},
		{&State{Phases: phases(Running)}, false, true, HeadRunning, ExitOK},
		{&State{Phases: phases(Running), Paused: true}, true, false, HeadPaused, ExitInterrupted},
		{&State{Phases: phases(Running), Frozen: true}, false, false, HeadFrozen, ExitInterrupted},
		{nil, false, true, "", ExitOK},
		{nil, false, false, "", ExitInterrupted},
	} {
		if tt.st != nil && tt.st.Headline() != tt.head {
			t.Errorf("%+v: Headline = %s, want %s", tt.st, tt.st.Headline(), tt.head)
		}
		if got := tt.st.ExitCode(tt.interrupted, tt.detached); got != tt.code {
			t.Errorf("%+v (interrupted %v, detached %v): ExitCode = %d, want %d", tt.st, tt.interrupted, tt.detached, got, tt.code)
		}
	}
}
