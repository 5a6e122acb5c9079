package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/greenlight-run/greenlight/report"
	"github.com/greenlight-run/greenlight/results"
)

// One campaign, one truth: the record's figures, NAME.json and status
// --json are views of one results model (package results), and agree on
// each point's state, runs, n and mean, a search's limit and bracket, and
// every skip; NAME.json and status --json are valid against the repo's
// JSON Schemas (schema/).

// schemaFor compiles one of the repo's JSON Schemas (its $refs to the
// others resolve beside it).
func schemaFor(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	s, err := c.Compile(filepath.Join("schema", name))
	if err != nil {
		t.Fatalf("schema/%s: %v", name, err)
	}
	return s
}

// validate checks doc against the schema, saying where it is not valid.
func validate(t *testing.T, s *jsonschema.Schema, what string, doc []byte) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("%s: not JSON: %v", what, err)
	}
	if err := s.Validate(v); err != nil {
		t.Errorf("%s is not valid against its schema:\n%v", what, err)
	}
}

// modelsOf are each phase's results model in a NAME.json or a status
// --json, by phase, as decoded JSON.
func modelsOf(t *testing.T, what string, doc []byte) map[string]any {
	t.Helper()
	var d struct {
		Phases []struct {
			ID    string `json:"id"`
			Model any    `json:"model"`
		} `json:"phases"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	out := map[string]any{}
	for _, p := range d.Phases {
		out[p.ID] = p.Model
	}
	return out
}

// checkParity holds the markdown's figures, NAME.json and status --json
// to one model: the same model in both JSONs, and the markdown's cells
// (n, mean, marks) and search limit as the model has them. It returns
// the model of NAME.json by phase.
func checkParity(t *testing.T, dir, campaignFile, name string) map[string]*results.Phase {
	t.Helper()
	recJSON, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	statusJSON, code := runBin(t, dir, "status", "--json", campaignFile)
	if code != 0 {
		t.Fatalf("status --json: exit %d\n%s", code, statusJSON)
	}
	validate(t, schemaFor(t, "record.schema.json"), name+".json", recJSON)
	validate(t, schemaFor(t, "status.schema.json"), "status --json", []byte(statusJSON))
	inRecord, inStatus := modelsOf(t, name+".json", recJSON), modelsOf(t, "status --json", []byte(statusJSON))
	for id, m := range inRecord {
		if !reflect.DeepEqual(m, inStatus[id]) {
			a, _ := json.MarshalIndent(m, "", " ")
			b, _ := json.MarshalIndent(inStatus[id], "", " ")
			t.Errorf("phase %s: NAME.json and status --json disagree:\nNAME.json:\n%s\nstatus --json:\n%s", id, a, b)
		}
	}
	var rec struct {
		Phases []struct {
			ID    string         `json:"id"`
			Model *results.Phase `json:"model"`
		} `json:"phases"`
	}
	json.Unmarshal(recJSON, &rec)
	md, _ := os.ReadFile(filepath.Join(dir, name+".md"))
	out := map[string]*results.Phase{}
	for _, p := range rec.Phases {
		out[p.ID] = p.Model
		if p.Model == nil {
			t.Errorf("phase %s has no model in %s.json", p.ID, name)
			continue
		}
		for _, pt := range p.Model.Points {
			if p.Model.Kind != results.KindSweep || strings.Contains(pt.Key, ",") {
				continue // a search's block is its probes; a grid of several axes is read by its first
			}
			for _, s := range pt.Stats {
				cell := cellOf(string(md), p.ID, s.Metric, pt.Key)
				if cell == "" {
					t.Errorf("%s: no cell for %s at %s in the markdown", p.ID, s.Metric, pt.Key)
					continue
				}
				if mean := report.FormatNumber(s.Mean); !strings.HasPrefix(cell, mean) {
					t.Errorf("%s %s at %s: the markdown says %q, the model's mean is %s", p.ID, s.Metric, pt.Key, cell, mean)
				}
				if s.N >= 2 && !strings.Contains(cell, fmt.Sprintf("(n=%d)", s.N)) {
					t.Errorf("%s %s at %s: the markdown says %q, the model's n is %d", p.ID, s.Metric, pt.Key, cell, s.N)
				}
				if s.Noisy != strings.Contains(cell, "⚠") {
					t.Errorf("%s %s at %s: the markdown says %q, the model's noisy is %v", p.ID, s.Metric, pt.Key, cell, s.Noisy)
				}
				if skipped := pt.State == results.Skipped; skipped != strings.Contains(cell, "✂") {
					t.Errorf("%s %s at %s: the markdown says %q, the model's state is %s", p.ID, s.Metric, pt.Key, cell, pt.State)
				}
			}
		}
		if s := p.Model.Search; s != nil && s.Found && !strings.Contains(string(md), fmt.Sprintf("**%s %d**", s.Axis, s.Limit)) {
			t.Errorf("%s: the markdown does not give the model's limit %s %d", p.ID, s.Axis, s.Limit)
		}
	}
	return out
}

// cellOf is the markdown's cell of metric at point (axis=value, a
// one-axis sweep) in phase id's block, "" if none.
func cellOf(md, id, metric, point string) string {
	_, value, _ := strings.Cut(point, "=")
	b := strings.Index(md, "<!-- greenlight:begin phase:"+id+" -->")
	e := strings.Index(md, "<!-- greenlight:end phase:"+id+" -->")
	if b < 0 || e < b {
		return ""
	}
	md = md[b:e]
	i := strings.Index(md, "\n#### "+metric+"\n")
	if i < 0 {
		return ""
	}
	for _, line := range strings.Split(md[i:], "\n")[4:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) >= 2 && strings.TrimSpace(cells[0]) == value {
			return strings.TrimSpace(cells[1])
		}
	}
	return ""
}

// TestOneTruth: a grid run until precise (points stopped as precise, one
// run to its max and noisy, one skipped by you after a run) and an SLO
// search: the markdown, NAME.json and status --json agree, live and after
// the record is rebuilt from the state dir; status says the grid as the
// record does. Before the model: status --json called the precise points
// "skipped" (and "pending" after a restart), a point skipped after a run
// had no mark, the search had no result in NAME.json and "repeat": 8.
func TestOneTruth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := filepath.Join(dir, "truth.yaml")
	os.WriteFile(c, []byte(fmt.Sprintf(`name: truth
phases:
  - id: g
    gpus: none
    sweep: {m: [1, 2, 3, 4]}
    repeat: {until: 2%%, max: 4}
    order: grouped
    steps:
      - run: |
          case ${m}/$GREENLIGHT_REPEAT in
            2/*) v=$(( 100 + GREENLIGHT_REPEAT * 20 ));;
            3/2) %[1]q status --json %[2]q > live-status.json; %[1]q skip --point m=3 %[2]q g >/dev/null; sleep 30; v=0;;
            4/*) v=200;;
            *) v=100;;
          esac
          echo "{\"tflops\": $v}" >> "$GREENLIGHT_RESULTS"
  - id: s
    gpus: none
    search:
      axis: concurrency
      range: [1, 512]
      slo: {p99_tpot_ms: "<= 50"}
      resolution: 10%%
    repeat: 3
    steps:
      - run: |
          awk -v c=${concurrency} -v r=$GREENLIGHT_REPEAT 'BEGIN { srand(c * 1000 + r); p = 50 * c / 100.5; if (c > 100) p = p * 3; printf "{\"p99_tpot_ms\": %%.4f}\n", p * (1 + 0.06 * (rand() - 0.5)) }' >> "$GREENLIGHT_RESULTS"
`, binary(t), c)), 0o644)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	// status --json while it ran (from m=3's second run, before its
	// skip): valid, m=1 precise (it read "skipped" before the model), m=2
	// done, m=3 running, m=4 pending.
	liveStatus := []byte(readFile(t, filepath.Join(dir, "live-status.json")))
	validate(t, schemaFor(t, "status.schema.json"), "status --json while it ran", liveStatus)
	var running struct {
		Phases []struct {
			ID    string         `json:"id"`
			Model *results.Phase `json:"model"`
		} `json:"phases"`
	}
	json.Unmarshal(liveStatus, &running)
	for key, want := range map[string]results.PointState{"m=1": results.Precise, "m=2": results.Done, "m=3": results.Running, "m=4": results.Pending} {
		if len(running.Phases) == 0 || running.Phases[0].Model == nil || running.Phases[0].Model.Point(key) == nil || running.Phases[0].Model.Point(key).State != want {
			t.Errorf("status --json while it ran: %s is not %s:\n%s", key, want, liveStatus)
			break
		}
	}
	live := checkParity(t, dir, c, "truth")
	g, s := live["g"], live["s"]
	if g == nil || s == nil {
		t.Fatal("no model")
	}
	want := map[string]struct {
		state results.PointState
		runs  int
	}{"m=1": {results.Precise, 3}, "m=2": {results.Done, 4}, "m=3": {results.Skipped, 1}, "m=4": {results.Precise, 3}}
	for key, w := range want {
		pt := g.Point(key)
		if pt == nil || pt.State != w.state || pt.Runs != w.runs {
			t.Errorf("point %s: %+v; want %s after %d runs", key, pt, w.state, w.runs)
		}
	}
	if pt := g.Point("m=3"); pt != nil && (pt.Skip == nil || pt.Skip.AfterRuns != 1 || pt.Skip.At == nil) {
		t.Errorf("m=3's skip: %+v; want by you after 1 run, with when", pt.Skip)
	}
	if pt := g.Point("m=2"); pt == nil || !pt.Noisy || g.Noise == nil || len(g.Noise.Noisy) != 1 {
		t.Errorf("m=2 is not the one noisy point: %+v %+v", pt, g.Noise)
	}
	if s.Search == nil || !s.Search.Found || s.Search.Limit != 98 || s.Search.Above != 108 || s.Search.AboveVerdict != "fail" || !s.Search.Done {
		t.Errorf("the search's result: %+v; want 98 found, 108 failing, done", s.Search)
	}
	md := readFile(t, filepath.Join(dir, "truth.md"))
	for _, w := range []string{
		"Stopped as precise (every metric's 95% interval within 2% of its mean): m=1 after 3 runs; m=4 after 3 runs",
		"Skipped by you (✂ in the tables): m=3 after 1 of 4 runs at ",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("the record lacks %q", w)
		}
	}
	text, _ := runBin(t, dir, "status", c)
	if !strings.Contains(text, "points 4/4 done (2 stopped as precise, 1 skipped)") {
		t.Errorf("status says:\n%s", text)
	}
	if !regexp.MustCompile(`search: 1\d of at most 13 probes: found concurrency 98 \(108 fails p99_tpot_ms <= 50\)`).MatchString(text) {
		t.Errorf("status does not say the search as the record does:\n%s", text)
	}
	var recDoc map[string]any
	json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "truth.json"))), &recDoc)
	for _, p := range recDoc["phases"].([]any) {
		if ph := p.(map[string]any); ph["id"] == "s" && ph["repeat"] != nil {
			t.Errorf(`NAME.json gives the search phase "repeat": %v (its runs are its own)`, ph["repeat"])
		}
	}

	// Rebuilt from the state dir alone: the same model.
	if out, code := runBin(t, dir, "report", c); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	rebuilt := checkParity(t, dir, c, "truth")
	for id, m := range live {
		a, _ := json.Marshal(m)
		b, _ := json.Marshal(rebuilt[id])
		if string(a) != string(b) {
			t.Errorf("phase %s: report rebuilt another model:\nlive:    %s\nrebuilt: %s", id, a, b)
		}
	}
}
