// Package client is the one way to reach a campaign's runner (package
// daemon): finding it, or starting it, and the session that a window or
// the plain printer watches it through. A Session implements what the
// window asks of a runner (tui.Controller) and of a sampler (tui.GPUs);
// the window never learns it is a socket.
package client

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/greenlight-run/greenlight/daemon"
	"github.com/greenlight-run/greenlight/runner/campaign"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/report/mdfile"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/link"
)

// runnerStart is how long a new runner may take to open its socket (NVML
// on eight GPUs and a first dcgm scrape take seconds, not minutes).
const runnerStart = 2 * time.Minute

// runnerKilled is a runner's exit status when a signal ended it.
const runnerKilled = -1

// RunnerLog is the runner's own lines, in its state dir.
func RunnerLog(stateDir string) string { return runner.Layout(stateDir).RunnerLog() }

// Attach connects to the campaign's runner (cfg.StateDir), starting one
// with cfg when none runs (it resumes from the journal). started says
// whether it was started here. On failure it has said why on stderr and
// returns the exit status.
func Attach(plan *campaign.Plan, cfg *daemon.Config, stdout, stderr io.Writer) (c *link.Client, started bool, code int) {
	stateDir := cfg.StateDir
	for try := 0; try < 3; try++ {
		c, err := link.Dial(stateDir)
		if err == nil && !endingAfterStop(c) {
			return c, started, runner.ExitOK
		}
		if err == nil {
			// Stopped a moment ago and on its way out: attaching would only
			// see it end (exit 130). Its end is waited for, then a new
			// runner resumes the campaign.
			pid := c.PID()
			c.Close()
			fmt.Fprintf(stderr, "greenlight: the campaign's last runner (pid %d) is ending after a stop: waiting for it, then resuming\n", pid)
			for end := time.Now().Add(30 * time.Second); time.Now().Before(end) && syscall.Kill(pid, 0) == nil; {
				time.Sleep(50 * time.Millisecond)
			}
			continue
		}
		var refused *link.RefusedError
		if errors.As(err, &refused) {
			fmt.Fprintf(stderr, "greenlight: %s\n", refused.Why)
			return nil, false, runner.ExitLocked
		}
		if !errors.Is(err, link.ErrNoRunner) {
			fmt.Fprintf(stderr, "greenlight: %v\n", err)
			return nil, false, runner.ExitFailed
		}
		if pid, held := runner.LockHolder(stateDir); held {
			// A runner starting up, or a greenlight from before runners.
			if c := waitSocket(stateDir, pid, 10*time.Second, nil); c != nil {
				return c, false, runner.ExitOK
			}
			if syscall.Kill(pid, 0) != nil {
				continue // it died meanwhile (killed as we looked): start a new one
			}
			fmt.Fprintf(stderr, "greenlight: pid %d holds this campaign (%s) but does not answer on its socket: an older greenlight's window? Quit it there, or wait for it\n",
				pid, stateDir)
			return nil, false, runner.ExitLocked
		}
		c, code := startRunner(plan, cfg, stdout, stderr)
		if c != nil {
			return c, true, runner.ExitOK
		}
		if code == resultsHeld {
			return nil, false, runner.ExitLocked
		}
		if code != runner.ExitLocked && code != runnerKilled {
			return nil, false, code
		}
		// Another client started one at the same moment: attach to it; or
		// the one we started was killed before we attached: start another.
	}
	fmt.Fprintf(stderr, "greenlight: could not attach to this campaign's runner (%s); see %s\n", stateDir, RunnerLog(stateDir))
	return nil, false, runner.ExitFailed
}

// endingAfterStop says the runner c reached has stopped the campaign
// and is ending.
func endingAfterStop(c *link.Client) bool {
	st := c.First.State
	return st != nil && st.Finished && st.Stopped()
}

// resultsHeld is startRunner's word for a results file another runner
// writes: exit 3, without retrying.
const resultsHeld = -3

// heldAfterEnd is the runner that holds the results file, "" when none.
// One of this same state dir, found when no runner of it answered, is
// the campaign's last runner on its way out (a run started again the
// moment the last one ended): it is given ten seconds to let go.
func heldAfterEnd(report, stateDir string) string {
	who := mdfile.ResultsHolder(report)
	abs, err := filepath.Abs(stateDir)
	if who == "" || err != nil || !strings.HasSuffix(who, "state dir "+abs) && !strings.HasSuffix(who, "state dir "+stateDir) {
		return who
	}
	for end := time.Now().Add(10 * time.Second); who != "" && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
		who = mdfile.ResultsHolder(report)
	}
	return who
}

// startRunner starts `greenlight __runner` for the campaign in a session
// of its own and waits for its socket. A runner that exits first (bad
// input, preflight) has its lines copied to stderr and its status
// returned.
func startRunner(plan *campaign.Plan, cfg *daemon.Config, stdout, stderr io.Writer) (*link.Client, int) {
	stateDir := cfg.StateDir
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "greenlight: %v\n", err)
		return nil, runner.ExitFailed
	}
	cfg.Reuse(stdout)
	if cfg.Report != "" {
		plan.Report = cfg.Report
	}
	// One runner per results file: another state dir's runner writing
	// it is said before anything is made here (the runner checks again).
	if who := heldAfterEnd(plan.Report, stateDir); who != "" {
		fmt.Fprintf(stderr, "greenlight: %s is written by another runner (%s): one runner per results file; `greenlight stop` that campaign, or give this one another --report\n", plan.Report, who)
		return nil, resultsHeld
	}
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		fmt.Fprintf(stderr, "greenlight: cannot create the state dir: %v\n", err)
		return nil, runner.ExitFailed
	}
	cfg.File = plan.File
	args := append([]string{daemon.Command}, cfg.Args()...)
	logPath := RunnerLog(stateDir)
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight: %v\n", err)
		return nil, runner.ExitFailed
	}
	defer logf.Close()
	from, _ := logf.Seek(0, io.SeekEnd)
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "greenlight: cannot start the campaign's runner: %v\n", err)
		return nil, runner.ExitFailed
	}
	exited := make(chan int, 1)
	go func() {
		cmd.Wait()
		exited <- cmd.ProcessState.ExitCode()
	}()
	c := waitSocket(stateDir, cmd.Process.Pid, runnerStart, exited)
	if c != nil {
		return c, runner.ExitOK
	}
	code := runner.ExitFailed
	select {
	case code = <-exited:
	default:
		fmt.Fprintf(stderr, "greenlight: the campaign's runner (pid %d) did not open its socket within %v; its lines are in %s\n", cmd.Process.Pid, runnerStart, logPath)
		return nil, runner.ExitFailed
	}
	if code == runnerKilled {
		return nil, code // killed before we attached: the caller starts another
	}
	if code != runner.ExitLocked {
		if b, err := os.ReadFile(logPath); err == nil && int64(len(b)) > from {
			stderr.Write(b[from:])
		}
		if code == runner.ExitOK || code == runner.ExitInterrupted {
			code = runner.ExitFailed // it ended without a word to us: not a success
		}
	}
	return nil, code
}

// waitSocket dials until pid's socket answers, pid exits (exited, or the
// pid gone when exited is nil), or wait has passed.
func waitSocket(stateDir string, pid int, wait time.Duration, exited chan int) *link.Client {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if c, err := link.Dial(stateDir); err == nil {
			return c
		}
		if exited != nil {
			select {
			case code := <-exited:
				exited <- code
				return nil
			default:
			}
		} else if syscall.Kill(pid, 0) != nil {
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return nil
}

// Session is a client's view of the campaign: the runner's events as
// runner events, its GPU rounds through a mirror sampler, its controls as
// requests. When the runner goes away before the campaign's end (killed),
// the session starts a new one, which resumes from the journal, and goes
// on with it.
type Session struct {
	link.Remote // the runner's controls, asked for over the link

	plan *campaign.Plan
	cfg  *daemon.Config // how to start a new runner, should this one be killed
	log  io.Writer      // where the session says what it did (the plain printer's output)

	mu     sync.Mutex
	c      *link.Client
	inv    gpu.Inventory
	state  *runner.State
	mirror *gpu.Mirror
	gpus   *gpu.Sampler
	prev   []gpu.Sample                // the last round, for process lists sent only when they change
	srvs   map[string]*link.ServerLine // the services' /metrics, as the last round said

	events chan runner.Event
	ended  chan struct{} // closed when Run returns: the runner ended the stream, or left
	bye    string        // the runner's last word, when it ended the stream
}

// NewSession watches the runner c answers for; cfg is how a new runner
// is started should that one be killed.
func NewSession(plan *campaign.Plan, cfg *daemon.Config, c *link.Client, log io.Writer) *Session {
	s := &Session{plan: plan, cfg: cfg, log: log, c: c, events: make(chan runner.Event, 64), ended: make(chan struct{})}
	s.Remote = s.do
	w := c.First.GPU
	if w == nil {
		w = &link.GPURound{}
	}
	if w.Inv != nil {
		s.inv = *w.Inv
	}
	s.mirror = gpu.NewMirror(s.inv)
	s.gpus = gpu.NewSampler(s.mirror, cfg.Interval, 4*time.Hour)
	for i, d := range s.inv.Devices {
		if h := w.History(i); h != nil {
			s.gpus.Seed(d, h)
		}
	}
	s.prev = link.DecodeSamples(s.inv, w.Samples, nil)
	s.mirror.Set(s.inv, w.Hosts, s.prev)
	s.gpus.Round()
	s.srvs = w.Servers
	s.state = c.First.State
	return s
}

// Earlier is what the runner said before this client attached.
func (s *Session) Earlier() []runner.Event {
	c := s.client()
	out := make([]runner.Event, 0, len(c.First.Recent))
	for _, e := range c.First.Recent {
		out = append(out, e.Event(c.First.State))
	}
	return out
}

// Plan is the campaign the session watches.
func (s *Session) Plan() *campaign.Plan { return s.plan }

// State is the campaign's state as last heard.
func (s *Session) State() *runner.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Events are the runner's events, the first one its state on attach; the
// channel closes when the runner has ended the stream or is gone for good.
func (s *Session) Events() <-chan runner.Event { return s.events }

func (s *Session) client() *link.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c
}

// Run feeds Events until the end; call it once, in a goroutine.
func (s *Session) Run() {
	defer close(s.ended)
	defer close(s.events)
	defer s.readingsStopped()
	s.events <- runner.Event{Kind: runner.Progress, Time: time.Now(), State: s.State()}
	for {
		c := s.client()
		finished := false
		watch := time.NewTicker(time.Second)
		warned := false
	stream:
		for {
			select {
			case m, ok := <-c.Messages():
				if !ok {
					break stream
				}
				switch m.Kind {
				case link.KindEvent:
					if m.Event == nil || m.State == nil {
						continue
					}
					s.mu.Lock()
					s.state = m.State
					s.mu.Unlock()
					finished = finished || m.State.Finished
					s.events <- m.Event.Event(m.State)
				case link.KindGPU:
					s.gpuRound(m.GPU)
				case link.KindBye:
					s.bye = m.Text
				}
				warned = false
			case <-watch.C:
				if quiet := c.Silent(); quiet > 3*link.Timeout && !warned {
					warned = true
					s.events <- runner.Event{Kind: runner.Warning, Time: time.Now(), State: s.State(),
						Message: fmt.Sprintf("the campaign's runner (pid %d) has said nothing for %s: stopped (kill -STOP) or stuck?", c.PID(), quiet.Round(time.Second))}
				}
			}
		}
		watch.Stop()
		c.Close()
		if finished || s.State().Finished {
			return
		}
		if s.bye != "" {
			// It let go on purpose (SIGTERM, a stop from another client that
			// ended it): say so, and leave the campaign where it is.
			s.events <- runner.Event{Kind: runner.Detached, Time: time.Now(), State: s.State(), Message: s.bye}
			return
		}
		// Gone without a word: killed. A new runner resumes the campaign.
		old := c.PID()
		nc, started, code := Attach(s.plan, s.cfg, io.Discard, io.Discard)
		if nc == nil {
			s.events <- runner.Event{Kind: runner.Warning, Time: time.Now(), State: s.State(),
				Message: fmt.Sprintf("the campaign's runner (pid %d) went away and no new one could start (exit %d; see %s)", old, code, RunnerLog(s.cfg.StateDir))}
			return
		}
		how := "another client had started"
		if started {
			how = "started"
		}
		msg := fmt.Sprintf("the campaign's runner (pid %d) went away; a new one (pid %d, %s) resumed it from the journal", old, nc.PID(), how)
		s.mu.Lock()
		s.c, s.state = nc, nc.First.State
		s.mu.Unlock()
		s.events <- runner.Event{Kind: runner.Warning, Time: time.Now(), State: nc.First.State, Message: msg}
	}
}

// readingsStopped marks the GPUs' last readings as no longer current once
// the runner, which took them, is gone: a finished campaign's window must
// not show a GPU busy at 95% forever.
func (s *Session) readingsStopped() {
	why := "no readings since " + time.Now().Format("15:04:05") + ": the campaign's runner ended"
	last := make([]gpu.Sample, len(s.prev))
	for i, p := range s.prev {
		last[i] = gpu.Sample{Time: time.Now(), Device: p.Device, Lost: true, LostWhy: why}
	}
	s.mirror.Set(s.inv, nil, last)
	s.gpus.Round()
}

func (s *Session) gpuRound(w *link.GPURound) {
	if w == nil {
		return
	}
	if w.Inv != nil {
		s.inv = *w.Inv
	}
	s.prev = link.DecodeSamples(s.inv, w.Samples, s.prev)
	s.mirror.Set(s.inv, w.Hosts, s.prev)
	s.mu.Lock()
	s.srvs = w.Servers
	s.mu.Unlock()
	s.gpus.Round()
}

// Servers are the services' own view for the window, as the last round
// said (tui.ServerSource).
func (s *Session) Servers() map[string]*link.ServerLine {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srvs
}

func (s *Session) do(op link.Op, phase string) error {
	_, err := s.client().Request(op, phase)
	return err
}

// PhaseRows asks the runner for a phase's steps with their results rows,
// which its events leave out (tui.RowSource: the window's chart).
func (s *Session) PhaseRows(id string) ([]runner.StepState, error) {
	m, err := s.client().Request(link.OpState, "")
	if err != nil {
		return nil, err
	}
	if m.State == nil || m.State.Phase(id) == nil {
		return nil, fmt.Errorf("the runner's state has no phase %q", id)
	}
	return m.State.Phase(id).Steps, nil
}

// Ended is closed once the runner has ended the stream: for a finished
// campaign, after the results file holds its last state.
func (s *Session) Ended() <-chan struct{} { return s.ended }

// Close detaches: the campaign goes on.
func (s *Session) Close() { s.client().Close() }

// tui.GPUs
func (s *Session) Samples() <-chan []gpu.Sample               { return s.gpus.Samples() }
func (s *Session) History(id gpu.DeviceID, n int) []gpu.Point { return s.gpus.History(id, n) }
func (s *Session) Hosts() []gpu.HostState                     { return s.gpus.Hosts() }
func (s *Session) Inventory() gpu.Inventory                   { return s.gpus.Inventory() }

// Approve opens the gates --approve names on a runner that was already
// running (a new runner takes them as a flag). As there, a phase with no
// gate, or past its gate, is left as it is.
func (s *Session) Approve(ids []string) error {
	all := slices.Contains(ids, "all")
	for _, p := range s.State().Phases {
		if !p.Gated() || !all && !slices.Contains(ids, p.ID) {
			continue
		}
		if err := s.Greenlight(p.ID); err != nil {
			return err
		}
	}
	return nil
}
