package runner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

// TestVLLMBenchFormat: a step that prints `vllm bench serve`'s result
// block (real output, trailing spaces and all) and writes its
// --save-result JSON into the phase's artifacts gets one row: the file,
// every label of the block in snake case, and the JSON's scalar keys the
// block does not say (the per-request arrays left out, a figure the block
// says under another name not repeated); an expectation on a block column
// holds. A second run's JSON without a block is a row of its own.
func TestVLLMBenchFormat(t *testing.T) {
	t.Parallel()
	txt, _ := filepath.Abs("testdata/vllm-bench-serve.txt")
	js, _ := filepath.Abs("testdata/vllm-save-result.json")
	p := loadCampaign(t, `
name: vb
phases:
  - id: bench
    artifacts: [results/*.json]
    expect: {output_token_throughput_tok_s: ">= 300"}
    steps:
      - results: {format: vllm-bench}
        run: |
          mkdir -p results; cat `+txt+`; cp `+js+` results/kimi-c8.json
          sleep 0.05; cp `+js+` results/kimi-c16.json
`)
	h := start(t, p, testOptions(t))
	st := h.finished(20 * time.Second)
	ps := st.Phase("bench")
	if ps.Status != Done || ps.ExpectFailed != 0 {
		t.Fatalf("phase %s, %d expectations failed: %s", ps.Status, ps.ExpectFailed, ps.Reason)
	}
	rows := ps.Steps[0].Results
	if len(rows) != 2 {
		t.Fatalf("%d rows; want the run's (block and JSON) and the lone JSON's: %+v", len(rows), rows)
	}
	row := map[string]any{}
	for i, c := range rows[0].Cols {
		row[c] = rows[0].Values[i]
	}
	for col, want := range map[string]any{"file": "kimi-c8.json", "successful_requests": 64.0, "benchmark_duration_s": 41.3, "output_token_throughput_tok_s": 396.71,
		"peak_output_token_throughput_tok_s": 472.0, "mean_ttft_ms": 812.44, "p99_tpot_ms": 19.73, "median_itl_ms": 16.41, "p99_e2el_ms": 5893.4,
		"model_id": "moonshotai/Kimi-K2.5", "std_ttft_ms": 141.2} {
		if row[col] != want {
			t.Errorf("%s = %v; want %v", col, row[col], want)
		}
	}
	for _, twice := range []string{"output_throughput", "completed", "duration", "total_output_tokens", "max_concurrency", "request_throughput"} {
		if _, ok := row[twice]; ok {
			t.Errorf("%s is the block's figure under the JSON's name: said twice", twice)
		}
	}
	for _, arr := range []string{"ttfts", "itls", "input_lens", "generated_texts", "errors"} {
		if _, ok := row[arr]; ok {
			t.Errorf("the per-request array %s became a column", arr)
		}
	}
	if _, ok := row["label"]; !ok {
		t.Errorf("a null scalar was dropped: %v", rows[0].Cols)
	}
	lone := map[string]any{}
	for i, c := range rows[1].Cols {
		lone[c] = rows[1].Values[i]
	}
	if lone["file"] != "kimi-c16.json" || lone["output_throughput"] != 396.7143 {
		t.Errorf("the JSON without a block: %v", lone)
	}
}

// TestVLLMBenchFormatErrors: a bad format or both format and regex are
// clear file errors.
func TestVLLMBenchFormatErrors(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		"results: {format: vllm}":                   `unknown results format "vllm"`,
		"results: {format: vllm-bench, regex: 'x'}": "both a format and a regex",
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "c.yaml")
		os.WriteFile(path, []byte("name: x\nphases:\n  - id: a\n    steps:\n      - run: \"true\"\n        "+body+"\n"), 0o644)
		_, err := campaign.Load(path)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "c.yaml:6:") {
			t.Errorf("%s: %v", body, err)
		}
	}
}

// TestVLLMBenchRowsReadBack: a vllm-bench block of a phase with
// artifacts (no --save-result file) is a row live, and the same row read
// back from the state dir alone (greenlight report, a runner started
// again): it was held for a pairing that the read-back never closed.
func TestVLLMBenchRowsReadBack(t *testing.T) {
	t.Parallel()
	txt, _ := filepath.Abs("testdata/vllm-bench-serve.txt")
	p := loadCampaign(t, `
name: vbback
phases:
  - id: bench
    artifacts: [traces/*.txt]
    steps:
      - results: {format: vllm-bench}
        run: |
          mkdir -p traces; echo t > traces/a.txt; cat `+txt+`
`)
	opts := testOptions(t)
	opts.StateDir = filepath.Join(t.TempDir(), "state")
	h := start(t, p, opts)
	live := h.finished(20 * time.Second).Phase("bench").Steps[0].Results
	h.r.Close()
	if len(live) != 1 {
		t.Fatalf("%d rows live; want 1", len(live))
	}
	st, err := Replay(p, opts.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	back := st.Phase("bench").Steps[0].Results
	if len(back) != 1 || !slices.Equal(back[0].Cols, live[0].Cols) || !back[0].Time.Equal(live[0].Time) {
		t.Errorf("read back from the state dir: %d rows %+v; live %+v", len(back), back, live)
	}
}
