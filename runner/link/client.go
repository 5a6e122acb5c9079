package link

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/greenlight-run/greenlight/runner/state"
)

// Client is one connection to a campaign's runner.
type Client struct {
	conn  *net.UnixConn
	wmu   sync.Mutex
	Hello Msg // the runner's hello: its version and pid
	First Msg // the snapshot

	mu      sync.Mutex
	nextID  int
	pending map[int]chan *Msg
	msgs    chan *Msg
	last    time.Time    // when the runner last said anything
	state   *state.State // the campaign as the runner last said it
	err     error        // why the stream ended
	done    chan struct{}
}

// ErrNoRunner means nothing answers on the campaign's socket: no runner
// runs it (or its socket was removed).
var ErrNoRunner = errors.New("no runner answers for this campaign")

// RefusedError is the runner's refusal, in its words.
type RefusedError struct{ Why string }

func (e *RefusedError) Error() string { return e.Why }

// Timeout is how long a client waits for the runner to answer anything.
const Timeout = 2 * time.Second

// SnapshotTimeout bounds the wait for the campaign's state once the
// runner has said hello.
const SnapshotTimeout = 30 * time.Second

// Dial connects to the runner of the campaign whose state dir is dir,
// says hello and reads its snapshot.
func Dial(dir string) (*Client, error) {
	return dial(dir, Protocol, "")
}

// DialAs is Dial speaking protocol proto, for tests of old clients.
func DialAs(dir string, proto int, version string) (*Client, error) {
	return dial(dir, proto, version)
}

func dial(dir string, proto int, version string) (*Client, error) {
	path := filepath.Join(dir, SocketName)
	addr, release, err := shortPath(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, ErrNoRunner
		}
		return nil, err
	}
	defer release()
	d := net.Dialer{Timeout: Timeout}
	nc, err := d.Dial("unix", addr)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			return nil, ErrNoRunner
		}
		if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
			// The socket is its owner's alone (0600): the campaign runs
			// under another user, whichever way the refusal comes.
			return nil, &RefusedError{Why: otherUser(path)}
		}
		return nil, fmt.Errorf("cannot reach the campaign's runner at %s: %w", path, err)
	}
	conn := nc.(*net.UnixConn)
	c := &Client{conn: conn, pending: map[int]chan *Msg{}, msgs: make(chan *Msg, 256), done: make(chan struct{})}
	rd := newReader(conn)
	conn.SetDeadline(time.Now().Add(Timeout))
	fail := func(err error) (*Client, error) { conn.Close(); return nil, err }
	m, err := rd.next()
	if err != nil {
		return fail(c.quiet(err, "its hello"))
	}
	if m.Kind == KindRefused {
		return fail(&RefusedError{m.Text})
	}
	if m.Kind != KindHello {
		return fail(fmt.Errorf("the campaign's runner said %q where a hello belongs: %w", m.Kind, ErrGarbage))
	}
	c.Hello = *m
	line, _ := encode(&Msg{Kind: KindHello, Proto: proto, Version: version, PID: os.Getpid()})
	if _, err := conn.Write(line); err != nil {
		return fail(err)
	}
	if m.Proto != proto {
		// It refuses us too; our words are the clearer ones for our user.
		return fail(&RefusedError{fmt.Sprintf("this campaign's runner (pid %d) is greenlight %s and speaks protocol %d; this greenlight speaks protocol %d: use the same greenlight as the runner, or stop the campaign with it and run it again with this one (the journal resumes it)",
			m.PID, orUnknown(m.Version), m.Proto, proto)})
	}
	// It said hello: it is alive. Its state may be large (every result
	// row of a 400,000-row phase), and a busy machine encodes it slowly:
	// it gets longer than a hello before it is called stuck.
	conn.SetDeadline(time.Now().Add(SnapshotTimeout))
	m, err = rd.next()
	if err != nil {
		return fail(c.quietFor(err, "the campaign's state", SnapshotTimeout))
	}
	if m.Kind == KindRefused || m.Kind == KindBye {
		return fail(&RefusedError{m.Text})
	}
	if m.Kind != KindSnapshot {
		return fail(fmt.Errorf("the campaign's runner said %q where its state belongs: %w", m.Kind, ErrGarbage))
	}
	c.First = *m
	c.state = Lite(m.State) // the base events are merged onto; First keeps the results
	conn.SetDeadline(time.Time{})
	c.last = time.Now()
	go c.read(rd)
	return c, nil
}

func (c *Client) quiet(err error, what string) error { return c.quietFor(err, what, Timeout) }

func (c *Client) quietFor(err error, what string, within time.Duration) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("the campaign's runner did not send %s within %v: it may be stopped (kill -STOP) or stuck", what, within)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		return ErrNoRunner // a runner dying as we connected
	}
	return err
}

// PID is the runner's pid.
func (c *Client) PID() int { return c.Hello.PID }

// Messages are the runner's events, GPU rounds and its bye, in order; the
// channel is closed when the connection ends (Err says why).
func (c *Client) Messages() <-chan *Msg { return c.msgs }

// Done is closed when the connection has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is why the connection ended: nil after a bye or Close.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Silent is how long the runner has said nothing (it ticks every 2 s).
func (c *Client) Silent() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Since(c.last)
}

func (c *Client) read(rd *reader) {
	defer func() {
		c.mu.Lock()
		for id, ch := range c.pending {
			close(ch)
			delete(c.pending, id)
		}
		c.mu.Unlock()
		close(c.msgs)
		close(c.done)
	}()
	for {
		m, err := rd.next()
		if err != nil {
			c.mu.Lock()
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.err = err
			}
			c.mu.Unlock()
			return
		}
		c.mu.Lock()
		c.last = time.Now()
		if m.Kind == KindReply {
			if ch := c.pending[m.ID]; ch != nil {
				delete(c.pending, m.ID)
				ch <- m
			}
			c.mu.Unlock()
			continue
		}
		c.mu.Unlock()
		if m.Kind == KindTick {
			continue
		}
		if m.Kind == KindEvent && m.State != nil {
			m.State = c.merge(m)
			m.Changed, m.NPhases = nil, 0
		}
		c.msgs <- m
		if m.Kind == KindBye {
			return
		}
	}
}

// Request asks the runner for op on phase and waits for its answer, at
// most Timeout: a runner that does not answer is said so, never waited on.
func (c *Client) Request(op state.Verb, phase string) (*Msg, error) {
	ch := make(chan *Msg, 1)
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	line, _ := encode(&Msg{Kind: KindRequest, ID: id, Op: op, Phase: phase})
	c.wmu.Lock()
	c.conn.SetWriteDeadline(time.Now().Add(Timeout))
	_, err := c.conn.Write(line)
	c.wmu.Unlock()
	if err != nil {
		c.forget(id)
		return nil, fmt.Errorf("cannot reach the campaign's runner (pid %d): %w", c.PID(), err)
	}
	t := time.NewTimer(Timeout)
	defer t.Stop()
	select {
	case m, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("the campaign's runner (pid %d) went away before answering", c.PID())
		}
		if m.Err != "" {
			return m, &Refused{Why: m.Err}
		}
		return m, nil
	case <-t.C:
		c.forget(id)
		return nil, fmt.Errorf("the campaign's runner (pid %d) did not answer within %v: it may be stopped (kill -STOP) or stuck", c.PID(), Timeout)
	}
}

func (c *Client) forget(id int) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// Close detaches this client; the campaign goes on.
func (c *Client) Close() error { return c.conn.Close() }

// merge is the whole state an event stands for: its phases over those the
// client last had. A client that cannot place them (a phase count it did
// not expect) keeps what came, which is whole or close to it.
func (c *Client) merge(m *Msg) *state.State {
	if m.NPhases == 0 { // a whole state
		c.state = m.State
		return m.State
	}
	if c.state == nil || len(c.state.Phases) != m.NPhases || len(m.Changed) != len(m.State.Phases) {
		return m.State
	}
	st := *m.State
	st.Phases = append([]state.PhaseState(nil), c.state.Phases...)
	for j, i := range m.Changed {
		if i >= 0 && i < len(st.Phases) {
			st.Phases[i] = m.State.Phases[j]
		}
	}
	c.state = &st
	return &st
}

// otherUser says that the campaign at the socket path belongs to another
// user, naming them where the system can.
func otherUser(path string) string {
	who := "another user"
	var st syscall.Stat_t
	if syscall.Stat(path, &st) == nil {
		who = fmt.Sprintf("another user (uid %d)", st.Uid)
		if u, err := user.LookupId(fmt.Sprint(st.Uid)); err == nil {
			who = fmt.Sprintf("another user, %s (uid %d)", u.Username, st.Uid)
		}
	}
	return fmt.Sprintf("the campaign belongs to %s: its runner takes commands from its owner only (%s)", who, path)
}

// Refused is the runner's answer that it does not take a request (a verb
// whose phase is past it, an unknown phase): bad input, not a fault of
// the link, and said so by the exit status (2, as on a stopped campaign).
type Refused struct{ Why string }

func (e *Refused) Error() string { return e.Why }
