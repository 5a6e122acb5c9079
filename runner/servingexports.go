package runner

// AIPerf's and GuideLLM's exports, read as vllm bench's --save-result is:
// a row each run, with the tool's own figures, and from its per-request
// records the load the row applied (requestload.go).
//
// AIPerf (results: {format: aiperf}) writes, under its artifact dir,
// profile_export_aiperf.json (each metric's unit and statistics, the
// config it ran with) and profile_export.jsonl (a line a request: its
// metadata's request_start_ns and request_end_ns, its metrics'
// time_to_first_token, request_latency, inter_chunk_latency and
// inter_token_latency in ms, and its error). A --profile-export-file
// PREFIX names them PREFIX_aiperf.json and PREFIX.jsonl.
//
// GuideLLM (results: {format: guidellm}) writes benchmarks.json: one
// benchmark a load (a strategy: concurrent streams, a rate), its metrics'
// distributions by status, and its requests by status (successful,
// incomplete, errored), each with its timings (request_start,
// first_token_iteration, last_token_iteration, request_end,
// targeted_start; 0.2's start_time, first_token_time, last_token_time,
// end_time). It may keep a sample of them (--sample-requests); the count
// it made is in scheduler_metrics.requests_made.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

// aiperfStats are the statistics of an AIPerf metric, in its file's
// order, and the prefix each takes in a column: p99 of
// time_to_first_token in ms is p99_time_to_first_token_ms.
var aiperfStats = []struct{ key, prefix string }{
	{"avg", "mean"}, {"p50", "median"}, {"p90", "p90"}, {"p95", "p95"}, {"p99", "p99"}, {"min", "min"}, {"max", "max"}, {"std", "std"},
}

// aiperfSummaryTail is the end of an AIPerf summary file's name; its
// records file is the same prefix with .jsonl.
const aiperfSummaryTail = "_aiperf.json"

// aiperfRecordsOf is the records file beside an AIPerf summary file.
func aiperfRecordsOf(summary string) string {
	return strings.TrimSuffix(summary, aiperfSummaryTail) + ".jsonl"
}

// aiperfSummary reads profile_export_aiperf.json: a column a metric's
// statistic (a metric with one value, a throughput, is its name and unit:
// request_throughput_requests_sec), the requested concurrency as
// max_concurrency (the name every serving row uses), and the figures its
// records are held against. ok is false for a file that is not one JSON
// object with a metric.
func aiperfSummary(b []byte) (cols []string, vals []any, set requestSet, ok bool) {
	set = requestSet{tool: "AIPerf", client: "aiperf", startKey: "request_start_ns", theirsHow: "interpolated", theirs: map[string]float64{}}
	b, set.nulls = jsonWithNulls(b)
	keys, raws, ok := objectFields(b)
	if !ok {
		return nil, nil, set, false
	}
	var loadgen struct {
		Loadgen struct {
			Concurrency *float64 `json:"concurrency"`
			RequestRate *float64 `json:"request_rate"`
		} `json:"loadgen"`
	}
	for i, k := range keys {
		if k == "input_config" {
			json.Unmarshal(raws[i], &loadgen)
			continue
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(raws[i], &m) != nil || m["unit"] == nil {
			continue
		}
		var unit string
		json.Unmarshal(m["unit"], &unit)
		u := suffix(snake(unit))
		stats := 0
		for _, st := range aiperfStats {
			var v *float64
			if raw, has := m[st.key]; !has || json.Unmarshal(raw, &v) != nil || v == nil {
				continue
			}
			stats++
			cols, vals = append(cols, st.prefix+"_"+k+u), append(vals, *v)
		}
		if stats == 1 && cols[len(cols)-1] == "mean_"+k+u {
			cols[len(cols)-1] = k + u // one value: a throughput, a count
		}
	}
	if len(cols) == 0 {
		return nil, nil, set, false
	}
	v := map[string]float64{}
	for i, c := range cols {
		v[c] = vals[i].(float64)
	}
	set.rate = v["request_throughput_requests_sec"]
	for col, name := range map[string]string{ColTTFTP99: "p99_time_to_first_token_ms", ColTPOTP99: "p99_inter_token_latency_ms", ColE2ELP99: "p99_request_latency_ms"} {
		if x, has := v[name]; has {
			set.theirs[col] = x
		}
	}
	if c := loadgen.Loadgen.Concurrency; c != nil {
		cols, vals = append(cols, "max_concurrency"), append(vals, *c)
	}
	if r := loadgen.Loadgen.RequestRate; r != nil {
		cols, vals = append(cols, "request_rate"), append(vals, *r)
	}
	return cols, vals, set, true
}

// suffix is a unit as a column's end: "_ms"; "" for none.
func suffix(unit string) string {
	if unit == "" {
		return ""
	}
	return "_" + unit
}

// aiperfRecords reads profile_export.jsonl into set: a request a line,
// warm-up requests left out. A line that is not a record is counted and
// said, never taken for a request.
func aiperfRecords(r io.Reader, set *requestSet) {
	type value struct {
		Value *float64 `json:"value"`
	}
	// Only the figures read are named: the decoder skips the rest of a
	// record unbuilt (a map of every metric cost 8 µs a request).
	var rec struct {
		Metadata struct {
			Start *float64 `json:"request_start_ns"`
			End   *float64 `json:"request_end_ns"`
			Phase string   `json:"benchmark_phase"`
		} `json:"metadata"`
		Metrics struct {
			TTFT    *value `json:"time_to_first_token"`
			Latency *value `json:"request_latency"`
			ITL     *value `json:"inter_token_latency"`
			Chunks  *struct {
				Value []*float64 `json:"value"`
			} `json:"inter_chunk_latency"`
		} `json:"metrics"`
		Error json.RawMessage `json:"error"`
	}
	num := func(v *value) float64 {
		if v != nil && v.Value != nil {
			return *v.Value
		}
		return math.NaN()
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	bad, warm := 0, 0
	set.hasStart = true
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		line, n := jsonWithNulls(line)
		set.nulls += n
		rec.Metadata.Start, rec.Metadata.End, rec.Metadata.Phase, rec.Error = nil, nil, "", nil
		rec.Metrics.TTFT, rec.Metrics.Latency, rec.Metrics.ITL, rec.Metrics.Chunks = nil, nil, nil, nil
		if json.Unmarshal(line, &rec) != nil {
			bad++
			continue
		}
		if rec.Metadata.Phase != "" && rec.Metadata.Phase != "profiling" {
			warm++
			continue
		}
		t := timedRequest{start: math.NaN(), ttft: math.NaN(), e2el: math.NaN(), queue: math.NaN(), tpot: math.NaN()}
		if rec.Metadata.Start != nil {
			t.start = *rec.Metadata.Start / 1e9
		}
		failed := len(rec.Error) > 0 && string(rec.Error) != "null"
		if failed {
			t.failed = true
			if rec.Metadata.Start != nil && rec.Metadata.End != nil {
				t.e2el = (*rec.Metadata.End - *rec.Metadata.Start) / 1e9
			}
			t.broken = math.IsNaN(t.start) || math.IsNaN(t.e2el) || t.e2el < 0
			if t.broken {
				set.unknownFailed++
				continue
			}
			set.reqs = append(set.reqs, t)
			continue
		}
		t.ttft = num(rec.Metrics.TTFT) / 1000
		t.e2el = num(rec.Metrics.Latency) / 1000
		t.tpot = num(rec.Metrics.ITL) / 1000
		if c := rec.Metrics.Chunks; c != nil {
			t.itls = make([]float64, len(c.Value))
			for k, g := range c.Value {
				t.itls[k] = math.NaN()
				if g != nil {
					t.itls[k] = *g / 1000
				}
			}
		}
		t.broken = math.IsNaN(t.start) || math.IsNaN(t.e2el) || !(t.ttft > 0) || t.e2el < t.ttft
		set.reqs = append(set.reqs, t)
	}
	if err := sc.Err(); err != nil {
		set.said = append(set.said, fmt.Sprintf("the records stop being read at a line past 64 MiB or unreadable (%v): the requests after it are not counted", err))
	}
	if bad > 0 {
		set.said = append(set.said, fmt.Sprintf("%d line(s) of the records are not a JSON record and are left out", bad))
	}
	if warm > 0 {
		set.said = append(set.said, fmt.Sprintf("%d warm-up request(s) left out", warm))
	}
}

// guidellmDist is one of GuideLLM's distributions: its figures for the
// successful requests.
type guidellmDist struct {
	Successful *struct {
		Mean        *float64           `json:"mean"`
		Median      *float64           `json:"median"`
		Percentiles map[string]float64 `json:"percentiles"`
	} `json:"successful"`
}

// guidellmTimes are a GuideLLM request's times, in seconds since the
// epoch, as its 0.3 and later (info.timings) and its 0.2 (top-level
// fields) write them.
type guidellmRequest struct {
	Info struct {
		Timings struct {
			TargetedStart *float64 `json:"targeted_start"`
			RequestStart  *float64 `json:"request_start"`
			FirstToken    *float64 `json:"first_token_iteration"`
			LastToken     *float64 `json:"last_token_iteration"`
			RequestEnd    *float64 `json:"request_end"`
		} `json:"timings"`
	} `json:"info"`
	StartTime      *float64 `json:"start_time"`
	FirstTokenTime *float64 `json:"first_token_time"`
	LastTokenTime  *float64 `json:"last_token_time"`
	EndTime        *float64 `json:"end_time"`
	SchedulerInfo  struct {
		TargetedStart *float64 `json:"targeted_start_time"`
	} `json:"scheduler_info"`
	OutputTokens *float64 `json:"output_tokens"`
	ITLms        *float64 `json:"inter_token_latency_ms"`
}

// timed is the request in seconds; failed for one that errored or was cut
// at the benchmark's end (its slot was held all the same).
func (g guidellmRequest) timed(failed bool) timedRequest {
	pick := func(a, b *float64) float64 {
		switch {
		case a != nil:
			return *a
		case b != nil:
			return *b
		}
		return math.NaN()
	}
	t := g.Info.Timings
	start := pick(t.RequestStart, g.StartTime)
	end := pick(t.RequestEnd, g.EndTime)
	first := pick(t.FirstToken, g.FirstTokenTime)
	last := pick(t.LastToken, g.LastTokenTime)
	target := pick(t.TargetedStart, g.SchedulerInfo.TargetedStart)
	r := timedRequest{start: start, e2el: end - start, ttft: first - start, queue: math.NaN(), tpot: math.NaN(), failed: failed}
	if !math.IsNaN(target) && start >= target {
		r.queue = start - target
	}
	switch {
	case g.ITLms != nil:
		r.tpot = *g.ITLms / 1000
	case g.OutputTokens != nil && *g.OutputTokens > 1:
		r.tpot = (last - first) / (*g.OutputTokens - 1)
	}
	if failed {
		r.broken = math.IsNaN(r.start) || math.IsNaN(r.e2el) || r.e2el < 0
	} else {
		r.broken = math.IsNaN(r.start) || math.IsNaN(r.e2el) || !(r.ttft > 0) || r.e2el < r.ttft
	}
	return r
}

// guidellmStrategy is a GuideLLM benchmark's load: concurrent streams,
// or a rate.
type guidellmStrategy struct {
	Type    string   `json:"type_"`
	Streams *float64 `json:"streams"`
	Rate    *float64 `json:"rate"`
}

// guidellmRows reads a GuideLLM benchmarks.json: a row a benchmark. ok is
// false for a file without a benchmarks list.
func guidellmRows(b []byte) (rows [][]string, vals [][]any, ok bool) {
	b, nulls := jsonWithNulls(b)
	var file struct {
		Benchmarks []struct {
			Config struct {
				Strategy guidellmStrategy `json:"strategy"`
			} `json:"config"`
			Args struct { // 0.2: the strategy under args
				Strategy guidellmStrategy `json:"strategy"`
			} `json:"args"`
			SchedulerMetrics struct {
				RequestsMade struct {
					Successful *float64 `json:"successful"`
					Errored    *float64 `json:"errored"`
					Incomplete *float64 `json:"incomplete"`
				} `json:"requests_made"`
			} `json:"scheduler_metrics"`
			Metrics  map[string]guidellmDist `json:"metrics"`
			Requests struct {
				Successful []guidellmRequest `json:"successful"`
				Errored    []guidellmRequest `json:"errored"`
				Incomplete []guidellmRequest `json:"incomplete"`
			} `json:"requests"`
		} `json:"benchmarks"`
	}
	if json.Unmarshal(b, &file) != nil || file.Benchmarks == nil {
		return nil, nil, false
	}
	for i, bm := range file.Benchmarks {
		var cols []string
		var vs []any
		add := func(c string, v any) { cols, vs = append(cols, c), append(vs, v) }
		add("benchmark", float64(i+1))
		st := bm.Config.Strategy
		if st.Type == "" {
			st = bm.Args.Strategy
		}
		if st.Type != "" {
			add("strategy", st.Type)
		}
		if st.Streams != nil {
			add("max_concurrency", *st.Streams)
		}
		if st.Rate != nil {
			add("request_rate", *st.Rate)
		}
		set := requestSet{tool: "GuideLLM", client: "guidellm", startKey: "request_start", theirsHow: "own", hasStart: true, nulls: nulls, theirs: map[string]float64{}}
		// Its metrics, for the successful requests: mean, median and p99,
		// named as vllm bench's are where they are the same figure.
		for _, m := range []struct {
			key, col string
			latency  bool // a latency: its mean, median and p99; else a rate's mean
		}{
			{"requests_per_second", "request_throughput", false},
			{"output_tokens_per_second", "output_token_throughput_tok_s", false},
			{"request_concurrency", "guidellm_request_concurrency", false},
			{"time_to_first_token_ms", "ttft_ms", true},
			{"inter_token_latency_ms", "tpot_ms", true}, // GuideLLM's ITL is a request's mean gap: vLLM's TPOT
			{"request_latency", "e2el_s", true},
		} {
			d, has := bm.Metrics[m.key]
			if !has || d.Successful == nil {
				continue
			}
			s := d.Successful
			switch {
			case m.latency:
				if s.Mean != nil {
					add("mean_"+m.col, *s.Mean)
				}
				if s.Median != nil {
					add("median_"+m.col, *s.Median)
				}
				if p, has := s.Percentiles["p99"]; has {
					add("p99_"+m.col, p)
				}
			case s.Mean != nil:
				add(m.col, *s.Mean)
			}
		}
		v := map[string]float64{}
		for i, c := range cols {
			if f, ok := vs[i].(float64); ok {
				v[c] = f
			}
		}
		set.rate = v["request_throughput"]
		for col, name := range map[string]string{ColTTFTP99: "p99_ttft_ms", ColTPOTP99: "p99_tpot_ms"} {
			if x, has := v[name]; has {
				set.theirs[col] = x
			}
		}
		if x, has := v["p99_e2el_s"]; has {
			set.theirs[ColE2ELP99] = 1000 * x
		}
		queues := 0
		for _, g := range bm.Requests.Successful {
			r := g.timed(false)
			if !math.IsNaN(r.queue) {
				queues++
			}
			set.reqs = append(set.reqs, r)
		}
		set.hasQueue = queues == len(bm.Requests.Successful) && queues > 0
		if !set.hasQueue {
			for i := range set.reqs {
				set.reqs[i].queue = math.NaN()
			}
		}
		cut := 0
		for _, l := range [][]guidellmRequest{bm.Requests.Errored, bm.Requests.Incomplete} {
			for _, g := range l {
				r := g.timed(true)
				if r.broken {
					set.unknownFailed++
					continue
				}
				set.reqs = append(set.reqs, r)
			}
			cut += len(l)
		}
		kept := len(bm.Requests.Successful) + cut
		made := 0.0
		for _, n := range []*float64{bm.SchedulerMetrics.RequestsMade.Successful, bm.SchedulerMetrics.RequestsMade.Errored, bm.SchedulerMetrics.RequestsMade.Incomplete} {
			if n != nil {
				made += *n
			}
		}
		if int(made) > kept {
			set.sampledOf = int(made)
		}
		if len(set.reqs) == 0 && set.unknownFailed == 0 {
			set.said = append(set.said, "no request in the file (GuideLLM kept none: --sample-requests 0?)")
		}
		lc, lv := requestLoad(set)
		rows, vals = append(rows, append(cols, lc...)), append(vals, append(vs, lv...))
	}
	return rows, vals, true
}

// aiperfRow is one AIPerf run's row: its summary's figures and its
// records' load. Either file may be missing (nil): what it would tell is
// then not told.
func aiperfRow(summary []byte, records io.Reader) (cols []string, vals []any, ok bool) {
	set := requestSet{tool: "AIPerf", client: "aiperf", startKey: "request_start_ns", theirsHow: "interpolated", theirs: map[string]float64{}}
	if summary != nil {
		if cols, vals, set, ok = aiperfSummary(summary); !ok {
			return nil, nil, false
		}
	}
	if records == nil {
		set.said = append(set.said, "no profile_export.jsonl beside it: the load the row applied is not told")
		lc, lv := requestLoad(set)
		return append(cols, lc...), append(vals, lv...), true
	}
	aiperfRecords(records, &set)
	lc, lv := requestLoad(set)
	if len(cols) == 0 && len(lc) == 0 {
		return nil, nil, false
	}
	return append(cols, lc...), append(vals, lv...), true
}

// servingExportFile says which of a step's artifacts the format's reader
// takes: vllm bench's --save-result JSON; AIPerf's summary and records;
// any JSON for GuideLLM (a benchmarks list is looked for in it).
func servingExportFile(format, path string) bool {
	switch format {
	case campaign.FormatAIPerf:
		return strings.HasSuffix(path, aiperfSummaryTail) || strings.HasSuffix(path, ".jsonl")
	case campaign.FormatVLLMBench, campaign.FormatGuideLLM:
		return strings.HasSuffix(path, ".json") && !strings.HasSuffix(path, ".pt.trace.json")
	}
	return false
}

// aiperfPairs pairs each AIPerf summary among names (a step's claimed
// files, by their paths) with the records beside it: index pairs into
// names, -1 for a side missing.
func aiperfPairs(names []string) (pairs [][2]int) {
	used := map[int]bool{}
	for i, n := range names {
		if !strings.HasSuffix(n, aiperfSummaryTail) {
			continue
		}
		j := slices.Index(names, aiperfRecordsOf(n))
		if j >= 0 {
			used[j] = true
		}
		pairs = append(pairs, [2]int{i, j})
	}
	for j, n := range names {
		// Records with no summary beside them: AIPerf's own name only
		// (its raw, server-metrics and telemetry exports are JSON lines
		// of other things).
		if filepath.Base(n) == "profile_export.jsonl" && !used[j] {
			pairs = append(pairs, [2]int{-1, j})
		}
	}
	return pairs
}

// readOnce is a claimed file's name marked read for this step's folder:
// false when it was read before (a runner started again reads a step's
// end once more).
func (sr *stepRun) readOnce(name string) bool {
	pr := sr.pr
	if pr.savedRead[name+"|"+sr.dir] {
		return false
	}
	if pr.savedRead == nil {
		pr.savedRead = map[string]bool{}
	}
	pr.savedRead[name+"|"+sr.dir] = true
	return true
}

// readAIPerf, at the step's end, makes a row of each AIPerf run the step
// claimed: its summary with the records beside it.
func (sr *stepRun) readAIPerf(paths, names []string, now time.Time) {
	pr := sr.pr
	for _, p := range aiperfPairs(names) {
		first := p[0]
		if first < 0 {
			first = p[1]
		}
		if !sr.readOnce(names[first]) {
			continue
		}
		var summary []byte
		if p[0] >= 0 {
			b, err := os.ReadFile(paths[p[0]])
			if err != nil {
				continue
			}
			summary = b
		}
		var records io.Reader
		var f *os.File
		if p[1] >= 0 {
			if f, _ = os.Open(paths[p[1]]); f != nil {
				records = f
			}
		}
		cols, vals, ok := aiperfRow(summary, records)
		if f != nil {
			f.Close()
		}
		if !ok {
			sr.r.warn(pr.ph.ID + ": " + filepath.Base(names[first]) + " is not an AIPerf export (its summary is one JSON object of metrics; its records a JSON line a request); it is listed, not read")
			continue
		}
		row := Row{Phase: pr.ph.ID, Step: sr.step.Index, Time: now}
		row.Cols, row.Values = append([]string{"file"}, cols...), append([]any{filepath.Base(names[first])}, vals...)
		sr.addRow(row, true)
	}
}

// readGuideLLM, at the step's end, makes a row of each benchmark in each
// GuideLLM file the step claimed.
func (sr *stepRun) readGuideLLM(paths, names []string, now time.Time) {
	pr := sr.pr
	for i, path := range paths {
		if !sr.readOnce(names[i]) {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		rows, vals, ok := guidellmRows(b)
		if !ok {
			sr.r.warn(pr.ph.ID + ": " + filepath.Base(names[i]) + " is not a GuideLLM benchmarks file (a JSON object with a benchmarks list); it is listed, not read")
			continue
		}
		for k := range rows {
			row := Row{Phase: pr.ph.ID, Step: sr.step.Index, Time: now}
			row.Cols, row.Values = append([]string{"file"}, rows[k]...), append([]any{filepath.Base(names[i])}, vals[k]...)
			sr.addRow(row, true)
		}
	}
}
