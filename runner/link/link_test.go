package link

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/runner/state"
)

type fakeHandler struct {
	mu  sync.Mutex
	ops []string
	st  *state.State
}

func (h *fakeHandler) Snapshot() (*state.State, *GPURound) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.st, &GPURound{Hosts: []gpu.HostState{{Name: "n1"}}}
}

func (h *fakeHandler) Do(op state.Verb, phase string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if phase == "nope" {
		return errors.New("no phase nope")
	}
	h.ops = append(h.ops, string(op)+" "+phase)
	return nil
}

func listen(t *testing.T, dir string) (*Server, *fakeHandler) {
	t.Helper()
	h := &fakeHandler{st: &state.State{Name: "c", Phases: []state.PhaseState{{ID: "a", Steps: []state.StepState{{Results: []state.Row{{Cols: []string{"x"}, Values: []any{1.0}}}}}}}}}
	s, err := Listen(dir, "test", "planhash", h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close("test over") })
	return s, h
}

// TestSocketIsPrivate: the socket is 0600, whatever the umask, and lies in
// the state dir under its one name.
func TestSocketIsPrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	s, _ := listen(t, dir)
	fi, err := os.Stat(filepath.Join(dir, SocketName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v; want a socket, 0600", fi.Mode())
	}
	if s.Path() != filepath.Join(dir, SocketName) {
		t.Errorf("path %s", s.Path())
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".sock-*"))
	if len(left) > 0 {
		t.Errorf("the private folder it was made in is left: %v", left)
	}
}

// TestSnapshotEventsAndRequests: a client gets the snapshot (results
// included), then events without results rows; its requests are answered
// with the handler's errors; two clients see the same events.
func TestSnapshotEventsAndRequests(t *testing.T) {
	dir := t.TempDir()
	s, h := listen(t, dir)
	s.Event(state.Event{Kind: state.PhaseStarted, Time: time.Now(), Phase: "a", Message: "a started", State: h.st})
	c1, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c2, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if c1.PID() != os.Getpid() || c1.Hello.Version != "test" || c1.Hello.Plan != "planhash" {
		t.Errorf("hello %+v", c1.Hello)
	}
	if st := c1.First.State; st == nil || len(st.Phases[0].Steps[0].Results) != 1 {
		t.Errorf("the snapshot lacks the results: %+v", st)
	}
	if len(c1.First.Recent) != 1 || c1.First.Recent[0].Message != "a started" {
		t.Errorf("recent events on attach: %+v", c1.First.Recent)
	}
	if g := c1.First.GPU; g == nil || len(g.Hosts) != 1 || g.Hosts[0].Name != "n1" {
		t.Errorf("gpu %+v", g)
	}
	s.Event(state.Event{Kind: state.ResultRecorded, Time: time.Now(), Phase: "a", Message: "x=1", State: h.st})
	for _, c := range []*Client{c1, c2} {
		m := <-c.Messages()
		if m.Kind != KindEvent || m.Event.Kind != state.ResultRecorded || m.Event.Message != "x=1" {
			t.Fatalf("got %+v", m)
		}
		if r := m.State.Phases[0].Steps[0].Results; r != nil {
			t.Errorf("an event carried the results rows: %v", r)
		}
	}
	if h.st.Phases[0].Steps[0].Results == nil {
		t.Error("Lite changed the runner's own state")
	}
	if _, err := c2.Request(state.VerbSkip, "a"); err != nil {
		t.Error(err)
	}
	if _, err := c1.Request(state.VerbSkip, "nope"); err == nil || err.Error() != "no phase nope" {
		t.Errorf("error %v; want the handler's", err)
	}
	m, err := c1.Request(OpState, "")
	if err != nil || m.State == nil || len(m.State.Phases[0].Steps[0].Results) != 1 {
		t.Errorf("state request: %v %+v", err, m)
	}
	if got := strings.Join(h.ops, ","); got != "skip a" {
		t.Errorf("ops %q", got)
	}
	s.Close("over")
	m = <-c1.Messages()
	if m == nil || m.Kind != KindBye || m.Text != "over" {
		t.Errorf("last message %+v; want bye", m)
	}
	if _, ok := <-c1.Messages(); ok {
		t.Error("the stream did not end after bye")
	}
	if _, err := Dial(dir); !errors.Is(err, ErrNoRunner) {
		t.Errorf("after close: %v; want ErrNoRunner", err)
	}
}

// TestOldClientRefused: a client of another protocol gets one clear line
// and the connection closes.
func TestOldClientRefused(t *testing.T) {
	dir := t.TempDir()
	listen(t, dir)
	_, err := DialAs(dir, Protocol+1, "v9")
	var r *RefusedError
	if !errors.As(err, &r) || !strings.Contains(r.Why, fmt.Sprintf("speaks protocol %d", Protocol)) {
		t.Fatalf("got %v", err)
	}
	// Seen from the runner's side: a raw client speaking protocol 0.
	c, err := rawDial(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rd := newReader(c)
	if m, _ := rd.next(); m == nil || m.Kind != KindHello {
		t.Fatalf("no hello: %+v", m)
	}
	line, _ := encode(&Msg{Kind: KindHello, Proto: 0, Version: "0.1"})
	c.Write(line)
	m, err := rd.next()
	if err != nil || m.Kind != KindRefused || !strings.Contains(m.Text, "this client speaks protocol 0 (greenlight 0.1)") {
		t.Fatalf("got %+v %v", m, err)
	}
}

// TestOtherUIDRefused: a peer of another uid gets a refusal, checked by
// SO_PEERCRED, even when file modes would let it connect.
func TestOtherUIDRefused(t *testing.T) {
	if dir := os.Getenv("LINK_TEST_DIAL"); dir != "" {
		_, err := Dial(dir)
		fmt.Printf("dial: %v\n", err)
		return
	}
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as another uid (CI runs as root)")
	}
	dir, err := os.MkdirTemp("", "link-uid-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o777)
	listen(t, dir)
	os.Chmod(filepath.Join(dir, SocketName), 0o666) // only the uid check stands in the way
	// The test binary, copied where uid 65534 may run it.
	self, _ := os.Executable()
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "link.test")
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestOtherUIDRefused$")
	cmd.Env = append(os.Environ(), "LINK_TEST_DIAL="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "belongs to uid 0 and talks to no other user (you are uid 65534)") {
		t.Errorf("a client of uid 65534 was not refused:\n%s", out)
	}
	// The socket's own mode (0600) refuses first: the same refusal, in
	// words, not a raw "permission denied".
	os.Chmod(filepath.Join(dir, SocketName), 0o600)
	cmd = exec.Command(exe, "-test.run=^TestOtherUIDRefused$")
	cmd.Env = append(os.Environ(), "LINK_TEST_DIAL="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, _ = cmd.CombinedOutput()
	if !strings.Contains(string(out), "dial: the campaign belongs to another user") {
		t.Errorf("a client of uid 65534 refused by the socket's mode:\n%s", out)
	}
}

// TestSilentRunnerSaidWithinTimeout: a runner that stops answering (kill
// -STOP) costs a client Timeout, not a hang.
func TestSilentRunnerSaidWithinTimeout(t *testing.T) {
	dir := t.TempDir()
	// A socket that accepts and never speaks.
	ln, err := listenRaw(filepath.Join(dir, SocketName))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	start := time.Now()
	_, err = Dial(dir)
	if err == nil || !strings.Contains(err.Error(), "did not send its hello within") {
		t.Errorf("got %v", err)
	}
	if d := time.Since(start); d > Timeout+time.Second {
		t.Errorf("took %v", d)
	}
}

// TestLongStateDir: a state dir deeper than a socket address can name
// still gets its socket.
func TestLongStateDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	os.MkdirAll(dir, 0o755)
	listen(t, dir)
	c, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// TestSocketComesBack: a socket removed under a running runner (its state
// dir removed and rebuilt) is put back, so clients can attach again.
func TestSocketComesBack(t *testing.T) {
	dir := t.TempDir()
	listen(t, dir)
	os.Remove(filepath.Join(dir, SocketName))
	testutil.Eventually(t, 5*time.Second, "the socket back", func() bool {
		c, err := Dial(dir)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	if fi, err := os.Stat(filepath.Join(dir, SocketName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the new socket: %v %v", fi, err)
	}
}

// TestEventsCarryChangedPhasesOnly: an event after the first carries the
// phases that changed, and the client hands on the whole state.
func TestEventsCarryChangedPhasesOnly(t *testing.T) {
	dir := t.TempDir()
	s, _ := listen(t, dir)
	st := func(a, b string) *state.State {
		return &state.State{Name: "c", Phases: []state.PhaseState{{ID: "a", Reason: a}, {ID: "b", Reason: b}, {ID: "c"}}}
	}
	c, err := Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, err := rawDial(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rd := newReader(raw)
	rd.next()
	line, _ := encode(&Msg{Kind: KindHello, Proto: Protocol})
	raw.Write(line)
	rd.next() // snapshot
	s.Event(state.Event{Kind: state.Progress, Time: time.Now(), State: st("1", "1")})
	s.Event(state.Event{Kind: state.Progress, Time: time.Now(), State: st("1", "2")})
	s.Event(state.Event{Kind: state.Progress, Time: time.Now(), State: st("1", "2")})
	// On the wire: whole, then phase 1 alone, then none.
	for i, want := range [][]int{nil, {1}, {}} {
		m, err := rd.next()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 && (m.NPhases != 0 || len(m.State.Phases) != 3) || i > 0 && (m.NPhases != 3 || len(m.Changed) != len(want) || len(m.State.Phases) != len(want)) {
			t.Errorf("event %d on the wire: nphases %d changed %v, %d phases", i, m.NPhases, m.Changed, len(m.State.Phases))
		}
	}
	// Through the client: whole states.
	for i := 0; i < 3; i++ {
		m := <-c.Messages()
		if len(m.State.Phases) != 3 || m.State.Phases[0].Reason != "1" || i > 0 && m.State.Phases[1].Reason != "2" {
			t.Errorf("event %d through the client: %+v", i, m.State.Phases)
		}
	}
}
