package client

// The session a window or the plain printer watches a runner through.

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/link"
	"github.com/greenlight-run/greenlight/runner/state"
)

// Session is a client's view of the campaign: the runner's events as
// runner events, its GPU rounds through a mirror sampler, its controls as
// requests. When the runner goes away before the campaign's end (killed),
// the session starts a new one, which resumes from the journal, and goes
// on with it.
type Session struct {
	state.Remote // the runner's controls, asked for over the link

	plan    *campaign.Plan
	journal Journal      // its journal, for the rows once the runner has ended
	cfg     *link.Config // how to start a new runner, should this one be killed
	log     io.Writer    // where the session says what it did (the plain printer's output)

	mu     sync.Mutex
	c      *link.Client
	inv    gpu.Inventory
	state  *state.State
	mirror *gpu.Mirror
	gpus   *gpu.Sampler
	prev   []gpu.Sample                // the last round, for process lists sent only when they change
	srvs   map[string]*link.ServerLine // the services' /metrics, as the last round said

	events chan state.Event
	ended  chan struct{} // closed when Run returns: the runner ended the stream, or left
	bye    string        // the runner's last word, when it ended the stream
}

// NewSession watches the runner c answers for; cfg is how a new runner
// is started should that one be killed.
func NewSession(j Journal, plan *campaign.Plan, cfg *link.Config, c *link.Client, log io.Writer) *Session {
	s := &Session{plan: plan, journal: j, cfg: cfg, log: log, c: c, events: make(chan state.Event, 64), ended: make(chan struct{})}
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
func (s *Session) Earlier() []state.Event {
	c := s.client()
	out := make([]state.Event, 0, len(c.First.Recent))
	for _, e := range c.First.Recent {
		out = append(out, e.Event(c.First.State))
	}
	return out
}

// Plan is the campaign the session watches.
func (s *Session) Plan() *campaign.Plan { return s.plan }

// State is the campaign's state as last heard.
func (s *Session) State() *state.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Events are the runner's events, the first one its state on attach; the
// channel closes when the runner has ended the stream or is gone for good.
func (s *Session) Events() <-chan state.Event { return s.events }

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
	s.events <- state.Event{Kind: state.Progress, Time: time.Now(), State: s.State()}
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
					s.events <- state.Event{Kind: state.Warning, Time: time.Now(), State: s.State(),
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
			s.events <- state.Event{Kind: state.Detached, Time: time.Now(), State: s.State(), Message: s.bye}
			return
		}
		// Gone without a word: killed. A new runner resumes the campaign.
		old := c.PID()
		nc, started, code := Attach(s.plan, s.cfg, io.Discard, io.Discard)
		if nc == nil {
			s.events <- state.Event{Kind: state.Warning, Time: time.Now(), State: s.State(),
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
		s.events <- state.Event{Kind: state.Warning, Time: time.Now(), State: nc.First.State, Message: msg}
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

func (s *Session) do(op state.Verb, phase string) error {
	_, err := s.client().Request(op, phase)
	return err
}

// PhaseRows asks the runner for a phase's steps with their results rows,
// which its events leave out (tui.RowSource: the window's chart).
func (s *Session) PhaseRows(id string) ([]state.StepState, error) {
	m, err := s.client().Request(link.OpState, "")
	if err != nil {
		// The runner has ended (the campaign finished, or was stopped):
		// its rows are in the state dir, as report reads them.
		st, rerr := s.journal.Replay(s.plan, s.cfg.StateDir)
		if rerr != nil || st.Phase(id) == nil {
			return nil, err
		}
		return st.Phase(id).Steps, nil
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
