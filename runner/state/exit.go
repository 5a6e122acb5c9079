package state

// Exit statuses of greenlight's commands and of the runner process, as
// the README documents them.
const (
	ExitOK          = 0   // every phase done or skipped by the user; or the user detached on purpose
	ExitFailed      = 1   // a phase failed or was blocked; the runner could not start
	ExitUsage       = 2   // bad input: campaign file, flags, arguments
	ExitLocked      = 3   // the campaign, or its results file, is held by a greenlight this one cannot share it with
	ExitInterrupted = 130 // interrupted (Ctrl-C, SIGTERM, a lost terminal) before the end
)

// ExitCode is the exit status for how the campaign stands when a
// greenlight leaves it (nil: nothing heard): a failed phase first; then a
// campaign left running on purpose (detached) is 0, and one cut short or
// stopped is 130.
func (s *State) ExitCode(interrupted, detached bool) int {
	switch {
	case s == nil && detached:
		return ExitOK
	case s == nil:
		return ExitInterrupted
	case s.Failed():
		return ExitFailed
	case detached:
		return ExitOK
	case interrupted || !s.Finished || s.Stopped():
		return ExitInterrupted
	}
	return ExitOK
}
