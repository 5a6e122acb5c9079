package campaign

// The names a phase's expressions (roofline:, floor:) and its plot:
// read, checked when the file is read: a name one slip from an axis, a
// structured axis's field or a column its steps declare is a slip, said
// at its line with the name it likely means; a field a structured axis
// does not have is said with the fields it has. A name far from every
// known one may come from the steps' own JSON rows, and is checked at the
// phase's first rows (the runner's slips).

import (
	"fmt"
	"slices"
	"strings"
)

// Format's known columns, the readers' own (runner's nccl-tests and
// nvbandwidth readers name their rows' columns from these).
var (
	NCCLTestsColumns = []string{"size_b", "count", "type", "redop", "root",
		"oop_time_us", "oop_algbw_gbs", "oop_busbw_gbs", "oop_wrong",
		"ip_time_us", "ip_algbw_gbs", "ip_busbw_gbs", "ip_wrong"}
	NCCLTestsExtra     = []string{"ranks", "collective", "avg_busbw_gbs"}
	NVBandwidthColumns = []string{"test", "row", "col", "src", "dst", "gbs"}
	// GuideLLMColumns are a GuideLLM benchmark's row's own: its strategy
	// and load, and its successful requests' figures under vllm bench's
	// names where they are the same figure.
	GuideLLMColumns = []string{"benchmark", "strategy", "max_concurrency", "request_rate", "request_throughput",
		"output_token_throughput_tok_s", "guidellm_request_concurrency",
		"mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms",
		"mean_e2el_s", "median_e2el_s", "p99_e2el_s"}
)

// aiperfColumns are an AIPerf summary's columns for the metrics every
// run of it reports: a statistic of a per-request metric
// (p99_time_to_first_token_ms), a run's figure by its name and unit.
func aiperfColumns() []string {
	out := []string{"request_throughput_requests_sec", "output_token_throughput_tokens_sec", "request_count_requests",
		"benchmark_duration_sec", "max_concurrency", "request_rate"}
	for _, m := range []string{"time_to_first_token_ms", "inter_token_latency_ms", "request_latency_ms",
		"output_sequence_length_tokens", "input_sequence_length_tokens", "output_token_throughput_per_user_tokens_sec_user"} {
		for _, stat := range []string{"mean", "median", "p90", "p95", "p99", "min", "max", "std"} {
			out = append(out, stat+"_"+m)
		}
	}
	return out
}

// DeclaredColumns are the columns a phase's rows are known to carry
// before any runs: its axes (and their fields), its metrics: names, its
// steps' regex groups and their formats' columns; the steps' own JSON
// rows may carry others.
func (ph *Phase) DeclaredColumns() []string {
	out := ph.Sweep.VarNames()
	for _, m := range ph.Metrics {
		out = append(out, m.Names()...)
	}
	for _, s := range ph.AllSteps() {
		if s.Results != nil {
			for _, n := range s.Results.SubexpNames() {
				if n != "" {
					out = append(out, n)
				}
			}
		}
		switch s.ResultsFormat {
		case FormatNCCLTests:
			out = append(append(out, NCCLTestsColumns...), NCCLTestsExtra...)
		case FormatNVBandwidth:
			out = append(out, NVBandwidthColumns...)
		case FormatVLLMBench:
			out = append(out, vllmBenchColumns()...)
		case FormatAIPerf:
			out = append(out, aiperfColumns()...)
		case FormatGuideLLM:
			out = append(out, GuideLLMColumns...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// slipOf is the known name a name is one slip from, "" when it is known
// or near none. Names under four letters are never taken for slips: m is
// one edit from n, and both are real.
func slipOf(name string, known []string) string {
	if slices.Contains(known, name) || len(name) < 4 {
		return ""
	}
	if n := Nearest(name, known); n != "" {
		return n
	}
	for _, k := range known {
		if strings.HasPrefix(k, name+"_") || strings.HasSuffix(k, "_"+name) {
			return k
		}
	}
	return ""
}

// checkExprNames says, for each phase, the names its expressions and its
// plot: read that are slips (above).
func (l *loader) checkExprNames(plan *Plan, ids map[string]int) {
	for _, ph := range plan.Phases {
		i, ok := ids[ph.ID]
		if !ok {
			continue
		}
		known := ph.DeclaredColumns()
		var runs strings.Builder
		for _, st := range ph.AllSteps() {
			runs.WriteString(st.Run)
		}
		// A name the steps use as ${name} too is the axis's spelling slipped,
		// said at the axis (axisSlipped), not here.
		usedAsAxis := func(n string) bool {
			return strings.Contains(runs.String(), "${"+n+"}") || strings.Contains(runs.String(), "${"+n+".")
		}
		at := func(k string) string { return fmt.Sprintf("$.phases[%d].%s", i, k) }
		check := func(path, key string, e Expr) {
			for _, m := range e.Members {
				axis, field, _ := strings.Cut(m, ".")
				if a := ph.axis(axis); a != nil && len(a.Values) > 0 && len(a.Values[0].Fields) > 0 && !slices.Contains(ph.Sweep.VarNames(), m) && field != "name" {
					l.add(path, fmt.Sprintf("%s: %s reads %s, a field the axis %s does not have", key, e.Text, m, axis),
						"its fields: "+strings.Join(a.fieldNames(), ", "))
				}
			}
			for _, n := range e.Names {
				if near := slipOf(n, known); near != "" && !usedAsAxis(n) {
					l.addSlip(path, fmt.Sprintf("%s: %s reads %s, which no axis or declared column of this phase has", key, e.Text, n), n, near, "")
				}
			}
		}
		if r := ph.Roofline; r != nil {
			check(at("roofline.flops"), "flops", r.Flops)
			check(at("roofline.bytes"), "bytes", r.Bytes)
			check(at("roofline.seconds"), "seconds", r.Seconds)
		}
		if f := ph.Floor; f != nil {
			check(at("floor.batch"), "batch", f.Batch)
			check(at("floor.context"), "context", f.Context)
			check(at("floor.tpot"), "tpot", f.TPOT)
		}
		var ys []string
		if c := ph.Curves; c != nil {
			ys = c.Y
		}
		if p := ph.Plot; p != nil {
			ys = []string{p.X, p.Y}
		}
		for _, y := range ys {
			if near := slipOf(y, known); near != "" && !usedAsAxis(y) {
				l.addSlip(at("plot"), fmt.Sprintf("plot: %s names a column no axis or declared column of this phase has", y), y, near, "")
			}
		}
	}
}

// axis is the phase's sweep axis of that name; nil for none.
func (ph *Phase) axis(name string) *Axis {
	if ph.Sweep == nil {
		return nil
	}
	for i := range ph.Sweep.Axes {
		if ph.Sweep.Axes[i].Name == name {
			return &ph.Sweep.Axes[i]
		}
	}
	return nil
}

// fieldNames are a structured axis's fields, sorted, name first.
func (a *Axis) fieldNames() []string {
	var out []string
	for _, v := range a.Values {
		for k := range v.Fields {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return append([]string{"name"}, out...)
}

// vllmBenchColumns are the columns vllm bench serve's block and its
// --save-result give, as the reader names them: its counts and rates, and
// each latency's mean, median, standard deviation and percentiles.
func vllmBenchColumns() []string {
	out := []string{"successful_requests", "failed_requests", "maximum_request_concurrency", "benchmark_duration_s",
		"total_input_tokens", "total_generated_tokens", "request_throughput_req_s", "request_goodput_req_s",
		"output_token_throughput_tok_s", "peak_output_token_throughput_tok_s", "peak_concurrent_requests",
		"total_token_throughput_tok_s"}
	for saved, printed := range VLLMBenchSavedAs {
		out = append(out, saved, printed)
	}
	for _, lat := range []string{"ttft", "tpot", "itl", "e2el"} {
		for _, stat := range []string{"mean", "median", "std", "p25", "p50", "p75", "p90", "p95", "p99", "p99_9"} {
			out = append(out, stat+"_"+lat+"_ms")
		}
	}
	return out
}
