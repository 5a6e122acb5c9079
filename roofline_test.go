package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// TestRooflineDtypesAreTheBoards: the dtypes a campaign's roofline may
// name are the ones the board table has rates for.
func TestRooflineDtypesAreTheBoards(t *testing.T) {
	if !slices.Equal(campaign.RooflineDtypes, gpu.Dtypes) {
		t.Errorf("campaign's dtypes %v, the board table's %v", campaign.RooflineDtypes, gpu.Dtypes)
	}
}

// TestRooflineOnAFakeH100: a GEMM sweep on a fake H100 (its SM clock
// read at 1,980 MHz) puts each point against the H100's roofline: a
// large GEMM compute-bound at 61% of the spec peak and 56% of the peak at
// the clock it held, a skinny one memory-bound, a point above the roof
// flagged as a broken measurement; report says the same.
func TestRooflineOnAFakeH100(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if k := os.Getenv("KEEP"); k != "" {
		dir = k
	}
	c := filepath.Join(dir, "roof.yaml")
	os.WriteFile(c, []byte(`name: roof
phases:
  - id: gemm
    sweep: {m: [16, 64, 4096]}
    roofline:
      flops: 2*m*n*k
      bytes: 2*(m*k + k*n + m*n)
      seconds: 2*m*n*k / (tflops * 1e12)
      dtype: bf16
    steps:
      - run: |
          sleep 1.2
          case ${m} in 16) tf=30;; 64) tf=2000;; *) tf=600;; esac
          echo "{\"n\": 4096, \"k\": 4096, \"tflops\": $tf}" >> "$GREENLIGHT_RESULTS"
`), 0o644)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "fake:1:h100", c); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "roof.md"))
	block := string(md)
	i := strings.Index(block, "### Roofline")
	if i < 0 {
		t.Fatalf("no roofline block:\n%s", md)
	}
	block = block[i:]
	if j := strings.Index(block[4:], "\n## "); j > 0 {
		block = block[:j+4]
	}
	for _, want := range []string{
		"h100-sxm, bf16: 989.4 TFLOP/s at 1830 MHz",
		"| m=4096 | 1 | 600 |",
		"| compute | 61 % | 1980 MHz | 56 % |",
		"| m=16 | 1 | 30 |",
		"| memory | 56 % |",
		"| m=64 | 1 | 2000.0 | 32226.6 | 62.06 | memory | ⚠ 962 % |",
		"⚠ Above 100% of a roof at m=64",
	} {
		if !strings.Contains(block, want) {
			t.Errorf("the roofline block lacks %q:\n%s", want, block)
		}
	}
	// The chart, log-log, beside the file and embedded.
	svg, err := os.ReadFile(filepath.Join(dir, "roof.gemm.roofline.svg"))
	if err != nil || !strings.Contains(string(svg), "roof at the clock held") || !strings.Contains(block, "![gemm against its roofline](roof.gemm.roofline.svg)") {
		t.Errorf("the roofline chart: %v; embedded: %v", err, strings.Contains(block, "roofline.svg"))
	}
	// The header's key result says how close its point came.
	if !strings.Contains(string(md), "tflops 2000 at m=64 · ⚠ 962 % of the spec roof, 962 % at 1980 MHz: above the roof, a broken measurement") {
		t.Errorf("the key result does not carry the roofline:\n%s", string(md)[:min(len(md), 1500)])
	}
	rec, err := record.Read(filepath.Join(dir, "roof.json"))
	if err != nil {
		t.Fatal(err)
	}
	rl := rec.Phases[0].Roofline
	if rl == nil || rl.Board != "h100-sxm" || len(rl.Points) != 3 || rl.Points[2].Bound != "compute" || math.Round(rl.Points[2].SpecPct) != 61 || rl.Points[2].ClockMHz != 1980 {
		t.Errorf("the record's roofline: %+v", rl)
	}
	// compare carries the share: the same campaign again, the big GEMM
	// slower.
	os.Rename(filepath.Join(dir, "roof.json"), filepath.Join(dir, "roof0.json"))
	if out, code := runBin(t, dir, "report", c); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	if out, code := runBin(t, dir, "compare", "roof0.json", "roof.json"); code != 0 || !strings.Contains(out, "gemm m=4096: 600 → 600 TFLOP/s, 61% → 61% of the spec roof, 56% → 56% at the clock held") {
		t.Errorf("compare: exit %d\n%s", code, out)
	}
	if out, code := runBin(t, dir, "report", c); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	again, _ := os.ReadFile(filepath.Join(dir, "roof.md"))
	if j := strings.Index(string(again), "### Roofline"); j < 0 || !strings.HasPrefix(string(again)[j:], block) {
		t.Errorf("report rebuilt another roofline block:\n%s\nthe runner's:\n%s", string(again)[max(j, 0):], block)
	}
}
