package report

import (
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/modelload"
)

// TestLoadTableComparesLoads: a cold load and a prewarmed one in one
// table: each row its warmth with the share and size, the prewarm's
// bytes and rate, the time to ready, and each stage's seconds and share.
func TestLoadTableComparesLoads(t *testing.T) {
	at := time.Date(2026, 12, 4, 9, 30, 0, 0, time.UTC)
	cold := runner.Load{T: at, Phase: "serve", ReadyS: 2220,
		Cache:  &modelload.Residency{Files: 64, Bytes: 595e9, Resident: 12e9},
		Server: []modelload.StageTime{{Name: "loading weights", Seconds: 2100}, {Name: "graph capture", Seconds: 25}}}
	warm := runner.Load{T: at.Add(time.Hour), Phase: "serve", ReadyS: 120,
		Cache: &modelload.Residency{Files: 64, Bytes: 595e9, Resident: 595e9},
		Prewarm: &modelload.Prewarmed{Read: 575e9, Took: 300 * time.Second,
			Before: modelload.Residency{Files: 64, Bytes: 595e9, Resident: 20e9}},
		Server: []modelload.StageTime{{Name: "loading weights", Seconds: 90}, {Name: "graph capture", Seconds: 24}},
		Marks:  []modelload.StageTime{{Name: "weights | shards", Seconds: 100}}}
	got := loadTable([]runner.Load{cold, warm})
	for _, want := range []string{
		"### Load: the model's 2 loads",
		"| Ready at | Load | Page cache at start | Prewarm | To ready | loading weights | graph capture | weights \\| shards |",
		"| Dec 4 09:30 | cold | cold: 2 % of 595.0 GB | — | 2220 s | 2100 s (95 %) | 25 s (1 %) | |",
		"| Dec 4 10:30 | warm (prewarmed) | warm: 100 % of 595.0 GB | 575.0 GB in 300 s (1.92 GB/s), the folder cold before | 120 s | 90 s (75 %) | 24 s (20 %) | 100 s (83 %) |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}

// TestLoadTableAcrossPoints: a swept service's loads, one per point, are
// one table with a Point column, so the settings' loads compare.
func TestLoadTableAcrossPoints(t *testing.T) {
	at := time.Date(2026, 12, 4, 9, 30, 0, 0, time.UTC)
	var loads []runner.Load
	for i, key := range []string{"max_num_seqs=64", "max_num_seqs=256"} {
		loads = append(loads, runner.Load{T: at.Add(time.Duration(i) * time.Hour), Phase: "serve." + key, Service: "serve", Point: key, ReadyS: 120,
			Cache: &modelload.Residency{Files: 1, Bytes: 1e9, Resident: 1e9}})
	}
	got := loadTable(loads)
	for _, want := range []string{
		"| Ready at | Point | Load | Page cache at start | Prewarm | To ready |\n|---|---|---|---|---|---:|\n",
		"| Dec 4 09:30 | max_num_seqs=64 | warm | warm: 100 % of 1.0 GB | — | 120 s |",
		"| Dec 4 10:30 | max_num_seqs=256 | warm |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}
