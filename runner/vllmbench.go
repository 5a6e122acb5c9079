package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

// vllmBench reads the block, line by line:
//
//	============ Serving Benchmark Result ============
//	Successful requests:                     1000
//	Benchmark duration (s):                  50.12
//	Output token throughput (tok/s):         2553.86
//	---------------Time to First Token----------------
//	Mean TTFT (ms):                          123.45
//	==================================================
//
// Every `label: value` row between the rules is a column, its label in
// snake case (output_token_throughput_tok_s, mean_ttft_ms).
type vllmBench struct {
	in   bool
	cols []string
	vals []any
	// held are the blocks read, kept until the step ends to be paired
	// with the --save-result files the same runs wrote: one row each.
	held []Row
}

var (
	vbStart = regexp.MustCompile(`^=+\s*Serving Benchmark Result\s*=+\s*$`)
	vbEnd   = regexp.MustCompile(`^=+\s*$`)
	vbRow   = regexp.MustCompile(`^([^:]+):\s+(\S.*?)\s*$`)
	nonWord = regexp.MustCompile(`[^a-z0-9]+`)
)

// snake is a label as a column name: "Output token throughput (tok/s)"
// is output_token_throughput_tok_s.
func snake(label string) string {
	return strings.Trim(nonWord.ReplaceAllString(strings.ToLower(label), "_"), "_")
}

// line takes one log line; at the block's closing rule it returns the row.
func (v *vllmBench) line(b []byte) (cols []string, vals []any, done bool) {
	s := strings.TrimSpace(string(b))
	if !v.in {
		if vbStart.MatchString(s) {
			v.in, v.cols, v.vals = true, nil, nil
		}
		return nil, nil, false
	}
	if vbEnd.MatchString(s) {
		v.in = false
		return v.cols, v.vals, len(v.cols) > 0
	}
	if vbStart.MatchString(s) { // a block cut short, and a new one
		v.cols, v.vals = nil, nil
		return nil, nil, false
	}
	if m := vbRow.FindStringSubmatch(s); m != nil && !strings.HasPrefix(s, "-") {
		v.cols = append(v.cols, snake(m[1]))
		v.vals = append(v.vals, parseValue(m[2]))
	}
	return nil, nil, false
}

// savedResult reads a --save-result JSON file: its scalar keys, in the
// file's order, as one row; arrays and objects (per-request lists) are
// skipped. ok is false for a file that is not one JSON object.
func savedResult(r io.Reader) (cols []string, vals []any, ok bool) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, false
	}
	b, nulls := jsonWithNulls(b)
	arrays := &requestArrays{has: map[string]bool{}, nulls: nulls}
	scalars := map[string]float64{}
	keys, raws, ok := objectFields(b)
	if !ok {
		return nil, nil, false
	}
	for i, key := range keys {
		raw := bytes.TrimSpace(raws[i])
		if len(raw) > 0 && raw[0] == '[' {
			arrays.take(key, raw) // a per-request list (--save-detailed)
		}
		if len(raw) == 0 || raw[0] == '[' || raw[0] == '{' {
			continue
		}
		var v any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if d.Decode(&v) != nil {
			continue
		}
		switch x := v.(type) {
		case json.Number:
			f, err := x.Float64()
			if err != nil {
				continue
			}
			v = f
			scalars[key] = f
		case nil:
		case string, bool:
		default:
			continue
		}
		cols = append(cols, snake(key))
		vals = append(vals, v)
	}
	if len(cols) == 0 {
		return nil, nil, false
	}
	lc, lv := requestLoad(arrays.requests(scalars))
	return append(cols, lc...), append(vals, lv...), true
}

// objectFields are a JSON object's keys and values, in the file's order
// (a result file's columns keep it); ok is false for what is not one
// JSON object.
func objectFields(b []byte) (keys []string, raws []json.RawMessage, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, false
		}
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			return nil, nil, false
		}
		keys, raws = append(keys, t.(string)), append(raws, raw)
	}
	return keys, raws, true
}

// readSavedResults, at the step's end, pairs each --save-result JSON the
// step claimed (claims.go: written in its run, and no other step's; read
// once each, in the order they were written) with the printed block of
// the same run, in the order they were printed: one row each, the JSON
// adding what the block does not say (a metric the block says under
// another name is not repeated). A file or a block without its pair is a
// row of its own.
func (sr *stepRun) readSavedResults(now time.Time) {
	if !slices.Contains(campaign.ServingFormats, sr.step.ResultsFormat) {
		return
	}
	pr := sr.pr
	paths, names, rewritten := sr.savedFiles()
	for _, p := range rewritten {
		if !pr.savedRead[p] {
			sr.r.warn(pr.ph.ID + ": " + filepath.Base(p) + " was written over since step " + fmt.Sprint(sr.step.Index+1) + " claimed it, and no copy was kept: its row is not read back")
		}
	}
	switch sr.step.ResultsFormat {
	case campaign.FormatAIPerf:
		sr.readAIPerf(paths, names, now)
		return
	case campaign.FormatGuideLLM:
		sr.readGuideLLM(paths, names, now)
		return
	}
	held := sr.vllm.held
	sr.vllm.held = nil
	for i, path := range paths {
		name := names[i]
		if pr.savedRead[name+"|"+sr.dir] {
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		cols, vals, ok := savedResult(f)
		f.Close()
		if pr.savedRead == nil {
			pr.savedRead = map[string]bool{}
		}
		pr.savedRead[name+"|"+sr.dir] = true
		if !ok {
			sr.r.warn(pr.ph.ID + ": " + filepath.Base(name) + " is not a vllm bench --save-result file (one JSON object); it is listed, not read")
			continue
		}
		row := Row{Phase: pr.ph.ID, Step: sr.step.Index, Time: now}
		if len(held) > 0 {
			row, held = held[0], held[1:]
		}
		row.Cols, row.Values = pairSaved(row.Cols, row.Values, filepath.Base(name), cols, vals)
		sr.addRow(row, true)
	}
	for _, row := range held {
		sr.addRow(row, true)
	}
}

// pairSaved is a block's row (cols, vals; none when the file has no
// block) with a --save-result file's name and the keys the block does
// not already say.
func pairSaved(cols []string, vals []any, file string, scols []string, svals []any) ([]string, []any) {
	outC := append([]string{"file"}, cols...)
	outV := append([]any{file}, vals...)
	for i, c := range scols {
		if slices.Contains(cols, c) || slices.Contains(cols, campaign.VLLMBenchSavedAs[c]) {
			continue
		}
		outC, outV = append(outC, c), append(outV, svals[i])
	}
	return outC, outV
}
