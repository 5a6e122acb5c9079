package runner

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

// TestMain lets the test binary be the supervisor, as the real binary is.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case supervise.Command:
			os.Exit(supervise.Main(os.Args[2:]))
		case "__test-http":
			os.Exit(testHTTPServer(os.Args[2:]))
		case "__test-runner":
			os.Exit(testRunner(os.Args[2:]))
		}
	}
	testutil.WaitBoundParallel(6) // Slurm's cases wait on its controller, a minute for a time limit
	os.Exit(m.Run())
}

// testHTTPServer plays a service: it appends a line to a count file each
// time it starts, logs its readiness, and answers /health on a port.
func testHTTPServer(args []string) int {
	port, count, delay := args[0], args[1], args[2]
	f, _ := os.OpenFile(count, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	fmt.Fprintln(f, os.Getpid())
	f.Close()
	d, _ := time.ParseDuration(delay)
	time.Sleep(d)
	l, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Println("listen:", err)
		return 1
	}
	fmt.Println("Application startup complete.")
	http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))
	return 0
}

// testRunner runs a campaign in a process of its own, so a test can kill
// it with SIGKILL as a crash or a lost ssh session would.
func testRunner(args []string) int {
	p, err := campaign.Load(args[0])
	if err != nil {
		fmt.Println(err)
		return 2
	}
	exe, _ := os.Executable()
	r, err := New(p, Options{StateDir: args[1], Self: []string{exe, supervise.Command}, Grace: 300 * time.Millisecond, Poll: 20 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	r.Start()
	<-r.Done()
	return 0
}

// campaign writes a campaign file into a fresh folder and loads it.
func loadCampaign(t *testing.T, body string) *campaign.Plan {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(strings.TrimLeft(body, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := campaign.Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return p
}

// writeCampaign writes body to path (a campaign edited between runs) and
// loads it.
func writeCampaign(t *testing.T, path, body string) *campaign.Plan {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := campaign.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func testOptions(t testing.TB) Options {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Options{Self: []string{exe, supervise.Command}, Grace: 300 * time.Millisecond, Poll: 20 * time.Millisecond, GPUCount: -1}
}

// run starts a runner and collects its events until the campaign finishes.
type harness struct {
	t      *testing.T
	r      *Runner
	events <-chan Event
	seen   []Event
}

func start(t *testing.T, p *campaign.Plan, opts Options) *harness {
	t.Helper()
	r, err := New(p, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return launch(t, r)
}

// launch subscribes to r, starts it, and closes it at the test's end: for
// a test that tells the runner something before it starts.
func launch(t *testing.T, r *Runner) *harness {
	t.Helper()
	h := &harness{t: t, r: r, events: r.Subscribe()}
	r.Start()
	t.Cleanup(func() {
		r.Close()
		for range h.events { // the contract: drain until closed
		}
	})
	return h
}

// until reads events until one satisfies ok, or fails after timeout.
func (h *harness) until(timeout time.Duration, what string, ok func(Event) bool) Event {
	h.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case e, open := <-h.events:
			if !open {
				h.t.Fatalf("events closed while waiting for %s", what)
			}
			h.seen = append(h.seen, e)
			if ok(e) {
				return e
			}
		case <-deadline:
			var lines []string
			for _, e := range h.seen {
				lines = append(lines, e.Kind.String()+" "+e.Phase+" "+e.Message)
			}
			h.t.Fatalf("timed out waiting for %s; events:\n%s", what, strings.Join(lines, "\n"))
		}
	}
}

func (h *harness) finished(timeout time.Duration) *State {
	h.t.Helper()
	return h.until(timeout, "campaign finished", func(e Event) bool { return e.Kind == CampaignFinished }).State
}

func (h *harness) kind(k EventKind, phase string) Event {
	h.t.Helper()
	return h.until(20*time.Second, k.String()+" "+phase, func(e Event) bool { return e.Kind == k && (phase == "" || e.Phase == phase) })
}

// startNotified starts p's runner with plan's notify: command told of
// its events; told closes once the runner has closed and every notice ran.
func startNotified(t *testing.T, p *campaign.Plan) (h *harness, told <-chan struct{}) {
	t.Helper()
	r, err := New(p, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	h = &harness{t: t, r: r, events: r.Subscribe()}
	events := r.Subscribe()
	r.Start()
	done := make(chan struct{})
	go func() { Notify(p, events, func(string) {}); close(done) }()
	return h, done
}
