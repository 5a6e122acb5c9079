package state

import (
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

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

// SkipBy is why a step of a sweep was skipped, as the runner decided it:
// the results count its unit by it (results.Outcome), never by the words
// of its Reason.
type SkipBy string

const (
	SkipByYou      SkipBy = "by-you"      // its point skipped by a person (x, skip --point)
	SkipPrecise    SkipBy = "precise"     // its point was already precise (repeat: {until:})
	SkipCut        SkipBy = "cut"         // until: failed cut it
	SkipNotProbed  SkipBy = "not-probed"  // the search did not ask for it
	SkipUnitFailed SkipBy = "unit-failed" // an earlier step of its unit failed
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
	Name     string       `json:",omitzero"`
	Started  time.Time    `json:",omitzero"` // the campaign's first start, from the journal
	Ended    time.Time    `json:",omitzero"` // when it finished, from the journal; zero while it runs
	Now      time.Time    `json:",omitzero"`
	Paused   bool         `json:",omitzero"`
	PauseWhy string       `json:",omitzero"` // "user", or why the runner paused itself (disk)
	Frozen   bool         `json:",omitzero"`
	Finished bool         `json:",omitzero"`
	Phases   []PhaseState `json:",omitzero"`
	ETA      ETA          `json:",omitzero"` // whole campaign
	Warnings []string     `json:",omitzero"`
	DiskFree uint64       `json:",omitzero"` // bytes free where the report lives; 0 if unknown
	// ReportHeld: while an editor has the results file open, what the
	// writer says of it (its writes wait; the window's status line shows
	// it for as long as it lasts); "" otherwise.
	ReportHeld string `json:",omitzero"`
	Sessions   []int  `json:",omitzero"` // session ids of live steps and services, and their steps' group ids, for GPU process labels
	Notes      []Note `json:",omitzero"` // the person's notes (greenlight note), in order
}

// Note is a line a person added to the record, and when.
type Note struct {
	T    time.Time `json:",omitzero"`
	Text string    `json:",omitzero"`
}

// PhaseState is the state of one phase.
type PhaseState struct {
	ID         string `json:",omitzero"`
	Title      string `json:",omitzero"`
	Status     Status `json:",omitzero"`
	Reason     string `json:",omitzero"` // why it failed, was skipped or blocked
	WaitReason string `json:",omitzero"` // why a phase not yet started waits ("waits for GPU 0 held by serve")
	// Kept: a service up only for failed phases that use it, waiting for
	// a retry that runs on it without a new load; what it waits for and
	// the keys ("for decode, failed: r on decode retries it on this
	// server, s on decode lets it go"). "" otherwise.
	Kept string `json:",omitzero"`
	// LetGo: a failed phase you let go (s, skip): no service is kept for it.
	LetGo bool `json:",omitzero"`
	// GateOpen: its gate was given (a greenlight, --approve) for this work.
	GateOpen bool      `json:",omitzero"`
	Manual   bool      `json:",omitzero"`
	Attempt  int       `json:",omitzero"` // 1 on the first run
	Started  time.Time `json:",omitzero"`
	Ended    time.Time `json:",omitzero"`
	// Ran is the running time of its runs before this one (earlier
	// attempts, and its attempt's runs before a stop), RanRuns how many:
	// its duration is Ran and this run's time (RunTime).
	Ran          time.Duration     `json:",omitzero"`
	RanRuns      int               `json:",omitzero"`
	Steps        []StepState       `json:",omitzero"`
	Current      int               `json:",omitzero"` // index of the running or last step
	GPUs         []int             `json:",omitzero"`
	ETA          ETA               `json:",omitzero"`
	Readopted    bool              `json:",omitzero"` // a step or service was re-adopted after a restart
	Frozen       bool              `json:",omitzero"`
	WasFrozen    bool              `json:",omitzero"` // frozen at some point in this attempt
	Retried      int               `json:",omitzero"` // steps retried in this attempt
	Changed      bool              `json:",omitzero"` // definition changed since a previous run
	ExpectFailed int               `json:",omitzero"` // checks that failed, and expectations never produced
	Missing      []campaign.Expect `json:",omitzero"` // expected results the phase never produced
	Artifacts    []Artifact        `json:",omitzero"`
	Unclaimed    []Unclaimed       `json:",omitzero"` // files its artifacts: match that are no step's of it, with why
	Slurm        *SlurmJob         `json:",omitzero"` // the current or last step's Slurm job, for a phase on Slurm
}

// StepState is the state of one step.
type StepState struct {
	Index    int       `json:",omitzero"`
	Name     string    `json:",omitzero"`
	Point    string    `json:",omitzero"` // a sweep's point, as the runner's plan has it (m=64,shape=down)
	Status   Status    `json:",omitzero"`
	Attempt  int       `json:",omitzero"`
	Started  time.Time `json:",omitzero"`
	Ended    time.Time `json:",omitzero"`
	ExitCode int       `json:",omitzero"`
	Reason   string    `json:",omitzero"`
	// Skip: of a skipped step of a sweep, why, typed (Reason says it in
	// words); "" for any other step.
	Skip     SkipBy  `json:",omitzero"`
	Log      string  `json:",omitzero"` // path of the log file
	Results  []Row   `json:",omitzero"`
	Summary  string  `json:",omitzero"` // what the step appended to $GREENLIGHT_SUMMARY
	Stage    string  `json:",omitzero"` // service start-up stage
	Progress float64 `json:",omitzero"` // 0..1, or -1 when unknown
	ETA      ETA     `json:",omitzero"`
	PGID     int     `json:",omitzero"`
	Job      string  `json:",omitzero"` // its Slurm job id, on Slurm
	// Facts are what the monitor saw of its GPUs while it ran, and why
	// its rows are doubtful (its stamp), fixed at its end (facts.go);
	// nil before, or without a monitor.
	Facts *StepFacts `json:",omitzero"`
	// Counters are its GPUs' energy counters read as it started, journaled
	// with its start: its energy is their difference at its end, also
	// when a runner started again re-adopted it. nil without a meter.
	Counters *Counters `json:",omitzero"`
	// What its processes used and left, from its supervisor's last word.
	CPU      time.Duration `json:",omitzero"` // CPU time of its whole tree
	PeakMem  uint64        `json:",omitzero"` // bytes
	PeakOf   string        `json:",omitzero"` // "cgroup": the whole tree at once; "process": its largest process
	Left     []string      `json:",omitzero"` // processes still running when its command ended ("pid 1480 python3")
	LeftPIDs []int         `json:",omitzero"`
	LeftKept bool          `json:",omitzero"` // kept running (leave_running) rather than stopped
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
	Expect campaign.Expect
	Value  float64
	Pass   bool
}

// Artifact is a file of a phase: one its steps claimed (claims.go), or
// one in its own folder of the state dir.
type Artifact struct {
	Path string
	Size int64
	// Modified is when the file last changed, as the scan saw it: a
	// capture's flush counts the traces written since its step started.
	// The runner's own; not sent to windows.
	Modified time.Time `json:"-"`
	// Gone: claimed by one of its steps, since deleted (Size as claimed).
	Gone bool `json:",omitzero"`
	// Step is the run of a step that made it: its folder's name
	// (a1-s2-t1), from its claim, or, for a file of the phase's own
	// folder, the step whose run held its time; "" when none did. A
	// capture's traces are one capture a step.
	Step string `json:",omitempty"`
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

// Doubtful reports whether a phase that is done had an expectation missed
// or an expected result never produced: it is shown with ⚠, never a green
// mark, whatever fail_on_expect says. The one definition, for the window
// and the record.
func (p PhaseState) Doubtful() bool { return p.Status == Done && p.ExpectFailed > 0 }

// IsFailure says whether a phase in this status makes the campaign failed.
func (s Status) IsFailure() bool { return s == Failed || s == Blocked }

// Headline is the campaign's state in one word: the one definition, said
// the same in the window, status, the results file and the exit status.
type Headline string

const (
	HeadRunning  Headline = "running"
	HeadPaused   Headline = "paused"
	HeadFrozen   Headline = "frozen"
	HeadStopped  Headline = "stopped"  // by the user, before its end; `run` resumes it
	HeadFinished Headline = "finished" // every phase done or skipped
	HeadFailed   Headline = "failed"   // ended with a phase failed or blocked
)

// Headline says where the campaign stands: a failed phase first, then a
// stop, once it has ended; paused or frozen while it runs.
func (s *State) Headline() Headline {
	switch {
	case s.Finished && s.Failed():
		return HeadFailed
	case s.Finished && s.Stopped():
		return HeadStopped
	case s.Finished:
		return HeadFinished
	case s.Paused:
		return HeadPaused
	case s.Frozen:
		return HeadFrozen
	}
	return HeadRunning
}

// WaitsOnKept says, when all that is left of a campaign is services kept
// up for failed phases (keep.go), what they wait for: the campaign ends
// only when you retry or let go; "" otherwise.
func (s *State) WaitsOnKept() string {
	var kept []string
	for _, p := range s.Phases {
		switch {
		case p.Kept != "":
			kept = append(kept, p.ID+" "+p.Kept)
		case p.Status == Running || p.Status == Ready || p.Status == Pending || p.Status == Waiting:
			return ""
		}
	}
	return strings.Join(kept, "; ")
}

// PhasesDone counts the phases that are through: done or skipped. A
// service up and serving is not (it runs: Serving counts it), nor is a
// phase that failed, was blocked or stopped: a stopped campaign's bar is
// not full. The one count for every bar.
func (s *State) PhasesDone() (done, total int) {
	for _, p := range s.Phases {
		switch p.Status {
		case Done, Skipped: // a service serving (Ready) is not done: it runs
			done++
		}
	}
	return done, len(s.Phases)
}

// Serving is how many services are up and serving now.
func (s *State) Serving() int {
	n := 0
	for _, p := range s.Phases {
		if p.Status == Ready {
			n++
		}
	}
	return n
}

// Stopped reports whether the user stopped the campaign before its end.
func (s *State) Stopped() bool {
	for _, p := range s.Phases {
		if p.Status == Stopped {
			return true
		}
	}
	return false
}

// RunTime is the phase's running time, every run of it added (now for a
// run under way), and how many runs that is.
func (p PhaseState) RunTime(now time.Time) (time.Duration, int) {
	if p.Started.IsZero() {
		return p.Ran, p.RanRuns
	}
	end := p.Ended
	if end.IsZero() {
		end = now
	}
	return p.Ran + end.Sub(p.Started), p.RanRuns + 1
}

// Unclaimed is a file a phase's artifacts match that is not its: said in
// its block, with why.
type Unclaimed struct {
	Path string
	Why  string
}
