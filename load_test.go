package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/greenlight-run/greenlight/record"
)

// benchDetailed is a vllm bench --save-result --save-detailed file of a
// closed loop: slots requests in flight at once (the client's real
// concurrency) under max_concurrency requested, rounds of 4.08 s
// requests (TTFT 100 ms, 199 gaps of 20 ms).
func benchDetailed(requested, slots, rounds int) []byte {
	var starts, ttfts []float64
	var itls [][]float64
	var errs []string
	for j := 0; j < rounds; j++ {
		for k := 0; k < slots; k++ {
			starts = append(starts, float64(j)*4.08)
			ttfts = append(ttfts, 0.1)
			gaps := make([]float64, 199)
			for g := range gaps {
				gaps[g] = 0.02
			}
			itls, errs = append(itls, gaps), append(errs, "")
		}
	}
	n := slots * rounds
	b, _ := json.Marshal(map[string]any{"max_concurrency": requested, "completed": n, "duration": float64(rounds) * 4.08,
		"request_throughput": float64(n) / (float64(rounds) * 4.08), "mean_tpot_ms": 20.0,
		"start_times": starts, "ttfts": ttfts, "itls": itls, "errors": errs})
	return b
}

// TestLoadProvenFromTheRequests: two serving rows read from vllm bench's
// --save-detailed files: at concurrency 8 the client kept 8 requests in
// flight (no stamp); at 16 it kept 8 (a client that could not drive
// more): that row carries its achieved concurrency beside the requested
// one and is stamped "load not applied", in the record and its CSV.
func TestLoadProvenFromTheRequests(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "c8.src"), benchDetailed(8, 8, 5), 0o644)
	os.WriteFile(filepath.Join(dir, "c16.src"), benchDetailed(16, 8, 5), 0o644)
	c := writeCampaign(t, dir, `name: load
phases:
  - id: decode
    gpus: none
    sweep: {c: [8, 16]}
    artifacts: ['bench/*.json']
    steps:
      - results: {format: vllm-bench}
        run: |
          mkdir -p bench && cp c${c}.src bench/c${c}.json
`)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	rec, err := record.Read(filepath.Join(dir, "load.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Rows) != 2 {
		t.Fatalf("rows %+v", rec.Rows)
	}
	for _, r := range rec.Rows {
		achieved, _ := r.Values["achieved_concurrency"].(float64)
		requested, _ := r.Values["max_concurrency"].(float64)
		stamped := strings.Contains(strings.Join(r.Stamp, " "), "load not applied: under-driven")
		switch requested {
		case 8:
			if achieved < 7.9 || achieved > 8.1 || stamped {
				t.Errorf("c=8: achieved %v, stamp %q; want 8, none", achieved, r.Stamp)
			}
		case 16:
			if achieved < 7.9 || achieved > 8.1 || !stamped {
				t.Errorf("c=16: achieved %v, stamp %q; want 8, under-driven", achieved, r.Stamp)
			}
		default:
			t.Errorf("a row of %v requested: %+v", requested, r.Values)
		}
	}
	// The record's tables carry the concurrency achieved beside the one
	// asked for: a table of its own, by point; the point whose run was
	// stamped (under-driven) is marked so in every table.
	if md := readFile(t, filepath.Join(dir, "load.md")); !strings.Contains(md, "#### achieved_concurrency\n\n| c | achieved_concurrency |\n|---|---:|\n| 8 | 8 |\n| 16 | 8 ⚑ 1 stamped |") {
		t.Errorf("the record has no table of the achieved concurrency by point:\n%s", md[max(0, strings.Index(md, "### Results by point")):])
	}
	csv := readFile(t, filepath.Join(dir, "load.decode.csv"))
	if !strings.Contains(csv, "achieved_concurrency") || !strings.Contains(csv, "littles_law_concurrency") {
		t.Errorf("the CSV lacks the load's columns:\n%.400s", csv)
	}
}
