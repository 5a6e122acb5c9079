package runner

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// closedLoop is a load whose truth is known: slots clients, each sending
// its next request as its last ends, perSlot rounds; every request ttft
// then tokens-1 gaps of itl (seconds). t0 is the clock's epoch second.
type closedLoop struct {
	slots, perSlot, tokens int
	ttft, itl, t0          float64
}

func (c closedLoop) e2el() float64 { return c.ttft + float64(c.tokens-1)*c.itl }

func (c closedLoop) each(f func(i int, start float64)) {
	for j := 0; j < c.perSlot; j++ {
		for k := 0; k < c.slots; k++ {
			f(j*c.slots+k, c.t0+float64(j)*c.e2el()+float64(k)*1e-3)
		}
	}
}

func (c closedLoop) rate() float64 {
	return float64(c.slots*c.perSlot) / (float64(c.perSlot) * c.e2el())
}

// aiperfFiles are the closed loop as AIPerf exports it: the summary (its
// own p99s as given) and the records, a line a request, with warm-up
// lines and any extra lines (failures, junk) appended.
func (c closedLoop) aiperfFiles(p99TTFTms float64, extra ...string) (summary []byte, records string) {
	var lines []string
	lines = append(lines, `{"metadata":{"request_start_ns":1,"request_end_ns":2,"benchmark_phase":"warmup"},"metrics":{},"error":null}`)
	c.each(func(i int, start float64) {
		gaps := make([]float64, c.tokens-1)
		for g := range gaps {
			gaps[g] = 1000 * c.itl
		}
		rec := map[string]any{
			"metadata": map[string]any{"session_num": i, "request_start_ns": int64(start * 1e9), "request_end_ns": int64((start + c.e2el()) * 1e9), "benchmark_phase": "profiling"},
			"metrics": map[string]any{
				"time_to_first_token": map[string]any{"value": 1000 * c.ttft, "unit": "ms"},
				"request_latency":     map[string]any{"value": 1000 * c.e2el(), "unit": "ms"},
				"inter_token_latency": map[string]any{"value": 1000 * c.itl, "unit": "ms"},
				"inter_chunk_latency": map[string]any{"value": gaps, "unit": "ms"},
			},
			"error": nil,
		}
		b, _ := json.Marshal(rec)
		lines = append(lines, string(b))
	})
	lines = append(lines, extra...)
	summary = []byte(fmt.Sprintf(`{
  "request_throughput": {"unit": "requests/sec", "avg": %g},
  "time_to_first_token": {"unit": "ms", "avg": %g, "p50": %g, "p99": %g, "min": %g, "max": %g, "std": 0},
  "inter_token_latency": {"unit": "ms", "avg": %g, "p50": %g, "p99": %g},
  "request_latency": {"unit": "ms", "avg": %g, "p99": %g},
  "output_token_throughput": {"unit": "tokens/sec", "avg": %g},
  "was_cancelled": false,
  "error_summary": [],
  "input_config": {"loadgen": {"concurrency": %d}}
}`, c.rate(), 1000*c.ttft, 1000*c.ttft, p99TTFTms, 1000*c.ttft, 1000*c.ttft, 1000*c.itl, 1000*c.itl, 1000*c.itl,
		1000*c.e2el(), 1000*c.e2el(), c.rate()*float64(c.tokens), c.slots))
	return summary, strings.Join(lines, "\n") + "\n"
}

// guidellmFile is the closed loop as GuideLLM's benchmarks.json holds it
// (0.3's info.timings), keeping keep of its successful requests (0: all),
// with errored requests appended.
func (c closedLoop) guidellmFile(keep int, errored []map[string]any) []byte {
	var ok []map[string]any
	c.each(func(i int, start float64) {
		if keep > 0 && len(ok) == keep {
			return
		}
		ok = append(ok, map[string]any{
			"request_id": fmt.Sprint(i), "output_tokens": c.tokens, "inter_token_latency_ms": 1000 * c.itl,
			"info": map[string]any{"timings": map[string]any{
				"targeted_start": start, "request_start": start, "first_token_iteration": start + c.ttft,
				"last_token_iteration": start + c.e2el(), "request_end": start + c.e2el(),
			}},
		})
	})
	n := c.slots * c.perSlot
	dist := func(v float64) map[string]any {
		return map[string]any{"successful": map[string]any{"mean": v, "median": v, "percentiles": map[string]any{"p99": v}}}
	}
	bm := map[string]any{
		"type_":             "generative_benchmark",
		"config":            map[string]any{"strategy": map[string]any{"type_": "concurrent", "streams": c.slots}},
		"scheduler_metrics": map[string]any{"requests_made": map[string]any{"successful": n, "errored": len(errored), "incomplete": 0, "total": n + len(errored)}},
		"metrics": map[string]any{
			"requests_per_second":      dist(c.rate()),
			"output_tokens_per_second": dist(c.rate() * float64(c.tokens)),
			"request_concurrency":      dist(float64(c.slots)),
			"time_to_first_token_ms":   dist(1000 * c.ttft),
			"inter_token_latency_ms":   dist(1000 * c.itl),
			"request_latency":          dist(c.e2el()),
		},
		"requests": map[string]any{"successful": ok, "errored": errored, "incomplete": []any{}},
	}
	b, _ := json.Marshal(map[string]any{"benchmarks": []any{bm}})
	return b
}

func asMap(cols []string, vals []any) map[string]any {
	out := map[string]any{}
	for i, c := range cols {
		out[c] = vals[i]
	}
	return out
}

// TestAIPerfExport: AIPerf's summary and records of 16 clients, TTFT
// 100 ms and ITL 20 ms over 200 tokens: the achieved concurrency within
// 2% of 16, Little's law from AIPerf's own rate beside it, its figures
// as columns (the requested concurrency as max_concurrency), the
// warm-up request left out, and AIPerf's p99 held against ours.
func TestAIPerfExport(t *testing.T) {
	c := closedLoop{slots: 16, perSlot: 10, tokens: 200, ttft: 0.1, itl: 0.02, t0: 1.76e9}
	summary, records := c.aiperfFiles(1000 * c.ttft)
	cols, vals, ok := aiperfRow(summary, strings.NewReader(records))
	if !ok {
		t.Fatal("not read")
	}
	got := asMap(cols, vals)
	if a, _ := got[ColAchieved].(float64); math.Abs(a-16)/16 > 0.02 {
		t.Errorf("achieved %v; want 16 within 2%%: %v", got[ColAchieved], got)
	}
	if l, _ := got[ColLittle].(float64); math.Abs(l-16)/16 > 0.02 {
		t.Errorf("Little's law %v; want 16 from AIPerf's rate", got[ColLittle])
	}
	if got["max_concurrency"] != 16.0 || got["p99_time_to_first_token_ms"] != 100.0 || got["request_throughput_requests_sec"] == nil || got["output_token_throughput_tokens_sec"] == nil {
		t.Errorf("AIPerf's own figures: %v", got)
	}
	if got[ColRequests] != 160.0 {
		t.Errorf("requests timed %v; want the 160 profiled, the warm-up left out", got[ColRequests])
	}
	if v, _ := got[ColTPOTP99].(float64); math.Abs(v-20) > 1e-6 {
		t.Errorf("p99 TPOT %v ms; want 20", got[ColTPOTP99])
	}
	basis := got[ColLoadBasis].(string)
	if !strings.Contains(basis, "1 warm-up request(s) left out") || strings.Contains(basis, "parts from") {
		t.Errorf("basis %q", basis)
	}
	if stamps := LoadStamps(Row{Cols: cols, Values: vals}); len(stamps) != 0 {
		t.Errorf("a clean run stamped %v", stamps)
	}

	// AIPerf's p99 TTFT said as 180 ms against our 100: said with the count.
	summary, records = c.aiperfFiles(180)
	cols, vals, _ = aiperfRow(summary, strings.NewReader(records))
	if b := asMap(cols, vals)[ColLoadBasis].(string); !strings.Contains(b, "TTFT 100 ms (ours, of 160) against AIPerf's 180 ms") {
		t.Errorf("a p99 apart is not said: %q", b)
	}
}

// TestAIPerfExportBadInput: a failed request holds its slot for the time
// it took; junk lines, a NaN and a request with no start are said and
// left out; a summary that is not AIPerf's is not read; records with no
// summary still tell the load.
func TestAIPerfExportBadInput(t *testing.T) {
	c := closedLoop{slots: 4, perSlot: 5, tokens: 50, ttft: 0.1, itl: 0.02, t0: 1.76e9}
	start := int64((c.t0 + 5*c.e2el()) * 1e9)
	failed := fmt.Sprintf(`{"metadata":{"request_start_ns":%d,"request_end_ns":%d,"benchmark_phase":"profiling"},"metrics":{"error_isl":{"value":550,"unit":"tokens"}},"error":{"code":500,"type":"InternalServerError","message":"boom"}}`, start, start+int64(c.e2el()*1e9))
	noStart := `{"metadata":{"benchmark_phase":"profiling"},"metrics":{"time_to_first_token":{"value":100,"unit":"ms"},"request_latency":{"value":1080,"unit":"ms"}},"error":null}`
	nan := `{"metadata":{"request_start_ns":1760000000000000000,"benchmark_phase":"profiling"},"metrics":{"time_to_first_token":{"value":NaN,"unit":"ms"},"request_latency":{"value":1080,"unit":"ms"}},"error":null}`
	summary, records := c.aiperfFiles(100, failed, noStart, nan, "not json at all")
	cols, vals, ok := aiperfRow(summary, strings.NewReader(records))
	if !ok {
		t.Fatal("not read")
	}
	got := asMap(cols, vals)
	basis := got[ColLoadBasis].(string)
	for _, want := range []string{"1 failed request(s) counted in flight", "2 request(s) with a missing or non-number time left out", "1 line(s) of the records are not a JSON record", "1 NaN or Infinity"} {
		if !strings.Contains(basis, want) {
			t.Errorf("basis lacks %q: %q", want, basis)
		}
	}
	if got[ColRequests] != 20.0 {
		t.Errorf("requests timed %v; want the 20 that succeeded", got[ColRequests])
	}
	// In flight: 4 slots for 5 rounds, and the failed one alone for one
	// more round: (20+1)·e2el over 6·e2el.
	if a, _ := got[ColAchieved].(float64); math.Abs(a-21.0/6)/(21.0/6) > 0.01 {
		t.Errorf("achieved %v; want %v with the failed request's slot", a, 21.0/6)
	}
	if _, _, ok := aiperfRow([]byte(`{"benchmarks": []}`), nil); ok {
		t.Error("a file with no AIPerf metric was read as AIPerf's summary")
	}
	cols, vals, ok = aiperfRow(nil, strings.NewReader(records))
	if got := asMap(cols, vals); !ok || got[ColAchieved] == nil || got[ColLittle] != nil {
		t.Errorf("records alone: ok %v, %v; want the load without Little's law (no rate)", ok, got)
	}
	cols, vals, _ = aiperfRow(summary, nil)
	if got := asMap(cols, vals); got[ColAchieved] != nil || !strings.Contains(got[ColLoadBasis].(string), "no profile_export.jsonl beside it") {
		t.Errorf("a summary alone: %v", got)
	}
}

// TestGuideLLMExport: a GuideLLM concurrent benchmark of 16 streams: the
// achieved concurrency within 2% of 16, GuideLLM's own figures under
// vllm bench's names, the queue from its targeted start, an errored
// request's slot counted; a sampled file says so and tells no
// concurrency; a file with no benchmarks list is not GuideLLM's.
func TestGuideLLMExport(t *testing.T) {
	c := closedLoop{slots: 16, perSlot: 10, tokens: 200, ttft: 0.1, itl: 0.02, t0: 1.76e9}
	rows, vals, ok := guidellmRows(c.guidellmFile(0, nil))
	if !ok || len(rows) != 1 {
		t.Fatalf("read %v, %d rows", ok, len(rows))
	}
	got := asMap(rows[0], vals[0])
	if a, _ := got[ColAchieved].(float64); math.Abs(a-16)/16 > 0.02 {
		t.Errorf("achieved %v; want 16 within 2%%", got[ColAchieved])
	}
	if got["max_concurrency"] != 16.0 || got["strategy"] != "concurrent" || got["p99_ttft_ms"] != 100.0 || got["guidellm_request_concurrency"] != 16.0 || got["output_token_throughput_tok_s"] == nil {
		t.Errorf("GuideLLM's own figures: %v", got)
	}
	if q, _ := got[ColQueueMean].(float64); q != 0 {
		t.Errorf("client queue %v ms; want 0 (each sent at its target)", got[ColQueueMean])
	}
	if v, _ := got[ColTPOTP99].(float64); math.Abs(v-20) > 1e-6 {
		t.Errorf("p99 TPOT %v ms; want 20", got[ColTPOTP99])
	}
	if s := LoadStamps(Row{Cols: rows[0], Values: vals[0]}); len(s) != 0 {
		t.Errorf("a clean benchmark stamped %v", s)
	}

	end := c.t0 + 10*c.e2el()
	errored := []map[string]any{{"info": map[string]any{"timings": map[string]any{"request_start": end, "request_end": end + c.e2el()}}}}
	rows, vals, _ = guidellmRows(c.guidellmFile(0, errored))
	got = asMap(rows[0], vals[0])
	if a, _ := got[ColAchieved].(float64); math.Abs(a-161.0/11)/(161.0/11) > 0.01 || !strings.Contains(got[ColLoadBasis].(string), "1 failed request(s) counted in flight") {
		t.Errorf("an errored request's slot: achieved %v; want %v: %v", got[ColAchieved], 161.0/11, got[ColLoadBasis])
	}

	rows, vals, _ = guidellmRows(c.guidellmFile(20, nil))
	got = asMap(rows[0], vals[0])
	if got[ColAchieved] != nil || !strings.Contains(got[ColLoadBasis].(string), "GuideLLM kept 20 of 160 requests") || got[ColLittle] == nil {
		t.Errorf("a sample: %v; want no concurrency from it, said, Little's law kept", got)
	}
	if _, _, ok := guidellmRows([]byte(`{"request_throughput": 3}`)); ok {
		t.Error("a vllm bench file was read as GuideLLM's")
	}
}

// TestAIPerfPairs: a summary finds the records of its own prefix;
// profile_export.jsonl with no summary is a run of its own; AIPerf's
// other JSON lines (raw records, server metrics) are not records.
func TestAIPerfPairs(t *testing.T) {
	names := []string{"/a/run1/profile_export_aiperf.json", "/a/run2/p.jsonl", "/a/run1/profile_export.jsonl", "/a/run2/other_aiperf.json",
		"/a/run3/profile_export.jsonl", "/a/run1/server_metrics_export.jsonl", "/a/run1/profile_export_raw.jsonl"}
	got := fmt.Sprint(aiperfPairs(names))
	if got != "[[0 2] [3 -1] [-1 4]]" {
		t.Errorf("pairs %s", got)
	}
}

// TestServingExportsRun: steps that run AIPerf and GuideLLM (their files
// written as the tools write them, into the phase's artifacts) each make
// rows with the load they applied; read back from the state dir alone
// after a later run wrote over the files, the rows are the same (the
// step's copies).
func TestServingExportsRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := closedLoop{slots: 8, perSlot: 4, tokens: 50, ttft: 0.1, itl: 0.02, t0: 1.76e9}
	summary, records := c.aiperfFiles(100)
	must0(t, os.WriteFile(filepath.Join(dir, "s.json"), summary, 0o644))
	must0(t, os.WriteFile(filepath.Join(dir, "r.jsonl"), []byte(records), 0o644))
	must0(t, os.WriteFile(filepath.Join(dir, "g.json"), c.guidellmFile(0, nil), 0o644))
	p := loadCampaign(t, fmt.Sprintf(`
name: exports
phases:
  - id: aiperf
    artifacts: [out/aiperf/*/*]
    steps:
      - results: {format: aiperf}
        run: |
          mkdir -p out/aiperf/c8
          cp %[1]s/s.json out/aiperf/c8/profile_export_aiperf.json
          cp %[1]s/r.jsonl out/aiperf/c8/profile_export.jsonl
  - id: guidellm
    needs: [aiperf]
    artifacts: [out/guidellm/*.json]
    steps:
      - results: {format: guidellm}
        run: |
          mkdir -p out/guidellm
          cp %[1]s/g.json out/guidellm/benchmarks.json
  - id: over
    needs: [guidellm]
    steps:
      - run: |
          echo '{}' > out/aiperf/c8/profile_export_aiperf.json
          echo '{}' > out/guidellm/benchmarks.json
`, dir))
	opts := testOptions(t)
	opts.StateDir = filepath.Join(t.TempDir(), "state")
	h := start(t, p, opts)
	st := h.finished(30 * time.Second)
	h.r.Close()
	back, err := Replay(p, opts.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"aiperf", "guidellm"} {
		ps := st.Phase(id)
		if ps.Status != Done || len(ps.Steps[0].Results) != 1 {
			t.Fatalf("%s: %s %q, rows %+v", id, ps.Status, ps.Reason, ps.Steps[0].Results)
		}
		row := ps.Steps[0].Results[0]
		got := asMap(row.Cols, row.Values)
		if a, _ := got[ColAchieved].(float64); math.Abs(a-8)/8 > 0.02 || got["max_concurrency"] != 8.0 {
			t.Errorf("%s: achieved %v of %v requested; want 8: %v", id, got[ColAchieved], got["max_concurrency"], got)
		}
		again := back.Phase(id).Steps[0].Results
		if len(again) != 1 || !slices.Equal(again[0].Cols, row.Cols) || fmt.Sprint(again[0].Values) != fmt.Sprint(row.Values) {
			t.Errorf("%s read back: %+v; live %+v", id, again, row)
		}
	}
}

func must0(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkAIPerfRecords: AIPerf's records of 1k, 10k and 100k requests
// (3 tokens each, as BenchmarkRequestLoad's): the cost grows linearly.
func BenchmarkAIPerfRecords(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		c := closedLoop{slots: 100, perSlot: n / 100, tokens: 3, ttft: 0.1, itl: 0.02, t0: 1.76e9}
		summary, records := c.aiperfFiles(100)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for range b.N {
				aiperfRow(summary, strings.NewReader(records))
			}
		})
	}
}

// BenchmarkGuideLLMFile: GuideLLM's benchmarks.json of 1k, 10k and 100k
// requests.
func BenchmarkGuideLLMFile(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		file := closedLoop{slots: 100, perSlot: n / 100, tokens: 3, ttft: 0.1, itl: 0.02, t0: 1.76e9}.guidellmFile(0, nil)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for range b.N {
				guidellmRows(file)
			}
		})
	}
}
