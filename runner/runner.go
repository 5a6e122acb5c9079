package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/greenlight-run/greenlight/internal/files"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/state"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

// Options tune a Runner; the zero value works.
type Options struct {
	// StateDir holds the journal, history, step logs and artifacts.
	// Default: .greenlight/NAME beside the results file.
	StateDir string
	// Self is the command that starts a supervisor; default: this
	// executable with SuperviseCommand. Tests point it at the test binary.
	Self []string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Grace is the wait between stop signals (SIGINT, SIGTERM, SIGKILL).
	Grace time.Duration
	// Poll is how often running steps are looked at when nothing wakes the
	// runner; default 1s. Writes in a step's folder (results, summary, log,
	// status) wake it at once through fsnotify, which keeps a result's way
	// to the report under 100 ms without polling.
	Poll time.Duration
	// GPUCount is how many GPUs the monitor sees, -1 when it cannot tell.
	GPUCount int
	// Approve lists phases whose manual gate is given up front ("all" for
	// every one), for unattended runs.
	Approve []string
	// Retry names finished phases to run again as the runner starts (the
	// verb retry on a campaign that has finished: no runner was there to
	// ask).
	Retry []string
	// Notes are said as warnings when the campaign starts, in the window,
	// the plain output and the results file (preflight's warnings).
	Notes []string
	// Annotate, when set, gives a word to say beside each new result as
	// it lands (its change against a baseline): point is the sweep's
	// point ("m=64,shape=down"), "" outside a sweep. It runs on the
	// runner's loop: it must be quick.
	Annotate func(phase, point string, row Row) string
	// Meter, when set, reads the GPUs' energy counters as each step
	// starts (facts.go): journaled with the start, the witness holds them
	// against its reading at the end.
	Meter Meter
	// Witness, when set, tells the facts of each run of a step as it
	// ends: what the monitor saw of its GPUs, and its stamp (facts.go).
	Witness Witness
	// Lock is the state dir's lock, taken already (LockStateDir) by a
	// runner process before its costly start (its GPUs opened): New takes
	// it over. nil: New takes it.
	Lock *os.File
}

// LockStateDir takes a state dir's lock, making the folder first: a
// runner process takes it before anything costly, so the one of two
// started at once that loses it ends at once (ErrLocked), never opening
// the GPUs or reaching its loop.
func LockStateDir(stateDir string) (*os.File, error) {
	root, _ := filepath.Abs(stateDir)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	return takeLock(Layout(root).Lock())
}

// Runner runs one campaign. Controls may be called from any goroutine.
type Runner struct {
	plan   *campaign.Plan
	opts   Options
	dirs   Layout
	store  stores    // the journal, the step history, the lock
	life   lifecycle // started once, commanded, ended
	pub    publisher // the event subscribers
	phases []*phaseRun

	// Owned by the loop goroutine.
	q          queueState
	times      campaignTimes
	warnings   []string
	infos      []string         // what this start says that is no warning (a step re-adopted, units kept): events, sent when the loop starts
	said       []string         // what earlier runners warned, from the journal, until the loop starts
	resuming   bool             // the journal is being read back: a warning waits for the loop's start to be journaled
	notes      []Note           // the person's notes, from the journal and since
	kept       []supervise.Kept // what steps with leave_running left running: stopped at the campaign's end
	claims     *claimBook       // the artifacts each step claimed (claims.go), from the journal and since
	reportHeld heldWord         // an editor holding the results file, as the writer says it
	held       holders          // the campaign's processes on the GPUs, from the GPU source
	cgroup     string           // the campaign's cgroup (v2), "" where none could be made
	// staleCgroups is how many empty greenlight.* cgroups this start
	// removed: said in the event line, not as a warning (an empty one may
	// be a live runner's between its steps, made again at its next).
	staleCgroups int
	disk         diskGuard
	looked       looks     // when the artifacts and the state dir were last looked at
	watch        stepWatch // how the loop hears of steps' ends and writes
	mode         runMode
}

// stores are what the runner keeps on disk besides the steps' folders.
type stores struct {
	jr   *journal
	hist *history
	lock *os.File
}

// lifecycle is the loop's start, its commands, and its end.
type lifecycle struct {
	startOnce sync.Once
	ctl       chan func()
	quit      chan struct{}
	done      chan struct{}
}

// publisher hands every event to every subscriber.
type publisher struct {
	mu   sync.Mutex
	subs []*subscriber
}

// queueState is whether the queue moves, and why not.
type queueState struct {
	paused   bool
	pauseWhy string
	frozen   bool
	stopping bool
	finished bool
}

// looks are when slow checks were last made.
type looks struct {
	art   time.Time // artifacts globbed
	state time.Time // the journal checked to still be there
}

// stepWatch is how the loop hears of running steps: their exits, and
// writes in their folders.
type stepWatch struct {
	exited chan stepExit
	fs     *fsnotify.Watcher // step folders of running steps
	wake   chan string       // a folder something was written in
	slurm  chan slurmNews    // Slurm commands' answers
}

// runMode is how much the runner may do.
type runMode struct {
	quiet bool // rebuilding state: publish nothing
}

// campaignTimes are the campaign's start and end as the journal has them,
// so they survive every re-attach and restart of greenlight.
type campaignTimes struct {
	started   time.Time // the first start in the journal
	ended     time.Time // this run's end, once finished
	prevEnded time.Time // the last end in the journal
	lastStart time.Time // the last runner's start in the journal
	ranAny    bool      // this runner started a phase
}

// SupervisorName is the supervisor's own binary, beside greenlight.
const SupervisorName = supervise.Binary

// SupervisorCommand is how a step's supervisor is started by greenlight
// at exe: the supervisor's own binary when it lies beside exe (a step
// then starts in a few milliseconds, not the 50 of greenlight's package
// init), else greenlight's hidden subcommand.
func SupervisorCommand(exe string) []string {
	sup := filepath.Join(filepath.Dir(exe), SupervisorName)
	if fi, err := os.Stat(sup); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return []string{sup}
	}
	return []string{exe, supervise.Command}
}

// ErrLocked means another greenlight is running this campaign (the one
// error, files.ErrLocked, that the results file's lock gives too).
var ErrLocked = files.ErrLocked

// New prepares a Runner: it creates the state dir, takes its lock and
// reads the journal to resume. Nothing runs until Start.
func New(plan *campaign.Plan, opts Options) (*Runner, error) {
	if opts.StateDir == "" {
		opts.StateDir = state.DefaultStateDir(plan)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Grace <= 0 {
		opts.Grace = 10 * time.Second
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if len(opts.Self) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding greenlight's own executable for the supervisor: %w", err)
		}
		opts.Self = SupervisorCommand(exe)
	}
	root, _ := filepath.Abs(opts.StateDir)
	r := &Runner{plan: plan, opts: opts, claims: newClaimBook(),
		life:  lifecycle{ctl: make(chan func()), quit: make(chan struct{}), done: make(chan struct{})},
		watch: stepWatch{exited: make(chan stepExit, 64), wake: make(chan string, 256), slurm: make(chan slurmNews, 64)}}
	r.dirs = Layout(root)
	for _, d := range []string{r.dirs.Steps(), r.dirs.Artifacts()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
	}
	lf := opts.Lock
	if lf == nil {
		var err error
		if lf, err = takeLock(r.dirs.Lock()); err != nil {
			return nil, err
		}
	}
	r.store.lock = lf
	r.store.hist = loadHistory(r.dirs.History())
	recs, err := readJournal(r.dirs.Journal())
	if err != nil {
		r.unlock()
		return nil, err
	}
	r.store.jr, err = openJournal(r.dirs.Journal())
	if err != nil {
		r.unlock()
		return nil, err
	}
	r.resuming = true
	r.resume(recs)
	r.resuming = false
	r.said = warningsOf(recs)
	r.notes = notesOf(recs)
	r.warnings = append(r.warnings, opts.Notes...)
	r.staleCgroups = supervise.RemoveStaleCgroups()
	if cg, err := supervise.CampaignCgroup(campaign.SafeName(plan.Name), root); err == nil {
		r.cgroup = cg
	} else {
		r.warnings = append(r.warnings, fmt.Sprintf("steps run without a cgroup of their own (%v): each step's processes are followed by its supervisor, and a step's peak memory is its largest process's", err))
	}
	r.keepApprovals()
	for _, target := range opts.Retry {
		id, point, _ := strings.Cut(target, "@") // a point's target: phase@point (state.PointTarget)
		if pr, err := r.find(id); err == nil && pr.state.Status.Finished() {
			if point != "" {
				r.retryPoint(id, point)
			} else {
				r.retry(id)
			}
		}
	}
	return r, nil
}

// keepApprovals journals the gates given up front (--approve), so that a
// re-attach or a restarted runner without the flag still has them open.
func (r *Runner) keepApprovals() {
	for _, pr := range r.phases {
		if pr.ph.Manual && !pr.gateOpen && r.approved(pr.ph.ID) && !pr.state.Status.Finished() {
			pr.gateOpen = true
			r.journal(record{Kind: recGate, Phase: pr.ph.ID})
		}
	}
}

// takeLock takes the campaign's lock file, which says which pid holds it.
func takeLock(path string) (*os.File, error) {
	lf, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("state dir lock: %w", err)
	}
	// A runner that died a moment ago may leave its lock held a few
	// milliseconds more by a child it was starting (between fork and exec):
	// while the pid the lock names is dead, wait for it, up to 2 s.
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		b, _ := os.ReadFile(path)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && pid > 0 && syscall.Kill(pid, 0) != nil && time.Now().Before(deadline) {
			continue
		}
		lf.Close()
		return nil, fmt.Errorf("%w (pid %s holds %s); attach to it in its tmux window, or stop it first", ErrLocked, string(b), path)
	}
	lf.Truncate(0)
	lf.WriteAt([]byte(strconv.Itoa(os.Getpid())), 0)
	return lf, nil
}

func (r *Runner) unlock() {
	if r.store.lock != nil {
		syscall.Flock(int(r.store.lock.Fd()), syscall.LOCK_UN)
		r.store.lock.Close()
		r.store.lock = nil
	}
}

// Plan is the plan this runner runs.
func (r *Runner) Plan() *campaign.Plan { return r.plan }

// StateDir is the folder holding the journal, logs and artifacts.
func (r *Runner) StateDir() string { return r.dirs.Root() }

// Subscribe returns a channel of every event from now on. Call it before
// Start. The channel is closed when the runner ends.
func (r *Runner) Subscribe() <-chan Event {
	s := newSubscriber()
	r.pub.mu.Lock()
	r.pub.subs = append(r.pub.subs, s)
	r.pub.mu.Unlock()
	return s.out
}

// Start runs the campaign in the background.
func (r *Runner) Start() {
	r.life.startOnce.Do(func() { go r.loop() })
}

// Done is closed when the runner's loop has ended (after Close).
func (r *Runner) Done() <-chan struct{} { return r.life.done }

// do runs f on the loop goroutine and waits for it; after the loop ended
// it returns ErrClosed.
func (r *Runner) do(f func() error) error {
	res := make(chan error, 1)
	select {
	case r.life.ctl <- func() { res <- f() }:
		return <-res
	case <-r.life.done:
		return ErrClosed
	}
}

// ErrClosed means the runner has ended.
var ErrClosed = errors.New("runner closed")

// Pause holds the queue: the running steps finish, no new one starts.
func (r *Runner) Pause() error { return r.do(func() error { r.setPaused(true, "user"); return nil }) }

// Resume lets the queue go on.
func (r *Runner) Resume() error { return r.do(func() error { r.setPaused(false, ""); return nil }) }

// Freeze stops the running steps' process groups (SIGSTOP); Thaw (SIGCONT)
// lets them go on. Services are not frozen: clients would time out.
func (r *Runner) Freeze() error { return r.do(func() error { return r.setFrozen(true) }) }

// Thaw continues frozen steps.
func (r *Runner) Thaw() error { return r.do(func() error { return r.setFrozen(false) }) }

// Skip marks a phase skipped; a running one is stopped first.
func (r *Runner) Skip(id string) error { return r.do(func() error { return r.skip(id) }) }

// SkipPoint skips the points of a sweep phase that point names
// ("m=64,shape=down", or "m=64" for every shape at m=64): their units not
// run yet are skipped, a running one is stopped, and the phase goes on
// with the others.
func (r *Runner) SkipPoint(id, point string) error {
	return r.do(func() error { return r.skipPoint(id, point) })
}

// Retry runs a finished phase again from its first step.
func (r *Runner) Retry(id string) error { return r.do(func() error { return r.retry(id) }) }

// RetryPoint runs again the units of the points of a finished sweep
// phase that point names, keeping its other units as they ended.
func (r *Runner) RetryPoint(id, point string) error {
	return r.do(func() error { return r.retryPoint(id, point) })
}

// Greenlight opens a phase's manual gate.
func (r *Runner) Greenlight(id string) error { return r.do(func() error { return r.greenlight(id) }) }

// Warn says msg as the runner's own warnings are said: in the window,
// the plain output, the log and the results file. For what the runner's
// process watches beside the runner (the conditions the campaign runs
// under). It does not wait: a warning given before Start is said when
// the loop starts.
func (r *Runner) Warn(msg string) {
	go r.do(func() error { r.warn(msg); return nil })
}

// heldWord is the writer's word on an editor holding the results file:
// set from its goroutine, taken into the state by the loop.
type heldWord struct {
	said  atomic.Pointer[string]
	shown string // the loop's
}

// SetReportHeld says an editor holds the results file (msg, its words)
// or lets go (""): the state carries it, and a window shows it on its
// status line while it lasts. The latest word wins, whatever order the
// loop takes them in.
func (r *Runner) SetReportHeld(msg string) {
	r.reportHeld.said.Store(&msg)
	go r.do(func() error {
		if p := r.reportHeld.said.Load(); p != nil && *p != r.reportHeld.shown {
			r.reportHeld.shown = *p
			r.emit(Event{Kind: Progress})
		}
		return nil
	})
}

// Note adds a person's note to the campaign's record: journaled (it
// outlives the runner, report and --fresh keep it), then written.
func (r *Runner) Note(text string) error {
	text = strings.TrimSpace(text)
	if text == "" {
		return fmt.Errorf("an empty note")
	}
	return r.do(func() error {
		n := Note{T: r.opts.Now(), Text: text}
		r.journal(record{T: n.T, Kind: recNote, Reason: n.Text})
		r.notes = append(r.notes, n)
		r.emit(Event{Kind: NoteAdded, Message: "note: " + text})
		return nil
	})
}

// Stop stops every running step and service; the campaign ends stopped.
func (r *Runner) Stop() error { return r.do(func() error { r.stopAll(); return nil }) }

// Close lets go of the campaign: running steps and services go on, the
// journal stays consistent, and a later Runner re-adopts them.
func (r *Runner) Close() error {
	r.life.startOnce.Do(func() {
		// Never started: let go of the lock and the journal only.
		supervise.RemoveCgroups(r.cgroup)
		r.store.jr.close()
		r.unlock()
		r.closeSubs()
		close(r.life.done)
	})
	select {
	case <-r.life.done:
		return nil
	default:
	}
	select {
	case r.life.quit <- struct{}{}:
	case <-r.life.done:
	}
	<-r.life.done
	return nil
}

// Snapshot returns the current state; after the loop ended, the last one.
func (r *Runner) Snapshot() *State {
	var s *State
	if r.do(func() error { s = r.snapshot(); return nil }) != nil {
		return r.snapshot()
	}
	return s
}
