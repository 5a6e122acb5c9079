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

// TestRooflineOverAStructuredAxis: GEMM shapes written as the README
// writes them, a structured axis (shape: [{name: cube, m: 6144, ...}]),
// with steps that print only their time: the roofline reads the shape's
// fields bare (2*m*n*k) and dotted (2*shape.m*shape.n*shape.k) from the
// point, and both tables hold both points; validate refuses a field the
// axis lacks, at its line.
func TestRooflineOverAStructuredAxis(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	phase := func(id, flops string) string {
		return `  - id: ` + id + `
    sweep:
      shape:
        - {name: cube, m: 6144, n: 6144, k: 6144}
        - {name: skinny, m: 16, n: 8192, k: 8192}
    roofline:
      flops: ` + flops + `
      bytes: 2*(shape.m*shape.k + shape.k*shape.n + shape.m*shape.n)
      seconds: time_ms / 1000
      dtype: bf16
    steps:
      - run: |
          case ${shape} in cube) t=0.6;; *) t=0.3;; esac
          echo "{\"time_ms\": $t}" >> "$GREENLIGHT_RESULTS"
`
	}
	c := filepath.Join(dir, "shapes.yaml")
	os.WriteFile(c, []byte("name: shapes\nphases:\n"+phase("bare", "2*m*n*k")+phase("dotted", "2*shape.m*shape.n*shape.k")), 0o644)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "fake:1:h100", c); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	md := readFile(t, filepath.Join(dir, "shapes.md"))
	for _, id := range []string{"bare", "dotted"} {
		i := strings.Index(md, "phase:"+id)
		block := md[i:]
		if j := strings.Index(block, "greenlight:end"); j > 0 {
			block = block[:j]
		}
		// cube: 2 × 6144³ FLOPs in 0.6 ms is 773 TFLOP/s.
		for _, want := range []string{"| shape=cube | 1 | 773.1 |", "| shape=skinny | 1 |"} {
			if !strings.Contains(block, want) {
				t.Errorf("%s: the roofline lacks %q:\n%s", id, want, block)
			}
		}
		if strings.Contains(block, "which neither the row") {
			t.Errorf("%s: an expression could not read the axis:\n%s", id, block)
		}
	}
	slip := filepath.Join(dir, "slip.yaml")
	os.WriteFile(slip, []byte("name: slip\nphases:\n"+phase("bad", "2*shape.m*shape.n*shape.q")), 0o644)
	if out, code := runBin(t, dir, "validate", slip); code != 2 || !strings.Contains(out, "slip.yaml:9:14: flops: 2*shape.m*shape.n*shape.q reads shape.q, a field the axis shape does not have") {
		t.Errorf("shape.q: exit %d\n%s", code, out)
	}
}

// TestUndrawnBlockInTheHeader: a roofline whose expressions read a name
// neither the rows nor the axes have (validate cannot know: the step's
// JSON could have brought it) is drawn nowhere, and the header's warnings
// say so with the reason, not only a bullet inside its block.
func TestUndrawnBlockInTheHeader(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := filepath.Join(dir, "undrawn.yaml")
	os.WriteFile(c, []byte(`name: undrawn
phases:
  - id: gemm
    sweep: {size: [4096]}
    roofline: {flops: 2*m*n*k, bytes: 2*(m*k + k*n + m*n), seconds: time_ms / 1000, dtype: bf16}
    steps:
      - run: |
          echo '{"time_ms": 0.2}' >> "$GREENLIGHT_RESULTS"
`), 0o644)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "fake:1:h100", c); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	md := readFile(t, filepath.Join(dir, "undrawn.md"))
	head := md[:strings.Index(md, "greenlight:end header")]
	if !strings.Contains(head, "gemm: its roofline could not be drawn: size=4096:") || !strings.Contains(head, "reads m, which neither the row nor its point's axes have") {
		t.Errorf("the header does not say the roofline was not drawn:\n%s", head)
	}
}
