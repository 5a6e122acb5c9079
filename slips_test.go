package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSlipsSaidAsSlips: a search whose SLO names p99_tpot where the rows
// have p99_tpot_ms stops at its first run and says so (the record, the
// key result, status), rather than concluding that no value meets the
// SLO; a metrics: name no row has is said with the name the rows have.
func TestSlipsSaidAsSlips(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := filepath.Join(dir, "slip.yaml")
	os.WriteFile(c, []byte(`name: slip
phases:
  - id: limit
    gpus: none
    search: {axis: concurrency, range: [1, 64], slo: {p99_tpot: "<= 30"}, resolution: 50%}
    repeat: 3
    steps:
      - run: |
          echo run >> ledger
          echo "{\"p99_tpot_ms\": $(( ${concurrency} * 2 )), \"p99_ttft_ms\": 5}" >> "$GREENLIGHT_RESULTS"
  - id: gemm
    gpus: none
    metrics: [tok_s]
    steps:
      - run: |
          echo '{"tok_ss": 61.5}' >> "$GREENLIGHT_RESULTS"
`), 0o644)
	out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c)
	if code != 1 {
		t.Errorf("run: exit %d; want 1 (the search failed on its slip)\n%s", code, out)
	}
	if runs := strings.Count(readFile(t, filepath.Join(dir, "ledger")), "run"); runs != 1 {
		t.Errorf("the search ran %d times; want it stopped at its first run", runs)
	}
	md := readFile(t, filepath.Join(dir, "slip.md"))
	for _, want := range []string{
		"no run wrote p99_tpot (did you mean p99_tpot_ms?); the rows have p99_tpot_ms, p99_ttft_ms",
		"metrics: names a column its first rows do not have: no run wrote tok_s (did you mean tok_ss?)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the record lacks %q:\n%s", want, md)
		}
	}
	for _, bad := range []string{"meets the SLO", "could not be told"} {
		if strings.Contains(phaseBlock(md, "limit"), bad) {
			t.Errorf("the search's block concludes (%q) on a column no run wrote:\n%s", bad, phaseBlock(md, "limit"))
		}
	}
	st, _ := runBin(t, dir, "status", c)
	if !strings.Contains(st, "search stopped: the search's SLO names a column no run wrote") {
		t.Errorf("status does not say the slip:\n%s", st)
	}
	js, _ := runBin(t, dir, "status", "--json", c)
	var v struct {
		Phases []struct {
			ID     string `json:"id"`
			Points *struct {
				Search *struct {
					Slip string `json:"slip"`
				} `json:"search"`
			} `json:"points"`
		} `json:"phases"`
	}
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatalf("status --json: %v\n%s", err, js)
	}
	said := false
	for _, p := range v.Phases {
		if p.ID == "limit" && p.Points != nil && p.Points.Search != nil && strings.Contains(p.Points.Search.Slip, "p99_tpot") {
			said = true
		}
	}
	if !said {
		t.Errorf("status --json has no search slip:\n%s", js)
	}
}
