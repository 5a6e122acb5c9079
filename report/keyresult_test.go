package report

import (
	"strings"
	"testing"

	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// vllmCols are the columns vllm bench serve's block gives a run: 16, of
// which five are the format's metrics.
var vllmCols = []string{"successful_requests", "benchmark_duration_s", "total_input_tokens", "total_generated_tokens",
	"request_throughput_req_s", "output_token_throughput_tok_s", "total_token_throughput_tok_s", "mean_ttft_ms",
	"median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms", "mean_itl_ms", "median_itl_ms", "p99_itl_ms"}

// sweepState gives each step of ph one row of cols, its values from
// value(point, repeat, column).
func sweepState(ph *campaign.Phase, cols []string, value func(pt, rep int, c string) float64) runner.PhaseState {
	ps := runner.PhaseState{ID: ph.ID, Title: ph.Title, Status: runner.Done}
	for i, st := range ph.Steps {
		vals := make([]any, len(cols))
		for k, c := range cols {
			vals[k] = value(st.Unit.Point, st.Unit.Repeat, c)
		}
		ps.Steps = append(ps.Steps, runner.StepState{Index: i, Status: runner.Done, Results: []runner.Row{{Cols: cols, Values: vals}}})
	}
	return ps
}

// TestKeyResultAnswers: a sweep's key result is its first metric at its
// best point, the point named, with its interval where it has repeats; a
// vllm-bench sweep's tables are its five metrics, none of its counts; a
// phase with metrics and no sweep quotes its first metric with its unit.
func TestKeyResultAnswers(t *testing.T) {
	p := parsePlan(t, "/c/c.yaml", `name: t
phases:
  - id: gemm
    sweep: {m: [1, 4096, 16384]}
    repeat: 2
    metrics: [tflops, {time_us: lower}]
    better: {tflops: higher}
    steps:
      - run: |
          true
  - id: decode
    sweep: {concurrency: [1, 8, 64]}
    steps:
      - run: |
          true
        results: {format: vllm-bench}
  - id: plain
    sweep: {m: [1, 4096]}
    expect: {TFLOP/s: ">= 1"}
    better: lower
    steps:
      - run: |
          true
  - id: once
    metrics: [{p99_tpot_ms: lower}]
    steps:
      - run: |
          true
`)
	gemm := p.Phase("gemm")
	tflops := []float64{12, 681, 650}
	ps := sweepState(gemm, []string{"m", "time_us", "tflops"}, func(pt, rep int, c string) float64 {
		switch c {
		case "m":
			return []float64{1, 4096, 16384}[pt]
		case "tflops":
			return tflops[pt] + float64(rep)*4 - 6
		}
		return 1e6 / tflops[pt] // the last column: what the key result used to be
	})
	// 679 and 683 at m=4096: mean 681, t(0.975, 1) · sd/√2 = 25.4.
	if got, _, _ := keyOf(gemm, ps, nil); got != "tflops 681 ± 25 at m=4096" {
		t.Errorf("GEMM key result %q; want tflops at its best point, m=4096", got)
	}

	decode := p.Phase("decode")
	ds := sweepState(decode, vllmCols, func(pt, _ int, c string) float64 {
		switch c {
		case "output_token_throughput_tok_s":
			return []float64{50, 380, 300}[pt]
		case "successful_requests":
			return 1000 // the highest number of all, and a count
		}
		return 10
	})
	got, metric, _ := keyOf(decode, ds, nil)
	if metric != "output_token_throughput_tok_s" || got != "output_token_throughput_tok_s 380 tok/s at concurrency=8" {
		t.Errorf("decode key result %q (%s)", got, metric)
	}
	tables := sweepTables(decode, ds, nil)
	// Every default metric the rows have: achieved_concurrency is not
	// among them (no --save-detailed file here).
	if n, want := strings.Count(tables, "#### "), len(campaign.DefaultVLLMBenchMetrics)-1; n != want || strings.Contains(tables, "#### achieved_concurrency") {
		t.Errorf("%d tables for a vllm-bench sweep; want its %d metrics the rows have:\n%s", n, want, tables)
	}
	for _, not := range []string{"successful_requests", "total_input_tokens", "benchmark_duration_s"} {
		if strings.Contains(tables, "#### "+not) {
			t.Errorf("a table of %s, which is no metric", not)
		}
	}

	// No metrics named: the column it expects something of goes first,
	// though time_ms comes first in the row and has a way too.
	plain := p.Phase("plain")
	pls := sweepState(plain, []string{"m", "time_ms", "TFLOP/s"}, func(pt, _ int, c string) float64 {
		return map[string][]float64{"m": {1, 4096}, "time_ms": {0.01, 0.4}, "TFLOP/s": {5, 440}}[c][pt]
	})
	if got, _, _ := keyOf(plain, pls, nil); got != "TFLOP/s 440 at m=4096" {
		t.Errorf("a sweep naming no metrics: key result %q; want the expected TFLOP/s at its best point", got)
	}

	once := p.Phase("once")
	os := runner.PhaseState{ID: "once", Status: runner.Done, Steps: []runner.StepState{{Status: runner.Done,
		Results: []runner.Row{{Cols: []string{"p99_tpot_ms", "benchmark_duration_s"}, Values: []any{9.1, 12.0}}}}}}
	if got, _, _ := keyOf(once, os, nil); got != "p99_tpot_ms 9.1 ms" {
		t.Errorf("a phase with metrics: key result %q; want its first metric", got)
	}
	// Without metrics, a rate over a duration in seconds.
	os.Steps[0].Results[0].Cols = []string{"tok_s", "benchmark_duration_s"}
	if got, _, _ := keyOf(nil, os, nil); got != "tok_s = 9.1" {
		t.Errorf("no metrics: key result %q; want the rate, not the duration", got)
	}
}
