package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/runner"
)

// stampYAML is a campaign of a GEMM sweep on GPUs 0 and 1 and a decode
// on GPU 0 (the daemon's witness tests read it too). Read when a test
// asks: the test binary may run as a step's supervisor, elsewhere.
func stampYAML(t *testing.T) string {
	t.Helper()
	return string(must(os.ReadFile("testdata/stamps.yaml")))
}

// TestGPUChartOfAPhase: a finished phase gets one SVG of its GPUs (four
// panels, a line per GPU, throttled readings marked), embedded under its
// GPU table; greenlight report keeps it without a history to draw from.
func TestGPUChartOfAPhase(t *testing.T) {
	plan := parsePlan(t, "/campaigns/c.yaml", stampYAML(t))
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
	plan := parsePlan(t, "/campaigns/c.yaml", stampYAML(t))
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

// TestStampsAreTheFacts: the record's stamps are the steps' facts, as
// the runner journaled them: a step without facts (running, or run with
// no monitor) has none, whatever the GPU history says now; and a state
// dir from before facts were journaled keeps its stamps, power and
// clocks read from the files it kept them in.
func TestStampsAreTheFacts(t *testing.T) {
	plan := parsePlan(t, "/campaigns/c.yaml", stampYAML(t))
	dir, state := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "f.md")
	fake := gpu.NewFake(2, 1)
	s := gpu.NewSampler(fake, time.Second, time.Hour)
	fake.SetTrouble(0, gpu.Trouble{XID: 79}) // the history's trouble, not judged here
	s.Round()
	at := time.Now().Add(-time.Minute)
	step := func(idx int, f *runner.StepFacts, tflops float64) runner.StepState {
		return runner.StepState{Index: idx, Status: runner.Done, Attempt: 1, Started: at, Ended: time.Now(), Facts: f,
			Results: []runner.Row{{Step: idx, Cols: []string{"m", "repeat", "tflops"}, Values: []any{1.0, 1.0, tflops}}}}
	}
	gemm := runner.PhaseState{ID: "gemm", Status: runner.Done, Attempt: 1, Started: at, Ended: time.Now(), Steps: []runner.StepState{
		step(0, &runner.StepFacts{Readings: 8, Stamp: []string{"GPU 1 throttled (HW thermal)"}}, 600),
		step(1, nil, 610),
		step(2, &runner.StepFacts{Readings: 8}, 605),
	}}
	st := &runner.State{Name: "f", Started: at, Now: time.Now(), Phases: []runner.PhaseState{gemm, {ID: "decode", Status: runner.Pending}}}
	if err := NewWriter(path, plan, Env{Host: "h"}, s, state).Write(st); err != nil {
		t.Fatal(err)
	}
	rec, err := record.Read(filepath.Join(dir, "f.json"))
	if err != nil {
		t.Fatal(err)
	}
	if md := readFileT(t, path); strings.Contains(md, "read only from part-way") {
		t.Errorf("no step was read part-way, and the record says one was:\n%s", md)
	}
	var got []string
	for _, r := range rec.Rows {
		got = append(got, strings.Join(r.Stamp, ";"))
	}
	if want := []string{"GPU 1 throttled (HW thermal)", "", ""}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("rows' stamps %q, want %q", got, want)
	}

	// A step the monitor read only from part-way is said so.
	gemm.Steps[2].Facts = &runner.StepFacts{Readings: 3, ReadFrom: time.Date(2026, 12, 5, 3, 4, 5, 0, time.Local)}
	st.Phases[0] = gemm
	if err := NewWriter(path, plan, Env{Host: "h"}, s, state).Write(st); err != nil {
		t.Fatal(err)
	}
	if md := readFileT(t, path); !strings.Contains(md, "the GPUs of 1 step(s) were read only from part-way through them (no reading before: a runner started again while they ran, or a GPU source answered late): m=1 (repeat 2) from 03:04:05;") {
		t.Errorf("the record does not say step 3 was read part-way:\n%s", md)
	}

	// An older state dir: no facts in the journal, its own files.
	older := t.TempDir()
	key := "gemm/1/1/1"
	os.WriteFile(filepath.Join(older, "stamps.json"), []byte(`{"`+key+`": ["GPU 0 reported XID 13"]}`), 0o644)
	os.WriteFile(filepath.Join(older, "step-power.json"), []byte(`{"`+key+`": [1400, 2]}`), 0o644)
	os.WriteFile(filepath.Join(older, "clocks.json"), []byte(`{"`+key+`": 1755}`), 0o644)
	w := NewWriter(path, plan, Env{Host: "h"}, nil, older)
	gemm.Steps[1].Facts = nil
	f := w.factsOf(gemm, gemm.Steps[1])
	if f == nil || f.Stamped() != "GPU 0 reported XID 13" || f.PowerW != 1400 || f.PowerGPUs != 2 || f.SMClockMHz != 1755 {
		t.Errorf("an older state dir's facts of step 2: %+v", f)
	}
	if f := w.factsOf(gemm, gemm.Steps[0]); f == nil || f.Stamped() != "GPU 1 throttled (HW thermal)" {
		t.Errorf("the journal's facts give way to an older file's: %+v", f)
	}
}

// TestRowsTakeTheirFactsAtTheEnd: a row recorded while its step ran has
// no GPU facts; once the step's facts come, its row in NAME.json carries
// them (the row is encoded again, not kept as first encoded).
func TestRowsTakeTheirFactsAtTheEnd(t *testing.T) {
	plan := parsePlan(t, "/campaigns/c.yaml", stampYAML(t))
	dir := t.TempDir()
	path := filepath.Join(dir, "f.md")
	w := NewWriter(path, plan, Env{Host: "h"}, nil, t.TempDir())
	at := time.Now().Add(-time.Minute)
	step := runner.StepState{Index: 0, Status: runner.Running, Attempt: 1, Started: at,
		Results: []runner.Row{{Step: 0, Cols: []string{"m", "repeat", "tflops"}, Values: []any{1.0, 1.0, 600.0}}}}
	gemm := runner.PhaseState{ID: "gemm", Status: runner.Running, Attempt: 1, Started: at, Steps: []runner.StepState{step}}
	st := &runner.State{Name: "f", Started: at, Now: time.Now(), Finished: true, Phases: []runner.PhaseState{gemm, {ID: "decode", Status: runner.Pending}}}
	row := func() *record.GPUFacts {
		t.Helper()
		if err := w.Write(st); err != nil {
			t.Fatal(err)
		}
		rec, err := record.Read(filepath.Join(dir, "f.json"))
		if err != nil || len(rec.Rows) != 1 {
			t.Fatalf("record: %v, %+v", err, rec)
		}
		return rec.Rows[0].GPU
	}
	if g := row(); g != nil {
		t.Errorf("a running step's row has GPU facts: %+v", g)
	}
	st.Phases[0].Steps[0].Status, st.Phases[0].Steps[0].Ended = runner.Done, time.Now()
	st.Phases[0].Steps[0].Facts = &runner.StepFacts{Readings: 60, PowerW: 690, PowerGPUs: 1, EnergyWh: 11.5, SMClockMHz: 1755}
	if g := row(); g == nil || g.PowerW != 690 || g.SMClockMHz != 1755 || g.EnergyWh != 11.5 {
		t.Errorf("the row once its step's facts came: %+v; want them", g)
	}
}
