package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStepEnergyFromTheCounters: on the fake fleet, which keeps an
// energy counter as NVML does, a step's energy is its GPUs' counters read
// by the runner as it starts (journaled with its start) and by the
// monitor as it ends: the record says so (energy_from "counter"), and the
// Wh agree with the step's mean power over its span within the edges'
// share of a round.
func TestStepEnergyFromTheCounters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := filepath.Join(dir, "energy.yaml")
	os.WriteFile(c, []byte(`name: energy
phases:
  - id: burn
    gpus: [0]
    steps:
      - run: |
          sleep 4
          echo '{"tok_s": 100}' >> "$GREENLIGHT_RESULTS"
`), 0o644)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "fake:2:h100", "--interval", "250ms", c); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	journal, _ := os.ReadFile(filepath.Join(dir, ".greenlight", "energy", "journal.jsonl"))
	var start struct {
		T        time.Time `json:"t"`
		Counters struct {
			MJ map[string]float64 `json:"mj"`
		} `json:"counters"`
	}
	for _, l := range strings.Split(string(journal), "\n") {
		if strings.Contains(l, `"kind":"step-start"`) {
			json.Unmarshal([]byte(l), &start)
		}
	}
	if len(start.Counters.MJ) != 2 {
		t.Fatalf("the step's start journaled counters %v; want both GPUs'", start.Counters.MJ)
	}
	var rec struct {
		Rows []struct {
			GPU struct {
				PowerW     float64 `json:"power_w"`
				EnergyWh   float64 `json:"energy_wh"`
				EnergyFrom string  `json:"energy_from"`
			} `json:"gpu"`
		} `json:"rows"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "energy.json"))
	if err := json.Unmarshal(b, &rec); err != nil || len(rec.Rows) != 1 {
		t.Fatalf("record: %v, %d rows", err, len(rec.Rows))
	}
	g := rec.Rows[0].GPU
	want := g.PowerW * 4 / 3600 // about 4 s at its mean power
	if g.EnergyFrom != "counter" || math.Abs(g.EnergyWh-want)/want > 0.15 {
		t.Errorf("energy %v Wh from %q at %v W; want about %v Wh from the counter", g.EnergyWh, g.EnergyFrom, g.PowerW, want)
	}
}
