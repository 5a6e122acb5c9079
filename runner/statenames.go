package runner

// The campaign's state types live in package state, below the runner and
// below every reader of a campaign's results (results, record, compare),
// so that those build without the engine. The runner's code names them
// as its own through these aliases: one definition, two spellings.

import "github.com/greenlight-run/greenlight/runner/state"

type (
	Artifact    = state.Artifact
	Check       = state.Check
	Counters    = state.Counters
	ETA         = state.ETA
	Event       = state.Event
	EventKind   = state.EventKind
	Headline    = state.Headline
	Layout      = state.Layout
	Note        = state.Note
	PhaseState  = state.PhaseState
	Row         = state.Row
	SlurmJob    = state.SlurmJob
	ServerFacts = state.ServerFacts
	Gauge       = state.Gauge
	State       = state.State
	Status      = state.Status
	StepFacts   = state.StepFacts
	StepState   = state.StepState
	Unclaimed   = state.Unclaimed
	Verb        = state.Verb
)

const (
	Pending            = state.Pending
	Waiting            = state.Waiting
	Running            = state.Running
	Ready              = state.Ready
	Done               = state.Done
	Failed             = state.Failed
	Skipped            = state.Skipped
	Blocked            = state.Blocked
	Stopped            = state.Stopped
	HeadFailed         = state.HeadFailed
	HeadFinished       = state.HeadFinished
	HeadFrozen         = state.HeadFrozen
	HeadPaused         = state.HeadPaused
	HeadRunning        = state.HeadRunning
	HeadStopped        = state.HeadStopped
	SourceEstimate     = state.SourceEstimate
	SourceHistory      = state.SourceHistory
	SourceNeighbours   = state.SourceNeighbours
	SourceProbes       = state.SourceProbes
	SourceProgress     = state.SourceProgress
	EnergyCounter      = state.EnergyCounter
	EnergyInterpolated = state.EnergyInterpolated
	EnergyPower        = state.EnergyPower
	ExitFailed         = state.ExitFailed
	ExitInterrupted    = state.ExitInterrupted
	ExitLocked         = state.ExitLocked
	ExitOK             = state.ExitOK
	ExitUsage          = state.ExitUsage
	VerbApprove        = state.VerbApprove
	VerbRetry          = state.VerbRetry
	VerbRetryPoint     = state.VerbRetryPoint
	VerbSkip           = state.VerbSkip
	VerbSkipPoint      = state.VerbSkipPoint
	CampaignStarted    = state.CampaignStarted
	PhaseStarted       = state.PhaseStarted
	StepStarted        = state.StepStarted
	Progress           = state.Progress
	ResultRecorded     = state.ResultRecorded
	SummaryAppended    = state.SummaryAppended
	StepFinished       = state.StepFinished
	PhaseFinished      = state.PhaseFinished
	ServiceReady       = state.ServiceReady
	ServiceStopped     = state.ServiceStopped
	GateWaiting        = state.GateWaiting
	Paused             = state.Paused
	Resumed            = state.Resumed
	Frozen             = state.Frozen
	Thawed             = state.Thawed
	Warning            = state.Warning
	CampaignFinished   = state.CampaignFinished
	Detached           = state.Detached
	NoteAdded          = state.NoteAdded
)
