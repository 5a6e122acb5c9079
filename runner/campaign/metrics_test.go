package campaign

import (
	"slices"
	"strings"
	"testing"
)

// TestMetricsAndBetter: metrics: names a phase's metrics, each with an
// optional direction; better: takes a word or a map of metric to word; a
// phase reading vllm bench's block has that format's metrics unless it
// names its own; every other phase names none.
func TestMetricsAndBetter(t *testing.T) {
	p, err := Parse("c.yaml", "/c/c.yaml", []byte(`name: c
phases:
  - id: gemm
    sweep: {m: [1, 16]}
    metrics: [tflops, {time_us: lower}]
    better: {tflops: higher, bw_gbps: higher}
    steps:
      - run: |
          true
  - id: bench
    steps:
      - run: |
          true
        results: {format: vllm-bench}
  - id: own
    metrics: [output_throughput]
    steps:
      - run: |
          true
        results: {format: vllm-bench}
  - id: plain
    better: lower
    steps:
      - run: |
          true
`))
	if err != nil {
		t.Fatal(err)
	}
	g := p.Phase("gemm")
	if want := []Metric{{"tflops", ""}, {"time_us", "lower"}}; !slices.Equal(g.Metrics, want) || g.MetricsByDefault {
		t.Errorf("gemm metrics %+v; want %+v", g.Metrics, want)
	}
	if g.BetterOf["tflops"] != "higher" || g.BetterOf["bw_gbps"] != "higher" || g.Better != "" {
		t.Errorf("gemm better %q, of %v", g.Better, g.BetterOf)
	}
	if b := p.Phase("bench"); !slices.Equal(b.Metrics, DefaultVLLMBenchMetrics) || !b.MetricsByDefault {
		t.Errorf("vllm-bench defaults: %+v", b.Metrics)
	}
	if o := p.Phase("own"); len(o.Metrics) != 1 || o.MetricsByDefault ||
		!slices.Contains(o.Metrics[0].Names(), "output_token_throughput_tok_s") {
		t.Errorf("own metrics %+v (names %v)", o.Metrics, o.Metrics[0].Names())
	}
	if pl := p.Phase("plain"); len(pl.Metrics) != 0 || pl.Better != "lower" {
		t.Errorf("plain: metrics %+v, better %q", pl.Metrics, pl.Better)
	}
}

// TestMetricsBadInput: each mistake is said at its own line and column.
func TestMetricsBadInput(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"    better: {tflops: sideways}\n", `c.yaml:4:22: "sideways" is neither higher nor lower`},
		{"    better: up\n", `c.yaml:4:13: "up" is neither higher nor lower`},
		{"    metrics: [tflops, tflops]\n", `c.yaml:4:23: metric "tflops" is listed twice`},
		{"    metrics: [{tflops: up}]\n", `c.yaml:4:24: "up" is neither higher nor lower`},
		{"    metrics: [{tflops: higher, time_us: lower}]\n", `this one has 2 keys`},
	} {
		src := "name: c\nphases:\n  - id: g\n" + c.line + "    steps:\n      - run: |\n          true\n"
		_, err := Parse("c.yaml", "/c/c.yaml", []byte(src))
		if err == nil {
			t.Errorf("%q loads", c.line)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v\nwant %s", c.line, err, c.want)
		}
	}
}
