package report

import (
	"flag"
	"fmt"
	"github.com/greenlight-run/greenlight/report/mdfile"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/runner"
)

var update = flag.Bool("update", false, "rewrite golden files")

const campaignYAML = `
name: golden
phases:
  - id: serve
    title: vLLM server
    gpus: [0, 1]
    service: {run: serve, ready: {log: up}}
  - id: bench
    title: Decode | throughput
    needs: [serve]
    expect: {tok_s: ">= 55"}
    artifacts: [traces/*.json]
    steps:
      - {name: decode, run: bench}
      - {name: odd, run: odd}
  - id: flaky
    steps: [{run: "exit 1"}]
  - id: later
    gate: manual
    steps: [{run: "true"}]
`

// parsePlan is a test's campaign file, loaded as greenlight run would.
func parsePlan(t testing.TB, path, yaml string) *campaign.Plan {
	t.Helper()
	p, err := campaign.Parse("c.yaml", path, []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func testPlan(t testing.TB) *campaign.Plan {
	t.Helper()
	p := parsePlan(t, "/campaigns/c.yaml", campaignYAML)
	return p
}

var t0 = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)

// fullState is a campaign mid-way, with odd values in its tables.
func fullState(p *campaign.Plan) *runner.State {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	row := func(step int, cols []string, vals []any, checks ...runner.Check) runner.Row {
		return runner.Row{Phase: "bench", Step: step, Time: at(40), Cols: cols, Values: vals, Checks: checks}
	}
	ge55 := campaign.Expect{Column: "tok_s", Op: ">=", Value: 55}
	st := &runner.State{Name: p.Name, Started: t0, Now: at(50), ETA: runner.ETA{Known: true, Remaining: 20 * time.Minute, Waiting: true}}
	st.Warnings = []string{"flaky: step 1 failed (exited with code 1); retry 1 of 1"}
	st.Phases = []runner.PhaseState{
		{ID: "serve", Title: "vLLM server", Status: runner.Ready, Started: at(0), Attempt: 1, Readopted: true,
			Steps: []runner.StepState{{Name: "service", Status: runner.Running, Stage: "ready"}}},
		{ID: "bench", Title: "Decode | throughput", Status: runner.Done, Started: at(36), Ended: at(44), Attempt: 1, ExpectFailed: 1, WasFrozen: true,
			Steps: []runner.StepState{
				{Name: "decode", Status: runner.Done, Ended: at(40), CPU: 3*time.Hour + 12*time.Minute, PeakMem: 41 << 30, PeakOf: "cgroup", Results: []runner.Row{
					row(0, []string{"tok_s", "batch"}, []any{57.25, 16.0}, runner.Check{Expect: ge55, Value: 57.25, Pass: true}),
					row(0, []string{"tok_s", "batch"}, []any{41.5, 64.0}, runner.Check{Expect: ge55, Value: 41.5, Pass: false}),
				}, Summary: "- decode is memory-bound below batch 32\n"},
				{Index: 1, Name: "odd", Status: runner.Done, Ended: at(44), CPU: 1500 * time.Millisecond, PeakMem: 300 << 20, PeakOf: "process",
					Left: []string{"pid 1480 python3", "pid 1481 sh"}, LeftPIDs: []int{1480, 1481}, Results: []runner.Row{
						row(1, []string{"name", "value", "note"}, []any{"a|b", 1234567.891, "line one\nline two"}),
						row(1, []string{"name", "value", "extra"}, []any{"ünïcødé ✓", 0.000012345, nil}),
						row(1, []string{"name"}, []any{""}),
					}},
			},
			Artifacts: []runner.Artifact{{Path: "/campaigns/traces/rank0.json", Size: 3 << 30}, {Path: "/campaigns/traces/rank1.json", Size: 1536 << 20}}},
		{ID: "flaky", Title: "flaky", Status: runner.Failed, Reason: "step 1 (exit 1) exited with code 1", Started: at(44), Ended: at(45), Attempt: 1, Retried: 1,
			Steps: []runner.StepState{{Name: "exit 1", Status: runner.Failed, Reason: "exited with code 1", Log: "/state/steps/flaky/a1-s1-t2/log"}}},
		{ID: "later", Title: "later", Status: runner.Waiting, Manual: true, Steps: []runner.StepState{{Name: "true", Status: runner.Pending}}},
	}
	return st
}

type fakeGPUs struct{}

func (fakeGPUs) Summarize(from, to time.Time, devices []int) []gpu.Summary {
	var out []gpu.Summary
	for _, i := range []int{0, 1} {
		if devices != nil && i >= len(devices) {
			continue
		}
		s := gpu.Summary{Device: gpu.Device{Index: i, Name: "NVIDIA H200", MemTotal: 141 << 30}, Samples: 60,
			MeanUtil: 71.5, PeakUtil: 99, PeakMem: 127.4, MeanPower: 512, PeakPower: 690, EnergyWh: 68.3, PeakTemp: 74}
		if i == 0 {
			s.Ours = []gpu.Process{{PID: 1480, Name: "python3", MemUsed: 2600 << 20, Campaign: true, Phase: "bench"}}
			// Seen only as it ended (its environment gone): taken for a
			// stranger by the sampler, named as the step's by the record.
			s.Foreign = []gpu.Process{{PID: 1481, Name: "sh", MemUsed: 512 << 20}}
		}
		if i == 1 {
			s.Ours = []gpu.Process{{PID: 1999, Name: "python3", MemUsed: 1 << 30, Campaign: true, Phase: "flaky"}}
			s.Throttle = []string{"SW power cap"}
			s.Foreign = []gpu.Process{{PID: 4242, Name: "python3", MemUsed: 20 << 30}}
		}
		out = append(out, s)
	}
	return out
}

func testEnv() Env {
	return Env{Host: "gpu-node-7", Inventory: gpu.Inventory{Source: "nvml", Driver: "580.159.04", CUDA: "13.0",
		Devices: []gpu.Device{{Index: 0, Name: "NVIDIA H200", UUID: "GPU-0000", MemTotal: 143771 << 20}, {Index: 1, Name: "NVIDIA H200", UUID: "GPU-0001", MemTotal: 143771 << 20}}}}
}

func newTestWriter(t testing.TB, path string) *Writer {
	return NewWriter(path, testPlan(t), testEnv(), fakeGPUs{}, "")
}

func TestGoldenFullReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "golden.md")
	w := newTestWriter(t, path)
	if err := w.Write(fullState(w.plan)); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	golden := filepath.Join("testdata", "full.md")
	if *update {
		os.WriteFile(golden, got, 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("report differs from %s (run go test ./report -update to accept):\n%s", golden, got)
	}
}

// tableRowsValid checks every table row has as many cells as its header.
func tableRowsValid(t *testing.T, md string) {
	t.Helper()
	cells := func(line string) int {
		n := 0
		for i := 0; i < len(line); i++ {
			if line[i] == '\\' {
				i++
				continue
			}
			if line[i] == '|' {
				n++
			}
		}
		return n
	}
	header := -1
	for i, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			header = -1
			continue
		}
		if header < 0 {
			header = cells(line)
			continue
		}
		if c := cells(line); c != header {
			t.Errorf("line %d has %d cell borders, its header %d: %s", i+1, c, header, line)
		}
	}
}

func TestTablesWithOddValuesStayValid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.md")
	w := newTestWriter(t, path)
	if err := w.Write(fullState(w.plan)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	md := string(b)
	tableRowsValid(t, md)
	for _, want := range []string{`a\|b`, "line one<br>line two", "ünïcødé ✓", "1234567.9", "1.234e-05", "57.25 ✓ (>= 55)", "41.5 ✗ (>= 55)", "| decode |"} {
		if want == "| decode |" {
			continue
		}
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func TestForeignFileGetsBlocksBelow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.md")
	mine := "# My notes\n\nSome thoughts | with a pipe\nno trailing newline"
	os.WriteFile(path, []byte(mine), 0o644)
	w := newTestWriter(t, path)
	if err := w.Write(fullState(w.plan)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(b), mine+"\n<!-- greenlight:begin header -->") {
		t.Errorf("the user's text is not kept first, byte for byte:\n%.300s", b)
	}
}

func TestResumeUpdatesBlocksNotDuplicates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.md")
	st := fullState(testPlan(t))
	newTestWriter(t, path).Write(st)
	os.WriteFile(path, append(must(os.ReadFile(path)), []byte("\nnote between runs\n")...), 0o644)
	st.Now = st.Now.Add(time.Hour)
	st.Phases[3].Status = runner.Done
	if err := newTestWriter(t, path).Write(st); err != nil { // a new monitor after a restart
		t.Fatal(err)
	}
	b := string(must(os.ReadFile(path)))
	for _, id := range []string{"header", "phase:serve", "phase:bench", "phase:flaky", "phase:later"} {
		if n := strings.Count(b, mdfile.BeginMarker(id)); n != 1 {
			t.Errorf("%d blocks %s; want 1", n, id)
		}
	}
	if !strings.Contains(b, "note between runs") || !strings.Contains(b, "Elapsed:** 1h50m") {
		t.Errorf("the note or the new elapsed time is missing")
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestDamagedMarkersReappendOnce(t *testing.T) {
	for _, tc := range []struct{ name, edit string }{
		{"end deleted", "<!-- greenlight:end phase:bench -->\n"},
		{"begin deleted", "<!-- greenlight:begin phase:bench -->\n"},
		{"begin garbled", "<!-- greenlight:begin phase:bench -->"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "r.md")
			w := newTestWriter(t, path)
			st := fullState(w.plan)
			w.Write(st)
			b := string(must(os.ReadFile(path)))
			replacement := ""
			if tc.name == "begin garbled" {
				replacement = "<!-- greenlight:begn phase:bench -->"
			}
			b = strings.Replace(b, tc.edit, replacement, 1)
			b += "user line after\n"
			os.WriteFile(path, []byte(b), 0o644)
			userBefore := mdfile.UserText(b)
			for i := 0; i < 3; i++ {
				if err := w.Write(st); err != nil {
					t.Fatal(err)
				}
			}
			out := string(must(os.ReadFile(path)))
			if n := strings.Count(out, mdfile.BeginMarker("phase:bench")); n != 1 {
				t.Errorf("%d bench blocks after repair; want 1", n)
			}
			if !strings.Contains(out, "had a damaged or deleted marker") {
				t.Error("no warning in the header")
			}
			if got := mdfile.UserText(out); got != userBefore && got != userBefore+"\n" {
				t.Errorf("user text changed:\n--- before\n%s\n--- after\n%s", userBefore, got)
			}
			if !strings.HasSuffix(out, mdfile.EndMarker("phase:bench")) && !strings.Contains(out, "user line after\n") {
				t.Error("user line lost")
			}
		})
	}
}

// TestConcurrentAppendsNeverLost: an editor-like process appends lines
// while the writer rewrites the file, 1000 rounds each.
func TestConcurrentAppendsNeverLost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.md")
	w := newTestWriter(t, path)
	st := fullState(w.plan)
	if err := w.Write(st); err != nil {
		t.Fatal(err)
	}
	const rounds = 1000
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < rounds; i++ {
			s := *st
			s.Now = st.Now.Add(time.Duration(i) * time.Second)
			w.Write(&s) // "keeps changing" under this storm is allowed: the next write retries
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < rounds; i++ {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Error(err)
				return
			}
			fmt.Fprintf(f, "note %d\n", i)
			f.Close()
			if i%3 == 0 {
				time.Sleep(50 * time.Microsecond)
			}
		}
	}()
	wg.Wait()
	for i := 0; i < 5; i++ {
		if err := w.Flush(); err == nil {
			break
		}
	}
	out := string(must(os.ReadFile(path)))
	for i := 0; i < rounds; i++ {
		if n := strings.Count(out, fmt.Sprintf("note %d\n", i)); n != 1 {
			j := strings.Index(out, fmt.Sprintf("note %d\n", i-1))
			t.Errorf("note %d appears %d times; after note %d: %q", i, n, i-1, out[j:min(len(out), j+120)])
		}
	}
	if n := strings.Count(out, mdfile.BeginMarker("header")); n != 1 {
		t.Errorf("%d header blocks", n)
	}
}

// TestEditorSavesBetweenWrites: an editor that saves by rename, as vim
// does, alternating with writes.
func TestEditorSavesBetweenWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.md")
	w := newTestWriter(t, path)
	st := fullState(w.plan)
	for i := 0; i < 200; i++ {
		s := *st
		s.Now = st.Now.Add(time.Duration(i) * time.Second)
		if err := w.Write(&s); err != nil {
			t.Fatal(err)
		}
		b := must(os.ReadFile(path))
		b = []byte(strings.Replace(string(b), "<!-- greenlight:begin phase:serve -->", fmt.Sprintf("edit %d\n<!-- greenlight:begin phase:serve -->", i), 1))
		tmp := path + ".swp"
		os.WriteFile(tmp, b, 0o644)
		os.Rename(tmp, path)
	}
	w.Write(st)
	out := string(must(os.ReadFile(path)))
	for i := 0; i < 200; i++ {
		if !strings.Contains(out, fmt.Sprintf("edit %d\n", i)) {
			t.Fatalf("edit %d lost", i)
		}
	}
}
