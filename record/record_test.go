package record

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

const good = `{
 "kind": "greenlight-results",
 "schema": 1,
 "campaign": {"name": "b0", "file": "/c.yaml", "report": "/b0.md", "state": "finished", "written": "2026-12-03T10:00:00Z"},
 "phases": [{"id": "decode", "status": "done", "better": {"tok_s": "higher"}}],
 "rows": [
{"phase": "decode", "step": 1, "time": "2026-12-03T10:00:00Z", "values": {"tok_s": 57.25, "model": "k2", "ok": true, "none": null}}
 ]
}
`

func write(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadKeepsValues(t *testing.T) {
	r, err := Read(write(t, good))
	if err != nil {
		t.Fatal(err)
	}
	v := r.Rows[0].Values
	if v["tok_s"] != 57.25 || v["model"] != "k2" || v["ok"] != true || v["none"] != nil {
		t.Errorf("values read as %#v", v)
	}
}

// TestReadRefuses: a record of another version, a file that is not a
// record, a field this greenlight does not know, trailing data: each an
// error that says which.
func TestReadRefuses(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"another schema", strings.Replace(good, `"schema": 1`, `"schema": 4`, 1), "a record of schema 4; this greenlight reads schemas 1 to 3"},
		{"not a record", `{"name": "golden", "phases": []}`, "not a greenlight record"},
		{"not JSON", "# results\n\n| a | b |\n", "not a greenlight record"},
		{"unknown field", strings.Replace(good, `"step": 1,`, `"step": 1, "gpu_hours": 3,`, 1), `unknown field "gpu_hours"`},
		{"unknown top field", strings.Replace(good, `"schema": 1,`, `"schema": 1, "extra": {},`, 1), `unknown field "extra"`},
		{"trailing", good + "{}", "more after the record's end"},
		{"cut short", good[:len(good)*2/3], "a greenlight record cut short: it ends at byte"},
		{"cut before its kind", `{"ki`, "cut short, before its kind was said: it ends at byte 4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(write(t, c.text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one saying %q", err, c.want)
			}
		})
	}
}

// TestAppendRowIsJSON: the hand-written encoder reads back as
// encoding/json's does, odd strings and numbers included.
func TestAppendRowIsJSON(t *testing.T) {
	rows := []Row{
		{Phase: "gemm", Step: 3, Point: "m=64,shape=down", Repeat: 2, Time: time.Date(2026, 12, 3, 9, 0, 0, 123456789, time.UTC),
			Values: map[string]any{"tflops": 612.4, "tiny": 1e-9, "huge": 1e22, "zero": 0.0, "neg": -3.5, "note": "a \"q\" \\ \n\t\x01 é \xff \u2028", "ok": true, "none": nil},
			Stamp:  []string{"GPU 0 throttled (HW thermal)"}, Checks: []Check{{Metric: "tflops", Expect: ">= 500", Value: 612.4, Pass: true}},
			GPU: &GPUFacts{Readings: 12, PowerW: 1372.25, PowerGPUs: 2, EnergyWh: 0.38, SMClockMHz: 1755.5}},
		{Phase: "p", Step: 2, Time: time.Unix(5, 0).UTC(), Values: map[string]any{"x": 1.0},
			GPU: &GPUFacts{Readings: 3, PowerW: 700, PowerGPUs: 1, ReadFrom: time.Date(2026, 12, 5, 20, 10, 8, 743588338, time.UTC)}},
		{Phase: "p", Step: 1, Time: time.Unix(0, 0).UTC(), Values: map[string]any{}},
	}
	for _, r := range rows {
		var fast, slow map[string]any
		if err := json.Unmarshal(AppendRow(nil, r), &fast); err != nil {
			t.Fatalf("%s: %v", AppendRow(nil, r), err)
		}
		want, _ := json.Marshal(r)
		json.Unmarshal(want, &slow)
		if !reflect.DeepEqual(fast, slow) {
			t.Errorf("hand-written:\n%s\nencoding/json:\n%s", AppendRow(nil, r), want)
		}
	}
}

// TestWay: a metric's own direction first, then the phase's better:, and
// only where asked a time by its name; tok_s is no time.
func TestWay(t *testing.T) {
	dirs := map[string]campaign.Direction{"tok_s": "higher"}
	for _, tt := range []struct {
		dirs   map[string]campaign.Direction
		metric string
		guess  bool
		dir    campaign.Direction
		basis  string
	}{
		{dirs, "tok_s", true, "higher", ""},
		{map[string]campaign.Direction{"*": "higher"}, "mean_tpot_ms", true, "higher", ""},
		{nil, "mean_tpot_ms", true, "lower", "by its name"},
		{nil, "time_us", true, "lower", "by its name"},
		{nil, "ttft", true, "lower", "by its name"},
		{nil, "benchmark_duration_s", true, "lower", "by its name"},
		{nil, "time_us", false, "", ""},
		{nil, "output_token_throughput_tok_s", true, "higher", "by its name"},
		{nil, "tflops", true, "higher", "by its name"},
		{nil, "gbps", true, "higher", "by its name"},
		{nil, "time_s", true, "lower", "by its name"},
		{nil, "tflops", false, "", ""},
		{nil, "timeline_gaps", true, "", ""},
	} {
		if d, b := campaign.Way(tt.dirs, tt.metric, tt.guess); d != tt.dir || b != tt.basis {
			t.Errorf("Way(%v, %s, %v) = %q %q; want %q %q", tt.dirs, tt.metric, tt.guess, d, b, tt.dir, tt.basis)
		}
	}
}

// TestStreamHandsEachRow: Stream hands every row to its callback, numbers
// as float64, and keeps none of them; Read is Stream keeping them.
func TestStreamHandsEachRow(t *testing.T) {
	path := write(t, good)
	n := 0
	r, err := Stream(path, func(row Row) error {
		n++
		if _, ok := row.Values["tok_s"].(float64); !ok {
			t.Errorf("tok_s read as %T", row.Values["tok_s"])
		}
		return nil
	})
	full, _ := Read(path)
	if err != nil || n != len(full.Rows) || n == 0 || r.Rows != nil || r.Campaign.Name != full.Campaign.Name {
		t.Errorf("Stream: %v, %d rows handed (Read has %d), rows kept %d", err, n, len(full.Rows), len(r.Rows))
	}
}
