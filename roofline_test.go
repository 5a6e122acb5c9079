package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRooflineOnAFakeH100: a GEMM sweep on a fake H100 (its SM clock
// read at 1,980 MHz) puts each point against the H100's roofline: a
// large GEMM compute-bound at 61% of the spec peak and 56% of the peak at
// the clock it held, a skinny one memory-bound, a point above the roof
// flagged as a broken measurement; report says the same.
func TestRooflineOnAFakeH100(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
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
	if out, code := runBin(t, dir, "report", c); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	again, _ := os.ReadFile(filepath.Join(dir, "roof.md"))
	if j := strings.Index(string(again), "### Roofline"); j < 0 || !strings.HasPrefix(string(again)[j:], block) {
		t.Errorf("report rebuilt another roofline block:\n%s\nthe runner's:\n%s", string(again)[max(j, 0):], block)
	}
}
