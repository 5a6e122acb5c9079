package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// TestTracesSummarisedInTheRecord: a phase lists two ranks' traces as
// artifacts; once the phase ends, the writer summarises them in the
// background and the phase's block says where the GPU time went, per
// rank, with the kernels CSV beside the file and links to the profiler's
// own tables; a damaged trace gets its line, not a crash; the summaries
// are kept for `greenlight report`.
func TestTracesSummarisedInTheRecord(t *testing.T) {
	dir := t.TempDir()
	traces := filepath.Join(dir, "traces")
	os.MkdirAll(traces, 0o755)
	var arts []runner.Artifact
	m, _ := filepath.Glob("../trace/testdata/*")
	for _, f := range m {
		b, _ := os.ReadFile(f)
		dst := filepath.Join(traces, filepath.Base(f))
		os.WriteFile(dst, b, 0o644)
		if strings.Contains(f, ".pt.trace.json") {
			arts = append(arts, runner.Artifact{Path: dst, Size: int64(len(b))})
		}
	}
	bad := filepath.Join(traces, "rank7.bad.pt.trace.json.gz")
	os.WriteFile(bad, []byte("not gzip"), 0o644)
	arts = append(arts, runner.Artifact{Path: bad, Size: 8})

	plan := testPlan(t)
	state := filepath.Join(dir, "state")
	os.MkdirAll(state, 0o755)
	path := filepath.Join(dir, "r.md")
	w := NewWriter(path, plan, testEnv(), nil, state)
	st := fullState(plan)
	ps := st.Phase("bench")
	ps.Artifacts = arts
	ps.Status = runner.Running
	events := make(chan runner.Event, 4)
	done := make(chan struct{})
	go func() { w.Run(events, nil); close(done) }()
	events <- runner.Event{Kind: runner.StepStarted, State: st}
	time.Sleep(300 * time.Millisecond)
	if md, _ := os.ReadFile(path); !strings.Contains(string(md), "summarised once it stops growing") {
		t.Errorf("a trace of a running phase is read at once, or not said to wait:\n%s", md)
	}
	st2 := *st
	st2.Phases = append([]runner.PhaseState(nil), st.Phases...)
	st2.Phase("bench").Status = runner.Done
	events <- runner.Event{Kind: runner.PhaseFinished, State: &st2}
	// The campaign ends at once: the writer summarises the traces before
	// its last write, and nothing it does in the background outlives Run.
	close(events)
	<-done
	b, _ := os.ReadFile(path)
	md := string(b)
	for _, want := range []string{"### Where the GPU time went", "| rank 0 | 1.881 ms | 966 |", "| rank 1 | 2.198 ms | 1127 |",
		"Across ranks: GPU kernel time 1.881 ms to 2.198 ms (max/min 1.17)", "| MoE | 355.8 µs", "`cutlass::device_kernel<grouped GEMM>` | MoE | 52 |",
		"rank7.bad.pt.trace.json.gz", "not a JSON trace near byte 1", "[profiler_out_0.txt](traces/profiler_out_0.txt)", "r.bench.kernels.csv"} {
		if !strings.Contains(md, want) {
			t.Errorf("the record lacks %q:\n%s", want, md)
		}
	}
	csv, err := os.ReadFile(filepath.Join(dir, "r.bench.kernels.csv"))
	if err != nil || !strings.Contains(string(csv), "_ZN7cutlass13device_kernel") {
		t.Errorf("kernels CSV: %v\n%s", err, csv)
	}
	if _, err := os.Stat(filepath.Join(state, tracesFile)); err != nil {
		t.Errorf("summaries not kept: %v", err)
	}
	// `greenlight report`: a new writer, no background, the kept summaries.
	os.Remove(filepath.Join(traces, "rank0.1796288149011725086.pt.trace.json.gz"))
	w2 := NewWriter(filepath.Join(dir, "again.md"), plan, testEnv(), nil, state)
	if err := w2.Write(&st2); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "again.md")); !strings.Contains(string(b), "| rank 0 | 1.881 ms | 966 |") {
		t.Errorf("the rebuilt record lacks the kept summary:\n%s", b)
	}
}

// TestDeletedTraceKeepsItsSummary: a trace summarised and then deleted
// (the disk freed) keeps its summary in the record, said so, when the
// record is rebuilt and the phase's artifacts no longer list it.
func TestDeletedTraceKeepsItsSummary(t *testing.T) {
	dir := t.TempDir()
	traces := filepath.Join(dir, "traces")
	os.MkdirAll(traces, 0o755)
	var arts []runner.Artifact
	m, _ := filepath.Glob("../trace/testdata/rank*.pt.trace.json.gz")
	for _, f := range m {
		b, _ := os.ReadFile(f)
		dst := filepath.Join(traces, filepath.Base(f))
		os.WriteFile(dst, b, 0o644)
		arts = append(arts, runner.Artifact{Path: dst, Size: int64(len(b))})
	}
	plan, err := campaign.Parse("c.yaml", filepath.Join(dir, "c.yaml"), []byte(`name: t
phases:
  - id: macro
    artifacts: ['traces/*.pt.trace.json.gz']
    steps:
      - run: |
          true
`))
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	os.MkdirAll(state, 0o755)
	st := &runner.State{Name: "t", Finished: true, Phases: []runner.PhaseState{{ID: "macro", Title: "macro", Status: runner.Done, Attempt: 1, Artifacts: arts,
		Steps: []runner.StepState{{Name: "true", Status: runner.Done}}}}}
	path := filepath.Join(dir, "t.md")
	if err := NewWriter(path, plan, testEnv(), nil, state).Write(st); err != nil {
		t.Fatal(err)
	}
	os.Remove(arts[0].Path)
	arts[0].Gone = true // the runner lists a claimed file deleted since as gone
	st.Phases[0].Artifacts = arts
	if err := NewWriter(path, plan, testEnv(), nil, state).Write(st); err != nil {
		t.Fatal(err)
	}
	md := readFileT(t, path)
	for _, want := range []string{"| rank 0 | 1.881 ms | 966 |", "| rank 1 |", "was deleted after it was summarised: its summary is kept"} {
		if !strings.Contains(md, want) {
			t.Errorf("the rebuilt record lacks %q:\n%s", want, md)
		}
	}
}

func readFileT(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDeletedCaptureTraceKeepsItsSummary: a trace in the phase's own
// artifacts folder (a capture's, which no glob names), summarised then
// deleted, keeps its summary in the record rebuilt.
func TestDeletedCaptureTraceKeepsItsSummary(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	traces := filepath.Join(runner.Layout(state).Artifacts(), "macro")
	os.MkdirAll(traces, 0o755)
	var arts []runner.Artifact
	m, _ := filepath.Glob("../trace/testdata/rank*.pt.trace.json.gz")
	for _, f := range m {
		b, _ := os.ReadFile(f)
		dst := filepath.Join(traces, filepath.Base(f))
		os.WriteFile(dst, b, 0o644)
		arts = append(arts, runner.Artifact{Path: dst, Size: int64(len(b))})
	}
	plan, err := campaign.Parse("c.yaml", filepath.Join(dir, "c.yaml"), []byte("name: t\nphases:\n  - id: macro\n    steps:\n      - run: |\n          true\n"))
	if err != nil {
		t.Fatal(err)
	}
	st := &runner.State{Name: "t", Finished: true, Phases: []runner.PhaseState{{ID: "macro", Title: "macro", Status: runner.Done, Attempt: 1, Artifacts: arts,
		Steps: []runner.StepState{{Name: "true", Status: runner.Done}}}}}
	path := filepath.Join(dir, "t.md")
	if err := NewWriter(path, plan, testEnv(), nil, state).Write(st); err != nil {
		t.Fatal(err)
	}
	os.Remove(arts[0].Path)
	st.Phases[0].Artifacts = arts[1:]
	if err := NewWriter(path, plan, testEnv(), nil, state).Write(st); err != nil {
		t.Fatal(err)
	}
	if md := readFileT(t, path); !strings.Contains(md, "| rank 0 | 1.881 ms | 966 |") || !strings.Contains(md, "its summary is kept") {
		t.Errorf("the rebuilt record lost the deleted capture trace's summary:\n%s", md)
	}
}
