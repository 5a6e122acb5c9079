package link

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"syscall"
	"time"

	"github.com/greenlight-run/greenlight/runner/state"
)

// Handler is the runner process's side of the link.
type Handler interface {
	// Snapshot is what a client gets on connecting: the whole state and
	// the GPU side (inventory, hosts, recent history).
	Snapshot() (*state.State, *GPURound)
	// Do carries out a client's request; OpState is answered by the
	// server from Snapshot.
	Do(op state.Verb, phase string) error
}

// Server is the runner's end: it accepts clients, says every event and
// GPU round to all of them, and answers their requests.
type Server struct {
	ln      *net.UnixListener
	path    string
	version string
	plan    string // the campaign file's hash, said in hello
	uid     int    // peers of another uid are refused
	h       Handler

	mu       sync.Mutex
	recent   []*Event           // the last events said, for a client that attaches
	last     []state.PhaseState // the phases as the last event said them
	clients  map[*peer]struct{}
	closed   bool
	attached chan struct{} // closed when the first client has said hello
	once     sync.Once
	done     chan struct{}
}

// Client queues are bounded: a client that stops reading (a suspended
// ssh, a ^Z'd window) is let go rather than let grow the runner.
const (
	maxQueued    = 4096
	writeTimeout = 10 * time.Second
	tickEvery    = 2 * time.Second
)

// Listen creates the socket in dir, mode 0600, and starts accepting.
// version is the greenlight version and plan the campaign file's hash,
// said in hello.
func Listen(dir, version, plan string, h Handler) (*Server, error) {
	path := filepath.Join(dir, SocketName)
	ln, err := bind(dir, path)
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, path: path, version: version, plan: plan, uid: os.Getuid(), h: h,
		clients: map[*peer]struct{}{}, attached: make(chan struct{}), done: make(chan struct{})}
	go s.accept(ln)
	go s.tick()
	go s.keep()
	return s, nil
}

// bind creates the socket at path, 0600 from its first moment.
func bind(dir, path string) (*net.UnixListener, error) {
	// Bound in a private folder, made 0600 there, then moved into place: no
	// moment exists in which another user could connect, whatever the umask.
	tmp, err := os.MkdirTemp(dir, ".sock-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	tmpPath := filepath.Join(tmp, SocketName)
	addr, release, err := shortPath(tmpPath)
	if err != nil {
		return nil, err
	}
	defer release()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("cannot create the runner's socket: %w", err)
	}
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(tmpPath, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	if err := os.Rename(tmpPath, path); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// keep puts the socket back when it vanished (the state dir removed while
// the campaign ran, and rebuilt by the runner): without it no client could
// ever attach again.
func (s *Server) keep() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		if _, err := os.Stat(s.path); !os.IsNotExist(err) {
			continue
		}
		dir := filepath.Dir(s.path)
		if _, err := os.Stat(dir); err != nil {
			continue // the runner rebuilds its state dir first
		}
		ln, err := bind(dir, s.path)
		if err != nil {
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			ln.Close()
			os.Remove(s.path)
			return
		}
		old := s.ln
		s.ln = ln
		s.mu.Unlock()
		old.Close()
		go s.accept(ln)
	}
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

// Attached is closed once a first client has connected and said hello.
func (s *Server) Attached() <-chan struct{} { return s.attached }

// Clients is how many clients are attached now.
func (s *Server) Clients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}

// keepRecent is how many past events a client gets on attach.
const keepRecent = 200

// Event says e to every client.
func (s *Server) Event(e state.Event) {
	w := WireEvent(e)
	lite := Lite(e.State)
	s.mu.Lock()
	defer s.mu.Unlock()
	m := &Msg{Kind: KindEvent, Event: w, State: lite}
	// Only the phases that changed since the last event travel: a running
	// step's progress is one phase, not the campaign.
	if lite != nil && len(s.last) == len(lite.Phases) && len(lite.Phases) > 0 {
		part := *lite
		part.Phases = nil
		m.Changed, m.NPhases = []int{}, len(lite.Phases)
		for i := range lite.Phases {
			if !reflect.DeepEqual(s.last[i], lite.Phases[i]) {
				m.Changed = append(m.Changed, i)
				part.Phases = append(part.Phases, lite.Phases[i])
			}
		}
		m.State = &part
	}
	if lite != nil {
		s.last = lite.Phases
	}
	line, err := encode(m)
	if err != nil {
		return
	}
	if e.Message != "" { // a progress event with words is news (a step re-adopted, a Slurm job's state)
		if len(s.recent) == keepRecent {
			s.recent = append(s.recent[:0:0], s.recent[keepRecent/2:]...)
		}
		s.recent = append(s.recent, w)
	}
	for p := range s.clients {
		p.send(line, false)
	}
}

// GPU says a GPU round to every client. A client
// that has not taken the last round yet gets this one instead.
func (s *Server) GPU(round *GPURound) {
	s.broadcast(&Msg{Kind: KindGPU, GPU: round}, true)
}

func (s *Server) broadcast(m *Msg, latestOnly bool) {
	line, err := encode(m)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range s.clients {
		p.send(line, latestOnly)
	}
}

// Close says bye (with why) to every client, lets the lines already
// queued reach them (for at most a second), closes the socket and removes
// it. Clients see the end of the stream.
func (s *Server) Close(why string) {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.ln.Close()
		os.Remove(s.path)
		line, _ := encode(&Msg{Kind: KindBye, Text: why})
		peers := make([]*peer, 0, len(s.clients))
		for p := range s.clients {
			p.send(line, false)
			p.finish()
			peers = append(peers, p)
		}
		s.mu.Unlock()
		// What is queued reaches each client first: a state of 400,000
		// rows sent to a client that has just attached took over the
		// second this waited, and the client, cut off mid-state, took the
		// runner for one that died (exit 1).
		deadline := time.After(writeTimeout)
		for _, p := range peers {
			select {
			case <-p.gone:
			case <-deadline:
			}
			p.conn.Close()
		}
		close(s.done)
	})
}

func (s *Server) tick() {
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	line, _ := encode(&Msg{Kind: KindTick})
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.mu.Lock()
			for p := range s.clients {
				if time.Since(p.lastSent()) >= tickEvery {
					p.send(line, true)
				}
			}
			s.mu.Unlock()
		}
	}
}

func (s *Server) accept(ln *net.UnixListener) {
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(50 * time.Millisecond) // EMFILE and the like: try again
			continue
		}
		go s.serve(c)
	}
}

// PeerUID is the uid of the process at the other end of c.
func PeerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if cerr != nil {
		return -1, cerr
	}
	return int(cred.Uid), nil
}

func (s *Server) refuse(c *net.UnixConn, why string) {
	line, _ := encode(&Msg{Kind: KindRefused, Text: why})
	c.SetWriteDeadline(time.Now().Add(time.Second))
	c.Write(line)
	c.Close()
}

func (s *Server) serve(c *net.UnixConn) {
	uid, err := PeerUID(c)
	if err != nil || uid != s.uid {
		s.refuse(c, fmt.Sprintf("this campaign's runner (pid %d) belongs to uid %d and talks to no other user (you are uid %d)", os.Getpid(), s.uid, uid))
		return
	}
	hello, _ := encode(&Msg{Kind: KindHello, Proto: Protocol, Version: s.version, PID: os.Getpid(), Plan: s.plan})
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(hello); err != nil {
		c.Close()
		return
	}
	rd := newReader(c)
	m, err := rd.next()
	if err != nil || m.Kind != KindHello {
		s.refuse(c, fmt.Sprintf("expected a hello in greenlight protocol %d", Protocol))
		return
	}
	if m.Proto != Protocol {
		s.refuse(c, fmt.Sprintf("this campaign's runner (pid %d) is greenlight %s and speaks protocol %d; this client speaks protocol %d (greenlight %s): use the same greenlight as the runner, or `greenlight stop` the campaign with it and run it again with this one (the journal resumes it)",
			os.Getpid(), s.version, Protocol, m.Proto, orUnknown(m.Version)))
		return
	}
	c.SetDeadline(time.Time{})
	p := newPeer(c)
	// The snapshot is queued before the peer joins the broadcast, under the
	// lock: no event can fall between the snapshot and the stream.
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.refuse(c, "the runner is ending")
		return
	}
	st, gpu := s.h.Snapshot()
	if line, err := encode(&Msg{Kind: KindSnapshot, State: st, GPU: gpu, Recent: s.recent}); err == nil {
		p.send(line, false)
	}
	s.clients[p] = struct{}{}
	s.mu.Unlock()
	select {
	case <-s.attached:
	default:
		close(s.attached)
	}
	go p.write()
	for {
		m, err := rd.next()
		if err != nil {
			break
		}
		if m.Kind != KindRequest {
			continue
		}
		reply := &Msg{Kind: KindReply, ID: m.ID, Op: m.Op}
		if m.Op == OpState {
			reply.State, reply.GPU = s.h.Snapshot()
		} else if err := s.h.Do(m.Op, m.Phase); err != nil {
			reply.Err = err.Error()
		}
		if line, err := encode(reply); err == nil {
			s.mu.Lock()
			p.send(line, false)
			s.mu.Unlock()
		}
	}
	s.mu.Lock()
	delete(s.clients, p)
	p.finish()
	s.mu.Unlock()
	<-p.gone
	c.Close()
}

func orUnknown(s string) string {
	if s == "" {
		return "of unknown version"
	}
	return s
}

// shortPath returns an address for path that fits a socket address (108
// bytes on Linux): path itself when short, else the same file reached
// through an open descriptor of its folder.
func shortPath(path string) (string, func(), error) {
	if len(path) < 100 {
		return path, func() {}, nil
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("/proc/self/fd/%d/%s", d.Fd(), filepath.Base(path)), func() { d.Close() }, nil
}
