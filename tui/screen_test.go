package tui

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/compare"
	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/link"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/charmbracelet/x/vt"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/runner"
)

// updating reports -update, a flag that teatest's golden package defines.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

var t0 = time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)

const campaignYAML = `
name: k25-profile
phases:
  - id: serve
    title: vLLM server (TP=8)
    service: {run: serve, ready: {log: up}, estimate: 36m}
  - id: macro
    title: torch.profiler decode traces
    needs: [serve]
    steps: [{run: a, estimate: 8m}, {run: b}]
  - id: gemm
    title: Marlin W4A16 GEMM sweep
    gpus: [0]
    steps: [{run: c, estimate: 10m}]
  - id: nsys
    title: nsys timeline in CUDA graphs
    gate: manual
    steps: [{run: d, estimate: 45m}]
`

func testPlan(t testing.TB) *campaign.Plan {
	p, err := campaign.Parse("c.yaml", "/c/c.yaml", []byte(campaignYAML))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// loadingState: the server is 29 shards into 64, 14 minutes to go.
func loadingState(logPath string) *runner.State {
	min := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	return &runner.State{Name: "k25-profile", Started: min(0), Now: min(20), DiskFree: 812 << 30,
		ETA: runner.ETA{Known: true, Remaining: 77 * time.Minute, Waiting: true},
		Phases: []runner.PhaseState{
			{ID: "serve", Title: "vLLM server (TP=8)", Status: runner.Running, Started: min(0), Attempt: 1,
				ETA: runner.ETA{Known: true, Remaining: 14 * time.Minute, Source: runner.SourceProgress, Fraction: -1},
				Steps: []runner.StepState{{Name: "service", Status: runner.Running, Stage: "loading weights", Progress: 29.0 / 64, Log: logPath, Started: min(0),
					ETA: runner.ETA{Known: true, Remaining: 14 * time.Minute, Source: runner.SourceProgress, Rate: "24.8 s/it", Done: 29, Total: 64, Fraction: 29.0 / 64}}}},
			{ID: "macro", Title: "torch.profiler decode traces", Status: runner.Pending, WaitReason: "waits for serve to be ready", ETA: runner.ETA{Known: true, Remaining: 8 * time.Minute},
				Steps: []runner.StepState{{Name: "a", Status: runner.Pending}, {Name: "b", Status: runner.Pending}}},
			{ID: "gemm", Title: "Marlin W4A16 GEMM sweep", Status: runner.Done, Started: min(1), Ended: min(11), GPUs: []int{0},
				Steps: []runner.StepState{{Name: "c", Status: runner.Done}}},
			{ID: "nsys", Title: "nsys timeline in CUDA graphs", Status: runner.Pending, Manual: true, WaitReason: "waits for macro", ETA: runner.ETA{Known: true, Remaining: 45 * time.Minute},
				Steps: []runner.StepState{{Name: "d", Status: runner.Pending}}},
		}}
}

// fakeGPUs serves fixed samples and history.
type fakeGPUs struct {
	n       int
	ch      chan []gpu.Sample
	hosts   []gpu.HostState // remote hosts
	remote  []gpu.Sample    // their GPUs
	servers map[string]*link.ServerLine
}

func (f *fakeGPUs) Servers() map[string]*link.ServerLine { return f.servers }

func newFakeGPUs(n int) *fakeGPUs { return &fakeGPUs{n: n, ch: make(chan []gpu.Sample, 1)} }

func (f *fakeGPUs) Samples() <-chan []gpu.Sample { return f.ch }
func (f *fakeGPUs) Hosts() []gpu.HostState       { return f.hosts }
func (f *fakeGPUs) History(id gpu.DeviceID, n int) []gpu.Point {
	i := id.Index
	var out []gpu.Point
	for k := 0; k < min(n, 300); k++ {
		out = append(out, gpu.Point{T: t0.Add(time.Duration(k) * time.Second), Util: float32((k/10*7 + i*13) % 100)})
	}
	return out
}
func (f *fakeGPUs) Inventory() gpu.Inventory {
	inv := gpu.Inventory{Source: "nvml", Driver: "580.159.04", CUDA: "13.0"}
	for i := 0; i < f.n; i++ {
		inv.Devices = append(inv.Devices, gpu.Device{Index: i, Name: "NVIDIA H200", MemTotal: 143771 << 20})
	}
	for _, s := range f.remote {
		inv.Devices = append(inv.Devices, s.Device)
	}
	return inv
}

func (f *fakeGPUs) samples() []gpu.Sample {
	m := func(v float64) gpu.Metric { return gpu.Metric{V: v, OK: true} }
	var out []gpu.Sample
	for i := 0; i < f.n; i++ {
		s := gpu.Sample{Device: f.Inventory().Devices[i], Util: m(float64(10 + i*11%90)), MemUsed: m(float64(i*17%140) * (1 << 30)),
			Temp: m(float64(40 + i)), Power: m(float64(150 + i*60)), PowerLimit: m(700)}
		switch i {
		case 0:
			s.Procs = []gpu.Process{{PID: 1300, Name: "python3", MemUsed: 100 << 30, Campaign: true, Phase: "serve"}}
		case 2:
			s.Procs = []gpu.Process{{PID: 4242, Name: "python3", MemUsed: 20 << 30}}
		case 3:
			s.Procs = []gpu.Process{{PID: 1480, Name: "python3", MemUsed: 2 << 30, Campaign: true, Phase: "gemm"}}
		case 5:
			s = gpu.Sample{Device: s.Device, Lost: true, LostWhy: "GPU is lost (fell off the bus?)"}
		case 6:
			s.Power = gpu.Metric{Why: "not supported"}
		}
		out = append(out, s)
	}
	return append(out, f.remote...)
}

type fakeRunner struct {
	rows  map[string][]runner.StepState // PhaseRows' answers
	mu    sync.Mutex
	calls []string
}

func (f *fakeRunner) rec(s string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
	return nil
}
func (f *fakeRunner) Pause() error         { return f.rec("pause") }
func (f *fakeRunner) Resume() error        { return f.rec("resume") }
func (f *fakeRunner) Freeze() error        { return f.rec("freeze") }
func (f *fakeRunner) Thaw() error          { return f.rec("thaw") }
func (f *fakeRunner) Skip(id string) error { return f.rec("skip " + id) }
func (f *fakeRunner) SkipPoint(id, point string) error {
	return f.rec("skip-point " + id + " " + point)
}
func (f *fakeRunner) Retry(id string) error      { return f.rec("retry " + id) }
func (f *fakeRunner) Greenlight(id string) error { return f.rec("greenlight " + id) }

// PhaseRows is a runner's answer with the rows its events leave out.
func (f *fakeRunner) PhaseRows(id string) ([]runner.StepState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rows[id], nil
}

func (f *fakeRunner) Stop() error            { return f.rec("stop") }
func (f *fakeRunner) Note(text string) error { return f.rec("note " + text) }

// got lists the calls sorted: each runs in a command of its own, so their
// order is not the keys' order.
func (f *fakeRunner) got() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := append([]string(nil), f.calls...)
	sort.Strings(c)
	return strings.Join(c, ",")
}

// syncBuffer is the terminal the screen paints on in tests: the painter
// writes, the test reads what is new.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Read(p)
}

type screenTest struct {
	tm     *teatest.TestModel
	out    *syncBuffer
	emu    *vt.Emulator
	events chan runner.Event
	gpus   *fakeGPUs
	ctl    *fakeRunner
	dir    string
}

func newScreenTest(t *testing.T, w, h, ngpu int, setup ...func(*fakeGPUs)) *screenTest {
	return newScreenTestOf(t, testPlan(t), w, h, ngpu, setup...)
}

func newScreenTestOf(t *testing.T, plan *campaign.Plan, w, h, ngpu int, setup ...func(*fakeGPUs)) *screenTest {
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("NO_COLOR", "")
	dir := t.TempDir()
	logPath := filepath.Join(dir, "serve.log")
	os.WriteFile(logPath, []byte("INFO 12-02 14:00:01 [core.py:74] Initializing a V1 LLM engine (v0.11.0)\n"+
		"Loading safetensors checkpoint shards:  44% Completed | 28/64 [11:35<14:53, 24.8s/it]\rLoading safetensors checkpoint shards:  45% Completed | 29/64 [12:00<14:28, 24.8s/it]\n"+
		"\x1b[2J\x1b[31mred text\x1b[0m and a bell\a\n"), 0o644)
	report := filepath.Join(dir, "k25.md")
	os.WriteFile(report, []byte("# k25-profile\n\nUser notes here.\n"), 0o644)
	st := &screenTest{events: make(chan runner.Event, 16), gpus: newFakeGPUs(ngpu), ctl: &fakeRunner{}, dir: dir, emu: vt.NewEmulator(w, h), out: &syncBuffer{}}
	for _, f := range setup {
		f(st.gpus)
	}
	m := newModel(Options{Runner: st.ctl, Events: st.events, Sampler: st.gpus, Plan: plan, ReportPath: report,
		Now: func() time.Time { return t0.Add(20 * time.Minute) }, Output: st.out})
	// As Run does: bubbletea's renderer off, the model's screen paints.
	st.tm = teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii), tea.WithoutRenderer()))
	go m.preview.watch(st.tm.GetProgram())
	go io.Copy(io.Discard, st.emu)                       // the emulator's replies to queries; nobody asks for them
	t.Cleanup(func() { m.preview.stop(); st.tm.Quit() }) // not emu.Close: it races with Read inside vt
	st.events <- runner.Event{Kind: runner.Progress, Phase: "serve", State: loadingState(logPath), Time: t0.Add(20 * time.Minute)}
	st.gpus.ch <- st.gpus.samples()
	return st
}

// screen feeds what the program painted to the terminal emulator until
// the screen shows want, and returns it with trailing blanks trimmed. The
// terminal is in raw mode, as under Run: a newline is not a carriage return.
func (s *screenTest) screen(t *testing.T, want string) string {
	t.Helper()
	fed := 0
	var text string
	teatest.WaitFor(t, s.out, func(b []byte) bool {
		s.emu.Write(b[fed:])
		fed = len(b)
		text = trimScreen(s.emu.String())
		return strings.Contains(text, want)
	}, teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(20*time.Millisecond))
	return text
}

func trimScreen(s string) string {
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n") + "\n"
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if updating() {
		os.WriteFile(path, []byte(got), 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./tui -update writes it)", err)
	}
	if string(want) != got {
		t.Errorf("screen differs from %s (go test ./tui -update to accept):\n%s", path, got)
	}
}

func TestScreen80x24(t *testing.T) {
	s := newScreenTest(t, 80, 24, 8)
	got := s.screen(t, "red text")
	golden(t, "screen-80x24.golden", got)
	for _, want := range []string{"ETA 1h17m + gate", "loading weights · 29/64 · ETA 14m (log)", "loading weights · 29/64 · 24.8 s/it · ETA 14m from log progress", "lost: GPU is lost", "!foreign 4242", "left 1480", "n/a", "red text and a bell?"} {
		if !strings.Contains(got, want) {
			t.Errorf("80x24 screen lacks %q", want)
		}
	}
	if strings.Contains(got, "\x1b") || strings.Count(got, "\n") > 24 {
		t.Error("screen holds escape codes or more than 24 lines")
	}
}

func TestScreen200x60(t *testing.T) {
	s := newScreenTest(t, 200, 60, 8)
	got := s.screen(t, "red text")
	golden(t, "screen-200x60.golden", got)
	// The room is used: each GPU's metrics and history under its row.
	for _, want := range []string{"\n   SM ", "PCIe rx", "\n   util ", "· mem ", "last 10m, 10 s a cell"} {
		if strings.Count(got, want) < 7 {
			t.Errorf("200x60 with 8 GPUs shows %q %d times; want it for each GPU", want, strings.Count(got, want))
		}
	}
}

// TestScreen200x60OneGPU: one GPU on a big window, as on an H200 machine,
// gets its metrics and history chart, not a row and 60 empty columns.
func TestScreen200x60OneGPU(t *testing.T) {
	s := newScreenTest(t, 200, 60, 1)
	got := s.screen(t, "red text")
	golden(t, "screen-200x60-1gpu.golden", got)
	for _, want := range []string{"\n   SM ", "\n   util "} {
		if !strings.Contains(got, want) {
			t.Errorf("200x60 with 1 GPU lacks %q", want)
		}
	}
}

func TestScreen16GPUsAt120x40(t *testing.T) {
	s := newScreenTest(t, 120, 40, 16)
	got := s.screen(t, "15 H200")
	for i := 0; i < 16; i++ {
		if !strings.Contains(got, fmt.Sprintf("\n%-2d H200", i)) {
			t.Errorf("GPU %d is not on the 120x40 screen:\n%s", i, got)
		}
	}
}

func TestCompactBelow80x24(t *testing.T) {
	s := newScreenTest(t, 60, 15, 8)
	got := s.screen(t, "vLLM server")
	if !strings.Contains(got, "vLLM server") || strings.Contains(got, "H200") {
		t.Errorf("compact view:\n%s", got)
	}
}

func TestKeysCommandTheRunner(t *testing.T) {
	s := newScreenTest(t, 100, 30, 2)
	s.screen(t, "29/64")
	s.tm.Type("p")
	s.tm.Type("f")
	s.tm.Type("j")
	s.tm.Type("j")
	s.tm.Type("s") // gemm is done: skip is refused by the runner, not asked
	s.tm.Type("r")
	s.tm.Type("j")
	s.tm.Type("g")
	want := "freeze,greenlight nsys,pause,retry gemm,skip gemm"
	testutil.Within(5*time.Second, func() bool { return s.ctl.got() == want })
	if got := s.ctl.got(); got != want {
		t.Errorf("runner got %q; want %q", got, want)
	}
	// Skipping the running phase asks first.
	s.tm.Type("k")
	s.tm.Type("k")
	s.tm.Type("k")
	s.tm.Type("s")
	s.screen(t, "Skip vLLM server (TP=8) while it runs?")
	s.tm.Type("y")
	testutil.Within(5*time.Second, func() bool { return strings.Contains(s.ctl.got(), "skip serve") })
	if !strings.Contains(s.ctl.got(), "skip serve") {
		t.Errorf("after y: %q", s.ctl.got())
	}
}

// The waiting row says "press g": g works wherever the selection is.
func TestGreenlightReachesTheWaitingPhase(t *testing.T) {
	s := newScreenTest(t, 100, 30, 2)
	s.screen(t, "29/64")
	st := loadingState("")
	st.Phases[3].Status = runner.Waiting
	s.events <- runner.Event{Kind: runner.GateWaiting, Phase: "nsys", State: st, Time: t0.Add(20 * time.Minute)}
	s.screen(t, "press g")
	s.tm.Type("g") // the selection is on the server
	testutil.Within(5*time.Second, func() bool { return s.ctl.got() == "greenlight nsys" })
	if got := s.ctl.got(); got != "greenlight nsys" {
		t.Errorf("runner got %q; want greenlight nsys", got)
	}
	if got := s.screen(t, "›⏸ nsys timeline"); !strings.Contains(got, "waiting for your greenlight") {
		t.Errorf("the selection did not move to the waiting phase:\n%s", got)
	}
}

func TestPreviewFollowsEditsKeepingScroll(t *testing.T) {
	s := newScreenTest(t, 100, 30, 2)
	s.screen(t, "29/64")
	s.tm.Send(tea.KeyPressMsg{Code: tea.KeyTab})
	s.screen(t, "User notes here.")
	f, _ := os.OpenFile(filepath.Join(s.dir, "k25.md"), os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintln(f, "\nAn edit from another pane.")
	f.Close()
	start := time.Now()
	s.screen(t, "An edit from another pane.")
	t.Logf("the edit showed after %s", time.Since(start).Round(time.Millisecond))
}

func TestQuitWhileRunningOffersDetachOrStop(t *testing.T) {
	s := newScreenTest(t, 100, 30, 2)
	s.screen(t, "29/64")
	s.tm.Type("q")
	s.screen(t, "d: detach (the campaign goes on)")
	s.tm.Type("d")
	m := s.tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*model)
	if !m.result.Interrupted || !m.result.Detached || !strings.Contains(m.result.Message, "the campaign goes on") {
		t.Errorf("result %+v", m.result)
	}
	if got := s.ctl.got(); got != "" {
		t.Errorf("detaching commanded the runner: %q", got)
	}
}

// TestStopAsksAgain: q then S asks once more before stopping the campaign;
// anything but y keeps it running.
func TestStopAsksAgain(t *testing.T) {
	s := newScreenTest(t, 100, 30, 2)
	s.screen(t, "29/64")
	s.tm.Type("q")
	s.screen(t, "S: stop the campaign")
	s.tm.Type("S")
	s.screen(t, "Stop the campaign? Its running steps")
	s.tm.Type("n")
	s.tm.Type("q")
	s.screen(t, "S: stop the campaign")
	s.tm.Type("S")
	s.screen(t, "Stop the campaign? Its running steps")
	s.tm.Type("y")
	s.screen(t, "stopping every running step")
	// The stop is asked in a Cmd, after the line is said: wait for it.
	testutil.Within(5*time.Second, func() bool { return s.ctl.got() != "" })
	if got := s.ctl.got(); got != "stop" {
		t.Errorf("runner got %q; want one stop", got)
	}
}

func TestASCIIWhenTheLocaleIsNotUTF8(t *testing.T) {
	t.Setenv("LANG", "C")
	t.Setenv("LC_ALL", "")
	t.Setenv("LC_CTYPE", "")
	m := newModel(Options{Runner: &fakeRunner{}, Events: make(chan runner.Event), Sampler: newFakeGPUs(2), Plan: testPlan(t),
		Now: func() time.Time { return t0.Add(20 * time.Minute) }, Output: io.Discard})
	m.w, m.h = 100, 30
	m.state = loadingState("")
	m.samples = m.opts.Sampler.(*fakeGPUs).samples()
	m.View()
	frame := m.frame
	for _, r := range frame {
		if r > 127 {
			t.Fatalf("non-ASCII %q on the screen under LANG=C:\n%s", r, frame)
		}
	}
	if !strings.Contains(frame, "#") || !strings.Contains(frame, " - ") {
		t.Errorf("no ASCII bars or separators:\n%s", frame)
	}
}

func TestCollapseAndSanitize(t *testing.T) {
	got := collapse("a\rb\rc\nx\x1b[2J\x1b[31my\x1b[0m\a\n\rtail \r")
	want := []string{"c", "xy?", "tail "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("collapse = %q; want %q", got, want)
	}
}

// TestHelpFitsAt80x24: the help overlay's text is whole at 80x24: no line
// cut, and it ends with how to close it.
func TestHelpFitsAt80x24(t *testing.T) {
	s := newScreenTest(t, 80, 24, 8)
	s.screen(t, "loading weights")
	s.tm.Send(tea.KeyPressMsg{Code: '?', Text: "?"})
	got := s.screen(t, "any key closes this help")
	for _, want := range []string{"Pause holds the queue after the running step", "processes (SIGSTOP) and its timeout clock.", "attaches again.", "greenlight keys"} {
		if !strings.Contains(got, want) {
			t.Errorf("the help at 80x24 lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "\n") > 24 {
		t.Errorf("the help is taller than 24 lines:\n%s", got)
	}
}

// TestSlurmJobOnScreen: a phase whose job waits in Slurm's queue says
// which job, why it waits and when Slurm expects it to start; once it
// runs, where.
func TestSlurmJobOnScreen(t *testing.T) {
	s := newScreenTest(t, 120, 30, 2)
	s.screen(t, "29/64")
	st := loadingState("")
	gemm := &st.Phases[2]
	starts := t0.Add(25 * time.Minute)
	gemm.Status, gemm.Ended, gemm.Started = runner.Running, time.Time{}, t0.Add(19*time.Minute)
	gemm.Slurm = &runner.SlurmJob{ID: "4242", State: "PENDING", Reason: "Resources", Partition: "h200", Submitted: t0.Add(19 * time.Minute), StartsAt: starts}
	gemm.Steps[0] = runner.StepState{Name: "c", Status: runner.Running, Stage: "queued in Slurm: Resources (waiting for nodes to free up)", Progress: -1,
		ETA: runner.ETA{Queued: true, StartsAt: starts, Known: true, Remaining: 15 * time.Minute, Source: runner.SourceEstimate}}
	gemm.ETA = gemm.Steps[0].ETA
	s.events <- runner.Event{Kind: runner.Progress, Phase: "gemm", State: st, Time: t0.Add(20 * time.Minute)}
	got := s.screen(t, "job 4242 queued")
	for _, want := range []string{"job 4242 queued · starts ~" + starts.Local().Format("15:04") + " (Slurm), then 15m · Resources"} {
		if !strings.Contains(got, want) {
			t.Errorf("the queued job's row lacks %q:\n%s", want, got)
		}
	}
	gemm.Slurm = &runner.SlurmJob{ID: "4242", State: "RUNNING", Nodes: "gpu[01-02]", Partition: "h200", Submitted: t0.Add(19 * time.Minute), Started: t0.Add(20 * time.Minute), QueueWait: time.Minute}
	gemm.Steps[0].Stage, gemm.Steps[0].ETA.Queued = "", false
	gemm.ETA = gemm.Steps[0].ETA
	s.events <- runner.Event{Kind: runner.Progress, Phase: "gemm", State: st, Time: t0.Add(20 * time.Minute)}
	s.screen(t, "job 4242 on gpu[01-02]")
}

// TestResultChangeOnScreen80x24: with a baseline, a new result lands with
// its change first, so that the 80-column status line shows it.
func TestResultChangeOnScreen80x24(t *testing.T) {
	s := newScreenTest(t, 80, 24, 8)
	s.screen(t, "red text")
	base := &record.Record{Campaign: record.Campaign{Name: "bench0"}, Phases: []record.Phase{{ID: "gemm", Better: map[string]campaign.Direction{"tflops": "higher"}}},
		Rows: []record.Row{{Phase: "gemm", Values: map[string]any{"tflops": 612.0}}}}
	word := compare.NewLive(base, testPlan(t), compare.Options{Tolerance: 0.02}).Say("gemm", "", []string{"tflops"}, []any{638.4})
	// As the runner says it (runner.TestResultsSaidWithTheirChange).
	msg := "gemm: " + word + " · result tflops=638.4 m=64 n=4096 k=7168"
	s.events <- runner.Event{Kind: runner.ResultRecorded, Phase: "gemm", Message: msg,
		State: loadingState(filepath.Join(s.dir, "serve.log")), Time: t0.Add(20 * time.Minute)}
	got := s.screen(t, "vs bench0")
	golden(t, "screen-80x24-baseline.golden", got)
	if !strings.Contains(got, "tflops 638.4: +4.3% vs bench0, better, beyond the") {
		t.Errorf("the change is not on the 80-column screen:\n%s", got)
	}
}
