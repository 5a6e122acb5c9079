package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/record"
)

// TestHistoryCommand: greenlight history over a folder of records, as CI
// runs it: a jump at the newest campaign fails --fail-on-change (exit 1),
// the same history without it does not; --json is the history; a folder
// with no record and a bad flag are refused (exit 2), and the export
// writes Otava's CSV to --out.
func TestHistoryCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(sub string, values []float64) {
		start := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
		for i, v := range values {
			rec := record.Record{Kind: record.KindName, Schema: record.Schema,
				Campaign: record.Campaign{Name: "n", File: "n.yaml", Report: "n.md", State: "finished", Started: start.Add(time.Duration(i) * 24 * time.Hour)},
				Phases:   []record.Phase{{ID: "gemm", Status: "done"}},
				Rows:     []record.Row{{Phase: "gemm", Step: 1, Values: map[string]any{"tflops": v}}}}
			b, _ := json.Marshal(rec)
			p := filepath.Join(dir, sub, fmt.Sprintf("%02d", i))
			os.MkdirAll(p, 0o755)
			os.WriteFile(filepath.Join(p, "n.json"), b, 0o644)
		}
	}
	write("jump", []float64{700, 702, 699, 701, 700, 698, 701, 640})
	write("flat", []float64{700, 702, 699, 701, 700, 698, 701, 700})
	out, code := runBin(t, dir, "history", "--fail-on-change", filepath.Join(dir, "jump"))
	if code != 1 || !strings.Contains(out, "gemm tflops: -8.") || !strings.Contains(out, "worse") {
		t.Errorf("a jump at the newest campaign: exit %d, want 1:\n%s", code, out)
	}
	if out, code := runBin(t, dir, "history", "--fail-on-change", filepath.Join(dir, "flat")); code != 0 || !strings.Contains(out, "no change in any series") {
		t.Errorf("no change: exit %d, want 0:\n%s", code, out)
	}
	out, code = runBin(t, dir, "history", "--json", filepath.Join(dir, "jump"))
	var h struct {
		Campaigns []any `json:"campaigns"`
		Changes   []struct {
			Campaign int     `json:"campaign"`
			Pct      float64 `json:"change_pct"`
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out), &h); code != 0 || err != nil || len(h.Campaigns) != 8 || len(h.Changes) != 1 || h.Changes[0].Campaign != 7 {
		t.Errorf("--json: exit %d, %v: %+v\n%s", code, err, h, out)
	}
	if out, code := runBin(t, dir, "history", t.TempDir()); code != 2 || !strings.Contains(out, "no greenlight record") {
		t.Errorf("a folder with no record: exit %d, want 2:\n%s", code, out)
	}
	if out, code := runBin(t, dir, "history", "--pvalue", "2", dir); code != 2 || !strings.Contains(out, "--pvalue 2") {
		t.Errorf("a bad --pvalue: exit %d, want 2:\n%s", code, out)
	}
	csvPath := filepath.Join(dir, "otava.csv")
	if out, code := runBin(t, dir, "history", "--export", "otava-csv", "--out", csvPath, filepath.Join(dir, "flat")); code != 0 {
		t.Errorf("export: exit %d:\n%s", code, out)
	}
	if b, _ := os.ReadFile(csvPath); !strings.HasPrefix(string(b), "time,commit,gemm tflops\n") || strings.Count(string(b), "\n") != 9 {
		t.Errorf("otava-csv:\n%s", b)
	}
}
