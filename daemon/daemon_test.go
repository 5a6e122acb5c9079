package daemon

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/statedir"
	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/link"
	"github.com/greenlight-run/greenlight/runner/state"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

// TestMain lets the test binary be the step supervisor, as the real
// binary is: the runner process runs here, in-process, without building
// greenlight.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == supervise.Command {
		os.Exit(supervise.Main(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// TestConfigRoundTrip: what a client writes to the runner's argv is what
// the runner reads back.
func TestConfigRoundTrip(t *testing.T) {
	in := link.Config{File: "/c/c.yaml", StateDir: "/c/.greenlight/x", Report: "/c/out.md", GPU: []string{"fake:8", "dcgm:http://n1:9400"},
		Interval: 1500 * time.Millisecond, Approve: "a,b", Demo: true, Retry: "gemm"}
	out, err := link.Parse(in.Args())
	if err != nil {
		t.Fatal(err)
	}
	out.Given, in.Given = nil, nil
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip:\n got %+v\nwant %+v", out, in)
	}
	for _, bad := range [][]string{
		{"--state-dir", "rel", "c.yaml"},
		{"--state-dir", "/s", "--interval", "10ms", "c.yaml"},
		{"--state-dir", "/s"},
		{"--bogus", "c.yaml"},
	} {
		if _, err := link.Parse(bad); err == nil {
			t.Errorf("link.Parse(%q) took it", bad)
		}
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestMainRunsACampaign: the runner process, in-process: it answers on
// its socket while the campaign runs (state and GPU side in the
// snapshot, a request carried out), writes the results file, prints its
// event lines, and exits 0 once every phase is done.
func TestMainRunsACampaign(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	os.WriteFile(file, []byte(`name: d
phases:
  - id: a
    steps:
      - run: |
          echo '{"x": 1}' >> "$GREENLIGHT_RESULTS"
          while [ ! -e go ]; do sleep 0.05; done
  - id: b
    needs: [a]
    gate: manual
    steps:
      - run: |
          echo b ran
`), 0o644)
	stateDir := filepath.Join(dir, ".greenlight", "d")
	stateDir = filepath.Join(dir, "elsewhere") // not the default: later commands must find it
	cfg := link.Config{File: file, StateDir: stateDir, Report: filepath.Join(dir, "out", "d.md"), GPU: []string{"fake:2"}, Interval: 200 * time.Millisecond}
	var out syncBuf
	code := make(chan int, 1)
	go func() { code <- Main("test", cfg.Args(), &out, &out) }()
	var c *link.Client
	testutil.Eventually(t, 20*time.Second, "the runner's socket", func() bool {
		var err error
		c, err = link.Dial(stateDir)
		return err == nil
	})
	defer c.Close()
	if c.First.State == nil || len(c.First.State.Phases) != 2 || c.First.GPU == nil || c.First.GPU.Inv == nil || len(c.First.GPU.Inv.Devices) != 2 {
		t.Fatalf("snapshot: stateDir %+v, gpu %+v", c.First.State, c.First.GPU)
	}
	if _, err := c.Request(state.VerbApprove, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Request(state.VerbSkip, "nope"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("a request for an unknown phase: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
	select {
	case got := <-code:
		if got != runner.ExitOK {
			t.Errorf("Main = %d; want 0\n%s", got, out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the runner did not end with its campaign:\n%s", out.String())
	}
	md, _ := os.ReadFile(filepath.Join(dir, "out", "d.md"))
	if !strings.Contains(string(md), "Status:** finished") {
		t.Errorf("results file:\n%s", md)
	}
	// A later command given neither --stateDir-dir nor --report finds both.
	asWritten, err := campaign.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if got, note, _ := statedir.Resolve(asWritten, ""); got != stateDir || note == "" {
		t.Errorf("the stateDir dir found without the flag: %q (%q); want %q", got, note, stateDir)
	}
	if got := link.SavedReport(stateDir); got != cfg.Report {
		t.Errorf("the results file found without the flag: %q; want %q", got, cfg.Report)
	}
	for _, want := range []string{"runner pid", "b greenlit", "campaign finished"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the runner's lines lack %q:\n%s", want, out.String())
		}
	}
}
