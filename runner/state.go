package runner

import "time"

// Status of a phase or a step.
type Status string

const (
	Pending Status = "pending"
	Waiting Status = "waiting" // gated: waits for a greenlight
	Running Status = "running" // for a service: starting up
	Ready   Status = "ready"   // a service that is up
	Done    Status = "done"
	Failed  Status = "failed"
	Skipped Status = "skipped"
	Blocked Status = "blocked" // a phase it needs failed
	Stopped Status = "stopped" // interrupted by the user stopping the campaign
)

// Finished reports whether the status is final for this run.
func (s Status) Finished() bool {
	switch s {
	case Done, Failed, Skipped, Blocked, Stopped:
		return true
	}
	return false
}

// State is a snapshot of the whole campaign. The runner never changes a
// State after publishing it: consumers may keep and read it freely.
type State struct {
	Name     string
	Started  time.Time // the campaign's first start, from the journal
	Ended    time.Time // when it finished, from the journal; zero while it runs
	Now      time.Time
	Paused   bool
	PauseWhy string // "user", or why the runner paused itself (disk)
	Frozen   bool
	Finished bool
	Phases   []PhaseState
	ETA      ETA // whole campaign
	Warnings []string
	DiskFree uint64 // bytes free where the report lives; 0 if unknown
	Sessions []int  // session ids of live steps and services, and their steps' group ids, for GPU process labels
}

// PhaseState is the state of one phase.
type PhaseState struct {
	ID           string
	Title        string
	Status       Status
	Reason       string // why it failed, was skipped or blocked
	WaitReason   string // why a phase not yet started waits ("waits for GPU 0 held by serve")
	Manual       bool
	Attempt      int // 1 on the first run
	Started      time.Time
	Ended        time.Time
	Steps        []StepState
	Current      int // index of the running or last step
	GPUs         []int
	ETA          ETA
	Readopted    bool // a step or service was re-adopted after a restart
	Frozen       bool
	WasFrozen    bool     // frozen at some point in this attempt
	Retried      int      // steps retried in this attempt
	Changed      bool     // definition changed since a previous run
	ExpectFailed int      // checks that failed, and expectations never produced
	Missing      []Expect // expected results the phase never produced
	Artifacts    []Artifact
}

// StepState is the state of one step.
type StepState struct {
	Index    int
	Name     string
	Status   Status
	Attempt  int
	Started  time.Time
	Ended    time.Time
	ExitCode int
	Reason   string
	Log      string // path of the log file
	Results  []Row
	Summary  string  // what the step appended to $GREENLIGHT_SUMMARY
	Stage    string  // service start-up stage
	Progress float64 // 0..1, or -1 when unknown
	ETA      ETA
	PGID     int
}

// Row is one result: columns in first-seen order.
type Row struct {
	Phase  string
	Step   int
	Time   time.Time
	Cols   []string
	Values []any // string, float64, bool or nil
	Checks []Check
}

// Check is a row's value tested against an Expect.
type Check struct {
	Expect Expect
	Value  float64
	Pass   bool
}

// Artifact is a file matched by a phase's artifact globs.
type Artifact struct {
	Path string
	Size int64
}

// Phase returns the state of the phase with the given id, or nil.
func (s *State) Phase(id string) *PhaseState {
	for i := range s.Phases {
		if s.Phases[i].ID == id {
			return &s.Phases[i]
		}
	}
	return nil
}

// Failed reports whether a phase failed or was blocked by one that did:
// the one verdict of "the campaign failed", for the exit status, the
// window and the results file.
func (s *State) Failed() bool { return s.FailedPhases() > 0 }

// FailedPhases counts the phases that failed or were blocked by one that did:
// the one definition of "the campaign failed", for the exit status, the
// window, the results file and status.
func (s *State) FailedPhases() int {
	n := 0
	for _, p := range s.Phases {
		if p.Status.IsFailure() {
			n++
		}
	}
	return n
}

// IsFailure says whether a phase in this status makes the campaign failed.
func (s Status) IsFailure() bool { return s == Failed || s == Blocked }

// Stopped reports whether the user stopped the campaign before its end.
func (s *State) Stopped() bool {
	for _, p := range s.Phases {
		if p.Status == Stopped {
			return true
		}
	}
	return false
}
