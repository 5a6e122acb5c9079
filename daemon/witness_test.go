package daemon

import (
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/conditions"
	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/metrics"
	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/report"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// stampYAML is report's campaign of a GEMM sweep on GPUs 0 and 1 and a
// decode on GPU 0. Read when a test asks: the test binary runs as a
// step's supervisor too, in another folder.
func stampYAML(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../report/testdata/stamps.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runStep is one finished step of a phase, its rows taken while the
// fake fleet reports what trouble says.
func runStep(t *testing.T, wit *witness, ph string, s *gpu.Sampler, f *gpu.Fake, trouble map[int]gpu.Trouble, idx int, cols []string, vals ...[]any) runner.StepState {
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
	st.Facts = wit.facts(runner.StepSeen{Phase: wit.plan.Phase(ph), State: runner.PhaseState{ID: ph, Attempt: 1}, Step: st})
	for i := range 2 {
		f.SetTrouble(i, gpu.Trouble{})
	}
	s.Round() // a clean reading after the step: its trouble is not the next step's
	time.Sleep(2 * time.Millisecond)
	return st
}

// TestRecordAndStamps writes a campaign whose steps ran under each kind
// of trouble (a throttle, a process not of the campaign, an XID), each
// judged by the witness as it ended, and reads the record back strictly: every row with its phase, point,
// repeat, values, checks and the stamp of its step, the same stamp in
// the CSV and the results file.
func TestRecordAndStamps(t *testing.T) {
	plan, err := campaign.Parse("c.yaml", "/campaigns/c.yaml", []byte(stampYAML(t)))
	if err != nil {
		t.Fatal(err)
	}
	fake := gpu.NewFake(2, 1)
	s := gpu.NewSampler(fake, time.Second, time.Hour)
	s.SetSessions(nil)
	dir := t.TempDir()
	path := filepath.Join(dir, "stamps.md")
	state := t.TempDir()
	w := report.NewWriter(path, plan, report.Env{Host: "h"}, s, state)
	wit := &witness{plan: plan, gpus: s}
	// GPU 0's power limit was lowered; GPU 1's is the board's default.
	wit.setConditions(conditions.NewBook(conditions.Conditions{GPUs: []gpu.Conditions{
		{Index: 0, PowerLimitW: 450, PowerDefault: 700}, {Index: 1, PowerLimitW: 700, PowerDefault: 700}}}))

	cols := []string{"m", "repeat", "tflops"}
	gemm := runner.PhaseState{ID: "gemm", Title: "gemm", Status: runner.Done, Attempt: 1, Started: time.Now()}
	gemm.Steps = append(gemm.Steps,
		// A saturated GPU at its default limit runs at its power cap: no stamp.
		runStep(t, wit, "gemm", s, fake, map[int]gpu.Trouble{1: {Throttle: []string{"SW power cap"}}}, 0, cols, []any{1.0, 1.0, 11.0}),
		runStep(t, wit, "gemm", s, fake, map[int]gpu.Trouble{1: {Throttle: []string{"HW thermal", "app clocks"}}}, 1, cols, []any{64.0, 1.0, 640.0}),
		runStep(t, wit, "gemm", s, fake, map[int]gpu.Trouble{0: {Foreign: []gpu.Process{{PID: 4242, Name: "python3", MemUsed: 2 << 30}}}}, 2, cols, []any{1.0, 2.0, 12.0}),
		runStep(t, wit, "gemm", s, fake, map[int]gpu.Trouble{0: {XID: 79}}, 3, cols, []any{64.0, 2.0, 650.0}),
	)
	gemm.Ended = time.Now()
	decode := runner.PhaseState{ID: "decode", Title: "decode", Status: runner.Done, Attempt: 1, Started: time.Now()}
	// Trouble on GPU 1, which decode does not use: not its stamp.
	decode.Steps = append(decode.Steps, runStep(t, wit, "decode", s, fake, map[int]gpu.Trouble{0: {Throttle: []string{"SW power cap"}, ECC: 2}, 1: {XID: 13}}, 0, []string{"tok_s"}, []any{57.5}))
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

	// `greenlight report` has no GPU history: the facts journaled with
	// each step stand.
	w2 := report.NewWriter(path, plan, report.Env{Host: "h"}, nil, state)
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

type history []gpu.Summary

// metered is a history whose counters can be read now.
type metered struct {
	history
	now map[gpu.DeviceID]float64
}

func (m *metered) EnergyNow() (map[gpu.DeviceID]float64, bool) { return m.now, true }
func (m *metered) Inventory() gpu.Inventory {
	var inv gpu.Inventory
	for id := range m.now {
		inv.Devices = append(inv.Devices, gpu.Device{Index: id.Index, Host: id.Host})
	}
	return inv
}

func (h history) Summarize(from, to time.Time, devices []int) []gpu.Summary {
	var out []gpu.Summary
	for _, s := range h {
		if s.Device.Host != "" || devices == nil || slices.Contains(devices, s.Device.Index) {
			out = append(out, s)
		}
	}
	return out
}

// servedPlan is a campaign of a scraped service and a phase that needs
// it (more: more of that phase's keys).
func servedPlan(t *testing.T, service, client, more string) *campaign.Plan {
	t.Helper()
	plan, err := campaign.Parse("c.yaml", "/c/c.yaml", []byte(`name: w
phases:
  - id: `+service+`
    service:
      ready: {log: ready}
      metrics: {url: "http://127.0.0.1:9/metrics"}
      run: |
        serve
  - id: `+client+`
    needs: [`+service+`]`+more+`
    steps:
      - run: |
          bench
`))
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

type served metrics.Summary

func (s served) Window(from, to time.Time) metrics.Summary { return metrics.Summary(s) }

// TestWitnessFacts: the facts of a run are its phase's GPUs' summed mean
// power, energy and mean SM clock (a GPU with no reading counts in none
// of them); a claimed trace stamps it as profiled; a client that received
// under 95% of what the server it used generated stamps it client-bound;
// a run with no reading and nothing to say has no facts.
func TestWitnessFacts(t *testing.T) {
	plan := servedPlan(t, "vllm", "decode", "\n    gpus: [0, 1]")
	dev := func(i int) gpu.Device { return gpu.Device{Index: i} }
	wit := &witness{plan: plan, gpus: history{
		{Device: dev(0), Samples: 30, MeanPower: 500, EnergyWh: 4.2, EnergyFrom: "power", MeanSMMHz: 1980},
		{Device: dev(1), Samples: 30, MeanPower: 520, EnergyWh: 4.3, EnergyFrom: "power", MeanSMMHz: 1800},
		{Device: dev(2), Samples: 30, MeanPower: 90, EnergyWh: 0.7, EnergyFrom: "power", MeanSMMHz: 345}, // not decode's
		{Device: dev(3), Samples: 0, MeanPower: -1, EnergyWh: -1, MeanSMMHz: -1},
	}}
	at := time.Now()
	step := runner.StepState{Index: 0, Status: runner.Done, Attempt: 1, Started: at.Add(-time.Minute), Ended: at,
		Results: []runner.Row{{Cols: []string{"batch", "output_tok_s"}, Values: []any{64.0, 800.0}}}}
	seen := runner.StepSeen{Phase: plan.Phase("decode"), State: runner.PhaseState{ID: "decode", Attempt: 1}, Step: step}
	f := wit.facts(seen)
	if f == nil || f.Readings != 60 || f.PowerW != 1020 || f.PowerGPUs != 2 || f.EnergyWh != 8.5 || f.EnergyFrom != runner.EnergyPower || f.SMClockMHz != 1890 || f.Stamp != nil {
		t.Errorf("facts %+v; want 60 readings, 1020 W over 2 GPUs, 8.5 Wh from power, 1890 MHz, no stamp", f)
	}

	// With the counters read at the run's start (journaled) and read again
	// now, the energy is their difference over the phase's GPUs alone,
	// whatever power readings say; a GPU counted only as sampled makes the
	// basis the interpolated one.
	mw := &metered{history: wit.gpus.(history), now: map[gpu.DeviceID]float64{{Index: 0}: 9e6 + 18e6, {Index: 1}: 5e6 + 3.6e6, {Index: 2}: 1e12}}
	counted := &witness{plan: plan, gpus: mw}
	cseen := seen
	cseen.Step.Counters = &runner.Counters{At: step.Started, MJ: map[string]float64{"0": 9e6, "1": 5e6, "2": 1}}
	if f := counted.facts(cseen); f == nil || math.Abs(f.EnergyWh-6) > 1e-9 || f.EnergyFrom != runner.EnergyCounter {
		t.Errorf("counters 18e6 and 3.6e6 mJ apart: %+v; want 6 Wh from the counters", f)
	}
	delete(cseen.Step.Counters.MJ, "1")
	mw.history = history{mw.history[0], {Device: dev(1), Samples: 30, MeanPower: 520, EnergyWh: 1.5, EnergyFrom: "counter"}}
	if f := counted.facts(cseen); f == nil || math.Abs(f.EnergyWh-6.5) > 1e-9 || f.EnergyFrom != runner.EnergyInterpolated {
		t.Errorf("GPU 1 without a start counter: %+v; want 5 + 1.5 Wh, interpolated", f)
	}
	cseen.Step.Counters.MJ["1"] = 9e9 // a counter that went back: the driver reloaded
	mw.history[1].EnergyFrom = ""
	if f := counted.facts(cseen); f == nil || f.EnergyWh != 0 || f.EnergyFrom != "" {
		t.Errorf("GPU 1's counter went back and it has no other basis: %+v; want no energy", f)
	}

	// Read only from part-way (a runner started again while it ran): the
	// figures are the part's, its energy not given.
	late := &witness{plan: plan, gpus: history{
		{Device: dev(0), Samples: 10, MeanPower: 500, EnergyWh: 1.4, EnergyFrom: "power", MeanSMMHz: 1980, First: at.Add(-10 * time.Second)},
		{Device: dev(1), Samples: 10, MeanPower: 520, EnergyWh: 1.4, EnergyFrom: "power", MeanSMMHz: 1800, First: at.Add(-11 * time.Second)},
	}}
	if f := late.facts(seen); f == nil || !f.ReadFrom.Equal(at.Add(-11*time.Second)) || f.EnergyWh != 0 || f.PowerW != 1020 {
		t.Errorf("a run read from 11 s before its end of its minute: %+v; want read from then, 1020 W, no energy", f)
	}
	// ...unless its counters were read as it started: then the whole's.
	lateMetered := &witness{plan: plan, gpus: &metered{history: late.gpus.(history), now: map[gpu.DeviceID]float64{{Index: 0}: 7.2e6, {Index: 1}: 7.2e6}}}
	if f := lateMetered.facts(runner.StepSeen{Phase: seen.Phase, State: seen.State, Step: runner.StepState{Started: step.Started, Ended: at, Counters: &runner.Counters{MJ: map[string]float64{"0": 0, "1": 0}}}}); f == nil || f.ReadFrom.IsZero() || f.EnergyWh != 4 || f.EnergyFrom != runner.EnergyCounter {
		t.Errorf("read part-way, counters from its start: %+v; want read from then, 4 Wh from the counters", f)
	}
	wit.gpus.(history)[0].First, wit.gpus.(history)[1].First = at.Add(-time.Minute+time.Second), at.Add(-time.Minute)
	if f := wit.facts(seen); f == nil || !f.ReadFrom.IsZero() || f.EnergyWh != 8.5 {
		t.Errorf("a run read from its start: %+v; want whole", f)
	}

	wit.setServers(map[string]report.ServerView{"vllm": served{From: at.Add(-time.Minute), To: at, Series: map[string]metrics.Stat{metrics.GenTok: {N: 60, Delta: 60 * 1000}}}})
	seen.Claimed = []string{"/runs/traces/host_123.1733400000000.pt.trace.json.gz"}
	want := []string{
		"the client was the bottleneck (client-bound?): it reported 800 tok/s, the server vllm generated 1000 tok/s",
		"a profiler capture ran (trace files written during the step)",
	}
	if f := wit.facts(seen); f == nil || !slices.Equal(f.Stamp, want) {
		t.Errorf("stamp %+v; want %q", f, want)
	}

	empty := &witness{plan: plan}
	seen.Claimed = nil
	if f := empty.facts(seen); f != nil {
		t.Errorf("no GPU readings and nothing wrong: facts %+v; want none", f)
	}
}

// TestClientBound: over a real scraper's minute at 2,000 tokens a
// second, a run that reports 1,400 tok/s is stamped client-bound; one
// within 5% (1,990) is not, nor a column that is no output rate.
func TestClientBound(t *testing.T) {
	plan := servedPlan(t, "serve", "bench", "")
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	s := &metrics.Scraper{}
	for i := 0; i <= 60; i++ {
		s.Add(metrics.Sample{T: t0.Add(time.Duration(i) * time.Second), V: map[string]float64{metrics.GenTok: 2000 * float64(i)}})
	}
	wit := &witness{plan: plan}
	wit.setServers(map[string]report.ServerView{"serve": s})
	stamp := func(col string, tok float64) string {
		f := wit.facts(runner.StepSeen{Phase: plan.Phase("bench"), State: runner.PhaseState{ID: "bench"}, Step: runner.StepState{Started: t0, Ended: t0.Add(time.Minute),
			Results: []runner.Row{{Cols: []string{col}, Values: []any{tok}}}}})
		return f.Stamped()
	}
	if got, want := stamp("output_token_throughput_tok_s", 1400), "the client was the bottleneck (client-bound?): it reported 1400 tok/s, the server serve generated 2000 tok/s"; got != want {
		t.Errorf("1,400 tok/s against 2,000: %q; want %q", got, want)
	}
	if got := stamp("output_token_throughput_tok_s", 1990); got != "" {
		t.Errorf("1,990 tok/s against 2,000: stamped %q", got)
	}
	if got := stamp("input_tok_s", 10); got != "" {
		t.Errorf("an input rate: stamped %q", got)
	}
}

// TestServerCapped: a row at 32 requested while the server ran 8 at most
// and up to 24 waited is stamped capped by the server (its max_num_seqs:
// the KV cache 40% used); at 8 requested it is not; a server whose KV
// cache filled is said capped by it; 20 clean rows at 8 get no stamp.
func TestServerCapped(t *testing.T) {
	plan := servedPlan(t, "serve", "bench", "")
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	scraper := func(running, waiting, kv float64) *metrics.Scraper {
		s := &metrics.Scraper{}
		for i := 0; i <= 60; i++ {
			s.Add(metrics.Sample{T: t0.Add(time.Duration(i) * time.Second), V: map[string]float64{metrics.Running: running, metrics.Waiting: waiting, metrics.KVUsage: kv}})
		}
		return s
	}
	stamp := func(s *metrics.Scraper, requested float64) string {
		wit := &witness{plan: plan}
		wit.setServers(map[string]report.ServerView{"serve": s})
		f := wit.facts(runner.StepSeen{Phase: plan.Phase("bench"), State: runner.PhaseState{ID: "bench"}, Step: runner.StepState{Started: t0, Ended: t0.Add(time.Minute),
			Results: []runner.Row{{Cols: []string{"max_concurrency"}, Values: []any{requested}}}}})
		return f.Stamped()
	}
	if got, want := stamp(scraper(8, 24, 0.4), 32), "load not applied: capped by the server serve: 8 requests running at most of the 32 requested, while up to 24 waited (max_num_seqs (its KV cache 40% used at peak); 61 scrapes)"; got != want {
		t.Errorf("capped at 8 under 32: %q; want %q", got, want)
	}
	if got := stamp(scraper(8, 24, 0.99), 32); !strings.Contains(got, "its KV cache (99% used at peak)") {
		t.Errorf("a full KV cache: %q", got)
	}
	for i := 0; i < 20; i++ {
		if got := stamp(scraper(8, 0, 0.4), 8); got != "" {
			t.Fatalf("a clean row at 8: stamped %q", got)
		}
	}
	// One request short is capped: 24 running of 25, one waiting.
	if got := stamp(scraper(24, 1, 0.4), 25); !strings.Contains(got, "24 requests running at most of the 25 requested") {
		t.Errorf("24 running under 25: %q", got)
	}
	// A burst at the row's start that waited a moment is no cap: running
	// reached 8 of 8 requested.
	burst := &metrics.Scraper{}
	for i := 0; i <= 60; i++ {
		run, wait := 8.0, 0.0
		if i == 0 {
			run, wait = 5, 3
		}
		burst.Add(metrics.Sample{T: t0.Add(time.Duration(i) * time.Second), V: map[string]float64{metrics.Running: run, metrics.Waiting: wait, metrics.KVUsage: 0.4}})
	}
	if got := stamp(burst, 8); got != "" {
		t.Errorf("a burst that waited once: stamped %q", got)
	}
}
