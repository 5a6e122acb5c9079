package report

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/conditions"
	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

const stampYAML = `
name: stamps
phases:
  - id: gemm
    gpus: [0, 1]
    sweep:
      m: [1, 64]
    repeat: 2
    expect: {tflops: ">= 10"}
    steps:
      - run: |
          gemm --m ${m}
  - id: decode
    gpus: [0]
    better: higher
    steps:
      - run: |
          bench
`

// runStep is one finished step of a phase, its rows taken while the
// fake fleet reports what trouble says.
func runStep(t *testing.T, s *gpu.Sampler, f *gpu.Fake, trouble map[int]gpu.Trouble, idx int, cols []string, vals ...[]any) runner.StepState {
	t.Helper()
	for i := range 2 {
		f.SetTrouble(i, trouble[i])
	}
	start := time.Now()
	time.Sleep(2 * time.Millisecond)
	s.Round()
	time.Sleep(2 * time.Millisecond)
	st := runner.StepState{Index: idx, Status: runner.Done, Attempt: 1, Started: start}
	for _, v := range vals {
		st.Results = append(st.Results, runner.Row{Step: idx, Time: time.Now(), Cols: cols, Values: v,
			Checks: []runner.Check{{Expect: campaign.Expect{Column: "tflops", Op: ">=", Value: 10}, Value: v[len(v)-1].(float64), Pass: true}}})
	}
	st.Ended = time.Now()
	for i := range 2 {
		f.SetTrouble(i, gpu.Trouble{})
	}
	s.Round() // a clean reading after the step: its trouble is not the next step's
	time.Sleep(2 * time.Millisecond)
	return st
}

// TestRecordAndStamps writes a campaign whose steps ran under each kind
// of trouble (a throttle, a process not of the campaign, an XID) and
// reads the record back strictly: every row with its phase, point,
// repeat, values, checks and the stamp of its step, the same stamp in
// the CSV and the results file.
func TestRecordAndStamps(t *testing.T) {
	plan := parsePlan(t, "/campaigns/c.yaml", stampYAML)
	fake := gpu.NewFake(2, 1)
	s := gpu.NewSampler(fake, time.Second, time.Hour)
	s.SetSessions(nil)
	dir := t.TempDir()
	path := filepath.Join(dir, "stamps.md")
	w := NewWriter(path, plan, Env{Host: "h"}, s, t.TempDir())
	// GPU 0's power limit was lowered; GPU 1's is the board's default.
	w.SetConditions(conditions.NewBook(conditions.Conditions{GPUs: []gpu.Conditions{
		{Index: 0, PowerLimitW: 450, PowerDefault: 700}, {Index: 1, PowerLimitW: 700, PowerDefault: 700}}}))

	cols := []string{"m", "repeat", "tflops"}
	gemm := runner.PhaseState{ID: "gemm", Title: "gemm", Status: runner.Done, Attempt: 1, Started: time.Now()}
	gemm.Steps = append(gemm.Steps,
		// A saturated GPU at its default limit runs at its power cap: no stamp.
		runStep(t, s, fake, map[int]gpu.Trouble{1: {Throttle: []string{"SW power cap"}}}, 0, cols, []any{1.0, 1.0, 11.0}),
		runStep(t, s, fake, map[int]gpu.Trouble{1: {Throttle: []string{"HW thermal", "app clocks"}}}, 1, cols, []any{64.0, 1.0, 640.0}),
		runStep(t, s, fake, map[int]gpu.Trouble{0: {Foreign: []gpu.Process{{PID: 4242, Name: "python3", MemUsed: 2 << 30}}}}, 2, cols, []any{1.0, 2.0, 12.0}),
		runStep(t, s, fake, map[int]gpu.Trouble{0: {XID: 79}}, 3, cols, []any{64.0, 2.0, 650.0}),
	)
	gemm.Ended = time.Now()
	decode := runner.PhaseState{ID: "decode", Title: "decode", Status: runner.Done, Attempt: 1, Started: time.Now()}
	// Trouble on GPU 1, which decode does not use: not its stamp.
	decode.Steps = append(decode.Steps, runStep(t, s, fake, map[int]gpu.Trouble{0: {Throttle: []string{"SW power cap"}, ECC: 2}, 1: {XID: 13}}, 0, []string{"tok_s"}, []any{57.5}))
	decode.Steps[0].Results[0].Checks = nil
	decode.Ended = time.Now()
	st := &runner.State{Name: "stamps", Started: gemm.Started, Now: time.Now(), Phases: []runner.PhaseState{gemm, decode}, Finished: true, Ended: time.Now()}
	if err := w.Write(st); err != nil {
		t.Fatal(err)
	}

	rec, err := record.Read(filepath.Join(dir, "stamps.json"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Campaign.State != "finished" || len(rec.Phases) != 2 || len(rec.Rows) != 5 {
		t.Fatalf("record: state %q, %d phases, %d rows; want finished, 2, 5", rec.Campaign.State, len(rec.Phases), len(rec.Rows))
	}
	if p := rec.Phases[0]; !slices.Equal(p.Axes, []string{"m"}) || p.Repeat != 2 || p.Better["tflops"] != "higher" {
		t.Errorf("gemm phase: %+v", p)
	}
	if rec.Phases[1].Better["*"] != "higher" {
		t.Errorf("decode's better: %v", rec.Phases[1].Better)
	}
	wantStamp := [][]string{
		nil,
		{"GPU 1 throttled (HW thermal)"}, // app clocks are no trouble
		{"a process not of this campaign was on GPU 0 (pid 4242 python3)"},
		{"GPU 0 reported XID 79"},
		{"GPU 0 throttled (SW power cap at 450 W, below its default 700 W)", "GPU 0 counted 2 uncorrected ECC error(s)"},
	}
	wantPoint := []string{"m=1", "m=64", "m=1", "m=64", ""}
	wantRepeat := []int{1, 1, 2, 2, 0}
	for i, r := range rec.Rows {
		if !slices.Equal(r.Stamp, wantStamp[i]) {
			t.Errorf("row %d stamp %q, want %q", i+1, r.Stamp, wantStamp[i])
		}
		if r.Point != wantPoint[i] || r.Repeat != wantRepeat[i] {
			t.Errorf("row %d at %q repeat %d, want %q repeat %d", i+1, r.Point, r.Repeat, wantPoint[i], wantRepeat[i])
		}
		if _, ok := r.Values["m"]; ok {
			t.Errorf("row %d: the axis is a value too: %v", i+1, r.Values)
		}
	}
	if v := rec.Rows[1].Values["tflops"]; v != 640.0 || len(rec.Rows[1].Checks) != 1 || !rec.Rows[1].Checks[0].Pass {
		t.Errorf("row 2: %v %+v", v, rec.Rows[1].Checks)
	}

	f, err := os.Open(filepath.Join(dir, "stamps.gemm.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	table, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if last := table[0][len(table[0])-1]; last != "stamp" {
		t.Fatalf("CSV header %v: no stamp column", table[0])
	}
	for i, row := range table[1:] {
		if got, want := row[len(row)-1], strings.Join(wantStamp[i], "; "); got != want {
			t.Errorf("CSV row %d stamp %q, want %q", i+1, got, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "stamps.decode.csv")); !strings.Contains(string(b), "SW power cap at 450 W, below its default 700 W); GPU 0 counted 2") {
		t.Errorf("decode's CSV lacks its stamp:\n%s", b)
	}
	md, _ := os.ReadFile(path)
	for _, want := range []string{
		"1 result(s) taken while GPU 1 throttled (HW thermal): m=64 (repeat 1)",
		"1 result(s) taken while GPU 0 reported XID 79: m=64 (repeat 2)",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("results file lacks %q", want)
		}
	}

	// `greenlight report` has no GPU history: the stamps kept in the
	// state dir stand.
	w2 := NewWriter(path, plan, Env{Host: "h"}, nil, w.stateDir)
	if err := w2.Write(st); err != nil {
		t.Fatal(err)
	}
	rec2, err := record.Read(filepath.Join(dir, "stamps.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range rec2.Rows {
		if !slices.Equal(rec2.Rows[i].Stamp, wantStamp[i]) {
			t.Errorf("rebuilt: row %d stamp %q, want %q", i+1, rec2.Rows[i].Stamp, wantStamp[i])
		}
	}
}

// TestGPUChartOfAPhase: a finished phase gets one SVG of its GPUs (four
// panels, a line per GPU, throttled readings marked), embedded under its
// GPU table; greenlight report keeps it without a history to draw from.
func TestGPUChartOfAPhase(t *testing.T) {
	plan := parsePlan(t, "/campaigns/c.yaml", stampYAML)
	fake := gpu.NewFake(2, 1)
	s := gpu.NewSampler(fake, time.Second, time.Hour)
	dir := t.TempDir()
	path := filepath.Join(dir, "g.md")
	state := t.TempDir()
	w := NewWriter(path, plan, Env{Host: "h"}, s, state)
	start := time.Now()
	fake.SetTrouble(1, gpu.Trouble{Throttle: []string{"HW thermal"}})
	for range 5 {
		s.Round()
		time.Sleep(2 * time.Millisecond)
	}
	decode := runner.PhaseState{ID: "decode", Title: "decode", Status: runner.Done, Attempt: 1, Started: start, Ended: time.Now(),
		Steps: []runner.StepState{{Status: runner.Done}}}
	gemm := decode
	gemm.ID, gemm.Title = "gemm", "gemm"
	pending := runner.PhaseState{ID: "gemm", Title: "gemm", Status: runner.Pending}
	st := &runner.State{Name: "stamps", Now: time.Now(), Phases: []runner.PhaseState{pending, decode}}
	if err := w.Write(st); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "g.decode.gpus.svg"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(svg)
	for _, want := range []string{"utilization (%)", "memory used (GiB)", "power (W)", "temperature (°C)", "since the phase began", "GPU 0"} {
		if !strings.Contains(text, want) {
			t.Errorf("the chart lacks %q", want)
		}
	}
	if strings.Contains(text, "GPU 1") || strings.Contains(text, "throttled") {
		t.Error("decode uses GPU 0 only: GPU 1 and its throttling are not its")
	}
	if _, err := os.Stat(filepath.Join(dir, "g.gemm.gpus.svg")); err == nil {
		t.Error("a phase that has not run got a GPU chart")
	}
	both := &runner.State{Name: "stamps", Now: time.Now(), Phases: []runner.PhaseState{gemm, decode}}
	if err := w.Write(both); err != nil {
		t.Fatal(err)
	}
	if g := readFileT(t, filepath.Join(dir, "g.gemm.gpus.svg")); !strings.Contains(g, "GPU 1") || !strings.Contains(g, "throttled: thermal") {
		t.Error("gemm's chart lacks GPU 1 or its throttled readings")
	}
	md := readFileT(t, path)
	if !strings.Contains(md, "![GPUs during decode](g.decode.gpus.svg)") {
		t.Errorf("the chart is not embedded:\n%s", md)
	}
	if err := NewWriter(path, plan, Env{Host: "h"}, nil, state).Write(st); err != nil {
		t.Fatal(err)
	}
	if md := readFileT(t, path); !strings.Contains(md, "![GPUs during decode](g.decode.gpus.svg)") {
		t.Error("greenlight report dropped the chart drawn while the campaign ran")
	}
}

// TestIdleRecordNotRewritten: with no new row and no change of status the
// record is not written again at each write of the results file (an idle
// campaign's header moves every 5 s), only after recordIdle; a new row
// writes it once recordEvery has passed.
func TestIdleRecordNotRewritten(t *testing.T) {
	plan := parsePlan(t, "/campaigns/c.yaml", stampYAML)
	dir := t.TempDir()
	path := filepath.Join(dir, "idle.md")
	w := NewWriter(path, plan, Env{Host: "h"}, nil, t.TempDir())
	gemm := runner.PhaseState{ID: "gemm", Title: "gemm", Status: runner.Running, Attempt: 1, Started: time.Now()}
	gemm.Steps = []runner.StepState{{Status: runner.Running, Started: time.Now(),
		Results: []runner.Row{{Phase: "gemm", Time: time.Now(), Cols: []string{"tflops"}, Values: []any{600.0}}}}}
	st := &runner.State{Name: "idle", Started: gemm.Started, Now: time.Now(), Phases: []runner.PhaseState{gemm}}
	written := func() time.Time {
		rec, err := record.Read(filepath.Join(dir, "idle.json"))
		if err != nil {
			t.Fatal(err)
		}
		return rec.Campaign.Written
	}
	if err := w.Write(st); err != nil {
		t.Fatal(err)
	}
	first := written()
	w.record.written = time.Now().Add(-recordEvery) // a burst's wait has passed
	w.Write(st)
	if written() != first {
		t.Error("an idle campaign's record was written again with nothing new")
	}
	w.record.written = time.Now().Add(-recordIdle)
	w.Write(st)
	if written() == first {
		t.Errorf("not written again after %s", recordIdle)
	}
	second := written()
	w.record.written = time.Now().Add(-recordEvery)
	st.Phases[0].Steps[0].Results = append(st.Phases[0].Steps[0].Results, runner.Row{Phase: "gemm", Time: time.Now(), Cols: []string{"tflops"}, Values: []any{610.0}})
	w.Write(st)
	if written() == second {
		t.Error("a new row did not write the record")
	}
}
