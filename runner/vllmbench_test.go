package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

// TestVLLMBenchFormat: a step that prints `vllm bench serve`'s result
// block (real output, trailing spaces and all) and writes its
// --save-result JSON into the phase's artifacts gets two rows: every
// label of the block in snake case, and the JSON's scalar keys (the
// per-request arrays left out); an expectation on a block column holds.
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
`)
	h := start(t, p, testOptions(t))
	st := h.finished(20 * time.Second)
	ps := st.Phase("bench")
	if ps.Status != Done || ps.ExpectFailed != 0 {
		t.Fatalf("phase %s, %d expectations failed: %s", ps.Status, ps.ExpectFailed, ps.Reason)
	}
	rows := ps.Steps[0].Results
	if len(rows) != 2 {
		t.Fatalf("%d rows; want the block's and the JSON's: %+v", len(rows), rows)
	}
	block := map[string]any{}
	for i, c := range rows[0].Cols {
		block[c] = rows[0].Values[i]
	}
	for col, want := range map[string]any{"successful_requests": 64.0, "benchmark_duration_s": 41.3, "output_token_throughput_tok_s": 396.71,
		"peak_output_token_throughput_tok_s": 472.0, "mean_ttft_ms": 812.44, "p99_tpot_ms": 19.73, "median_itl_ms": 16.41, "p99_e2el_ms": 5893.4} {
		if block[col] != want {
			t.Errorf("block %s = %v; want %v", col, block[col], want)
		}
	}
	if len(rows[0].Cols) != 23 {
		t.Errorf("block has %d columns: %v", len(rows[0].Cols), rows[0].Cols)
	}
	saved := map[string]any{}
	for i, c := range rows[1].Cols {
		saved[c] = rows[1].Values[i]
	}
	if saved["file"] != "kimi-c8.json" || saved["output_throughput"] != 396.7143 || saved["model_id"] != "moonshotai/Kimi-K2.5" || saved["label"] != nil {
		t.Errorf("saved result row: %v", saved)
	}
	for _, arr := range []string{"ttfts", "itls", "input_lens", "generated_texts", "errors"} {
		if _, ok := saved[arr]; ok {
			t.Errorf("the per-request array %s became a column", arr)
		}
	}
	if _, ok := saved["label"]; !ok {
		t.Errorf("a null scalar was dropped: %v", rows[1].Cols)
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
