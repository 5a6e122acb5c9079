// Package link is the wire between a campaign's runner process and its
// clients (the window, the plain printer, the one-shot verbs): a Unix
// socket in the campaign's state dir, created 0600 and answering only
// peers of the runner's own uid, carrying newline-delimited JSON.
//
// A conversation: the runner says hello (its protocol version, its
// greenlight version, its pid); the client says hello with its protocol
// version; a client of another version is told so in one line and the
// connection is closed. Then the runner sends a snapshot (the whole
// state, GPU inventory and history), and from then on every event and
// every GPU round, while the client sends requests, each answered by a
// reply with its id. Either side may close at any time; a client's
// leaving never touches the campaign.
package link

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/greenlight-run/greenlight/runner/state"
)

// Protocol is the version of the messages below. A change that an older
// peer would misread gets a new number.
const Protocol = 1

// SocketName is the socket's name in the campaign's state dir.
const SocketName = "runner.sock"

// Message kinds.
const (
	KindHello    = "hello"
	KindSnapshot = "snapshot"
	KindEvent    = "event"
	KindGPU      = "gpu"
	KindRequest  = "req"
	KindReply    = "reply"
	KindRefused  = "refused" // the runner will not talk to this client; Text says why
	KindBye      = "bye"     // the runner is ending; Text says why
	KindTick     = "tick"    // nothing else was said for a while: the runner is alive
)

// Msg is one line on the wire. Kind says which fields are set.
type Msg struct {
	Kind string `json:"t"`

	// hello
	Proto   int    `json:"proto,omitempty"`
	Version string `json:"version,omitempty"`
	PID     int    `json:"pid,omitempty"`
	// Plan is the sha256 of the campaign file the runner runs, so a client
	// with an edited file can say its edits wait for a new runner.
	Plan string `json:"plan,omitempty"`

	// snapshot, event, reply to OpState
	Event *Event       `json:"event,omitempty"`
	State *state.State `json:"state,omitempty"`
	// GPU is the sampler's side (gpu.go).
	GPU *GPURound `json:"gpu,omitempty"`
	// NPhases, on an event, says its State carries only the phases listed
	// in Changed, by index; the others (of NPhases in all) are as the last
	// event left them. Zero: the State is whole. Client merges them, so its
	// Messages carry whole states.
	Changed []int `json:"changed,omitempty"`
	NPhases int   `json:"nphases,omitempty"`
	// Recent are the events a snapshot's client missed: the last ones the
	// runner said (progress left out), oldest first.
	Recent []*Event `json:"recent,omitempty"`

	// req and reply
	ID    int        `json:"id,omitempty"`
	Op    state.Verb `json:"op,omitempty"`
	Phase string     `json:"phase,omitempty"`
	Err   string     `json:"err,omitempty"`

	Text string `json:"text,omitempty"` // refused, bye
}

// Event is a state.Event on the wire; its State travels without the
// results rows (a client that needs them asks for OpState), so an event's
// size does not grow with the campaign's results.
type Event struct {
	Kind    state.EventKind `json:"kind"`
	Time    time.Time       `json:"time"`
	Phase   string          `json:"phase,omitempty"`
	Step    int             `json:"step,omitempty"`
	Message string          `json:"msg,omitempty"`
}

// maxLine bounds one message: a snapshot with 20k results rows and eight
// GPUs' history is a few MB.
const maxLine = 64 << 20

// reader reads messages, one per line.
type reader struct{ sc *bufio.Scanner }

func newReader(r io.Reader) *reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	return &reader{sc}
}

// ErrGarbage is a line that is not one of our messages: the peer is not a
// greenlight, or is one whose protocol we cannot read.
var ErrGarbage = errors.New("not a greenlight message")

func (r *reader) next() (*Msg, error) {
	if !r.sc.Scan() {
		if err := r.sc.Err(); err != nil {
			return nil, err
		}
		return nil, io.EOF
	}
	var m Msg
	if err := json.Unmarshal(r.sc.Bytes(), &m); err != nil || m.Kind == "" {
		return nil, fmt.Errorf("%w: %.80q", ErrGarbage, r.sc.Bytes())
	}
	return &m, nil
}

// encode is one message as a line.
func encode(m *Msg) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// WireEvent is e as it travels.
func WireEvent(e state.Event) *Event {
	return &Event{Kind: e.Kind, Time: e.Time, Phase: e.Phase, Step: e.Step, Message: e.Message}
}

// Event is the wire event back as a state.Event over st.
func (e *Event) Event(st *state.State) state.Event {
	return state.Event{Kind: e.Kind, Time: e.Time, Phase: e.Phase, Step: e.Step, Message: e.Message, State: st}
}

// Lite is st without its results rows, for an event: a copy, st is shared.
func Lite(st *state.State) *state.State {
	if st == nil {
		return nil
	}
	c := *st
	c.Phases = make([]state.PhaseState, len(st.Phases))
	for i, p := range st.Phases {
		if len(p.Steps) > 0 {
			steps := make([]state.StepState, len(p.Steps))
			for j, s := range p.Steps {
				s.Results = nil
				steps[j] = s
			}
			p.Steps = steps
		}
		c.Phases[i] = p
	}
	return &c
}
