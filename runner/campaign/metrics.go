package campaign

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// A phase's metrics are the result columns it is about, apart from its
// inputs and its bookkeeping (vllm bench gives 16 numbers a run; three of
// them answer the question). Tables by point, charts, noise warnings, best
// settings, comparisons and the window's chart use them; every column stays
// in the CSV and the record.
//
//	metrics: [output_token_throughput_tok_s, {p99_tpot_ms: lower}]
//	better: {tflops: higher, time_us: lower}
//
// Without metrics: a phase whose steps read `results: {format: vllm-bench}`
// has that format's (DefaultVLLMBenchMetrics); any other has every numeric
// column, as before.

// Metric is one metric of a phase: its column, and which way it improves
// ("" where nothing says).
type Metric struct {
	Name   string
	Better Direction
}

// Direction is which way a metric improves: Higher, Lower, or "" where
// nothing says (a change is then only a change).
type Direction string

const (
	Higher Direction = "higher"
	Lower  Direction = "lower"
)

// Op is the direction an expectation's operator gives: >= and > are
// Higher, <= and < Lower; "" for any other (==, ±).
func Op(op string) Direction {
	switch op {
	case ">=", ">":
		return Higher
	case "<=", "<":
		return Lower
	}
	return ""
}

// DefaultVLLMBenchMetrics are vllm bench serve's answers: output token
// throughput, and the median and p99 of TTFT and TPOT; and, where the
// file's requests tell it (--save-detailed), the concurrency the row
// achieved, tabled beside the one it asked for (no way of it is better).
var DefaultVLLMBenchMetrics = []Metric{
	{"output_token_throughput_tok_s", Higher},
	{"median_ttft_ms", Lower}, {"p99_ttft_ms", Lower},
	{"median_tpot_ms", Lower}, {"p99_tpot_ms", Lower},
	{"achieved_concurrency", ""},
}

// DefaultAIPerfMetrics are AIPerf's answers, as its summary names them:
// output token throughput, the median and p99 of TTFT and of a request's
// mean gap between tokens (its inter_token_latency, vLLM's TPOT), and the
// concurrency the run achieved.
var DefaultAIPerfMetrics = []Metric{
	{"output_token_throughput_tokens_sec", Higher},
	{"median_time_to_first_token_ms", Lower}, {"p99_time_to_first_token_ms", Lower},
	{"median_inter_token_latency_ms", Lower}, {"p99_inter_token_latency_ms", Lower},
	{"achieved_concurrency", ""},
}

// VLLMBenchSavedAs are --save-result keys under the name the printed block gives
// the same figure (vLLM's bench serve, 0.10 to 0.11).
var VLLMBenchSavedAs = map[string]string{
	"completed":               "successful_requests",
	"failed":                  "failed_requests",
	"duration":                "benchmark_duration_s",
	"total_output_tokens":     "total_generated_tokens",
	"request_throughput":      "request_throughput_req_s",
	"request_goodput":         "request_goodput_req_s",
	"output_throughput":       "output_token_throughput_tok_s",
	"total_token_throughput":  "total_token_throughput_tok_s",
	"max_output_tokens_per_s": "peak_output_token_throughput_tok_s",
	"max_concurrent_requests": "peak_concurrent_requests",
	"max_concurrency":         "maximum_request_concurrency",
}

// Names are the columns a metric may come as: its name, and where it is
// a --save-result key, the name vllm bench's printed block gives it (or
// the other way round).
func (m Metric) Names() []string {
	out := []string{m.Name}
	for saved, printed := range VLLMBenchSavedAs {
		switch m.Name {
		case saved:
			out = append(out, printed)
		case printed:
			out = append(out, saved)
		}
	}
	return out
}

// MetricSpec is one entry of metrics:, a name or {name: direction}.
type MetricSpec struct {
	Name   string
	Better string
}

// UnmarshalYAML takes a name, or a mapping of one name to its direction.
func (m *MetricSpec) UnmarshalYAML(unmarshal func(any) error) error {
	name, one, err := wordOrMapping(unmarshal)
	switch {
	case err != nil:
		return err
	case one == nil:
		*m = MetricSpec{Name: name}
	case len(one) != 1:
		return fmt.Errorf("an entry of metrics: is a name or {name: higher|lower}; this one has %d keys", len(one))
	}
	for k, v := range one {
		*m = MetricSpec{Name: k, Better: v}
	}
	return nil
}

// wordOrMapping decodes a plain word or a mapping of words (nil when it
// was the word), by the same strict decoder so errors keep their line.
func wordOrMapping(unmarshal func(any) error) (string, map[string]string, error) {
	var s string
	if err := unmarshal(&s); err == nil {
		return s, nil, nil
	}
	var m map[string]string
	if err := unmarshal(&m); err != nil {
		return "", nil, err
	}
	return "", m, nil
}

// MarshalJSON writes a name alone as a string.
func (m MetricSpec) MarshalJSON() ([]byte, error) {
	if m.Better == "" {
		return json.Marshal(m.Name)
	}
	return json.Marshal(map[string]string{m.Name: m.Better})
}

// BetterSpec is better: one word for every metric, or one per metric.
type BetterSpec struct {
	All string
	Of  map[string]string
}

// UnmarshalYAML takes a word or a mapping of metric to word.
func (b *BetterSpec) UnmarshalYAML(unmarshal func(any) error) error {
	all, of, err := wordOrMapping(unmarshal)
	*b = BetterSpec{All: all, Of: of}
	return err
}

// MarshalJSON writes the word as a string (as the phase's hash always
// had it), a mapping as an object.
func (b BetterSpec) MarshalJSON() ([]byte, error) {
	if b.Of != nil {
		return json.Marshal(b.Of)
	}
	return json.Marshal(b.All)
}

// IsZero is a better: not written.
func (b BetterSpec) IsZero() bool { return b.All == "" && b.Of == nil }

// direction checks one higher or lower.
func (l *loader) direction(at, word string) Direction {
	switch w := Direction(strings.TrimSpace(word)); w {
	case Higher, Lower:
		return w
	default:
		l.add(at, fmt.Sprintf("%q is neither higher nor lower", word), "write higher (throughput) or lower (latency)")
		return ""
	}
}

// better resolves a phase's better:, its metrics: and its format's
// defaults into the phase's Better, BetterOf and Metrics.
func (l *loader) better(ps *PhaseSpec, ph *Phase, at func(string) string) {
	if b := ps.Better; b.All != "" {
		ph.Better = l.direction(at(".better"), b.All)
	}
	if len(ps.Better.Of) > 0 {
		ph.BetterOf = map[string]Direction{}
		names := make([]string, 0, len(ps.Better.Of))
		for k := range ps.Better.Of {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			ph.BetterOf[k] = l.direction(at(".better."+k), ps.Better.Of[k])
		}
	}
	seen := map[string]bool{}
	for i, m := range ps.Metrics {
		name := strings.TrimSpace(m.Name)
		switch {
		case name == "":
			l.add(at(fmt.Sprintf(".metrics[%d]", i)), "a metric with no name", "write the result column's name, as the CSV's header has it")
			continue
		case seen[name]:
			l.add(at(fmt.Sprintf(".metrics[%d]", i)), fmt.Sprintf("metric %q is listed twice", name), "keep one")
			continue
		}
		seen[name] = true
		var dir Direction
		if m.Better != "" {
			dir = l.direction(at(fmt.Sprintf(".metrics[%d].%s", i, name)), m.Better)
		}
		ph.Metrics = append(ph.Metrics, Metric{Name: name, Better: dir})
	}
	if len(ps.Metrics) == 0 {
		if d := ph.formatMetrics(); d != nil {
			ph.Metrics = append([]Metric(nil), d...)
			ph.MetricsByDefault = true
		}
	}
}

// DefaultNCCLTestsMetrics are an nccl-tests table's measurements, a row a
// message size: its times and bus bandwidths (the sizes, counts and
// GPU pairs are what was measured, not measurements).
var DefaultNCCLTestsMetrics = []Metric{
	{"oop_time_us", Lower}, {"oop_busbw_gbs", Higher}, {"ip_time_us", Lower}, {"ip_busbw_gbs", Higher}, {"avg_busbw_gbs", Higher},
}

// DefaultNVBandwidthMetrics are nvbandwidth's: a GPU pair's bandwidth.
var DefaultNVBandwidthMetrics = []Metric{{"gbs", Higher}}

// formatMetrics are the metrics of the format the phase's steps read
// (the first that has some); nil for none.
func (ph *Phase) formatMetrics() []Metric {
	for _, s := range ph.AllSteps() {
		switch s.ResultsFormat {
		case FormatVLLMBench, FormatGuideLLM: // GuideLLM's rows name its figures as vllm bench does
			return DefaultVLLMBenchMetrics
		case FormatAIPerf:
			return DefaultAIPerfMetrics
		case FormatNCCLTests:
			return DefaultNCCLTestsMetrics
		case FormatNVBandwidth:
			return DefaultNVBandwidthMetrics
		}
	}
	return nil
}

// MeasurementOf names what one row of a table format measured, where a
// step's rows are not repeats of one measurement: an nccl-tests row's
// GPU count and message size ("8 GPUs · 1 MiB"; "average" for its
// summary), an nvbandwidth row's test and GPU pair ("device_to_device_memcpy_read_ce
// · 0 → 1"); "" for any other row. A comparison holds each apart.
func MeasurementOf(values map[string]any) string {
	num := func(k string) (float64, bool) { f, ok := values[k].(float64); return f, ok }
	if size, ok := num("size_b"); ok {
		if _, ok := num("oop_time_us"); ok {
			out := SizeText(size)
			if r, ok := num("ranks"); ok && r > 0 {
				out = fmt.Sprintf("%d GPUs · %s", int(r), out)
			}
			if c, ok := values["collective"].(string); ok && c != "" {
				out = strings.TrimSuffix(c, "_perf") + " · " + out
			}
			return out
		}
	}
	if _, ok := num("avg_busbw_gbs"); ok {
		return "average"
	}
	src, ok1 := num("src")
	dst, ok2 := num("dst")
	if _, ok3 := num("gbs"); ok1 && ok2 && ok3 {
		test, _ := values["test"].(string)
		return fmt.Sprintf("%s · %d → %d", test, int(src), int(dst))
	}
	return ""
}

// MeasuredBy says a column of a row MeasurementOf names is one of its
// format's measurements (a time, a bandwidth), not what it measured (a
// size, a count, a GPU pair).
func MeasuredBy(column string) bool {
	for _, m := range append(slices.Clone(DefaultNCCLTestsMetrics), DefaultNVBandwidthMetrics...) {
		if m.Name == column {
			return true
		}
	}
	return false
}

// SizeText is a message size in binary units: "1 MiB", "12 B" (the
// one spelling: the record's blocks and charts say sizes so too).
func SizeText(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 && math.Mod(b, 1024) == 0 {
		b /= 1024
		i++
	}
	return strconv.FormatFloat(b, 'f', -1, 64) + " " + units[i]
}

// readsVLLMBench says the phase's steps read vllm bench's result block.
func (ph *Phase) readsVLLMBench() bool {
	for _, s := range ph.AllSteps() {
		if s.ResultsFormat == FormatVLLMBench {
			return true
		}
	}
	return false
}

// MetricNames are the phase's metrics' names; nil when it has none (every
// numeric column is then one).
func (ph *Phase) MetricNames() []string {
	var out []string
	for _, m := range ph.Metrics {
		out = append(out, m.Name)
	}
	return out
}
