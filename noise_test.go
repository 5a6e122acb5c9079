package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoisyPointsAreOneLineAPhase: a sweep's noisy points are one line of
// the header's warnings for their phase, judged on each point's complete
// runs, with the default limit said as the default (before: a warning a
// point, judged at its second run, and the 5% nowhere said).
func TestNoisyPointsAreOneLineAPhase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := filepath.Join(dir, "n.yaml")
	os.WriteFile(c, []byte(`name: n
phases:
  - id: g
    gpus: none
    sweep: {m: [1, 2, 3, 4]}
    repeat: 3
    steps:
      - run: |
          case ${m}/$GREENLIGHT_REPEAT in 1/*|2/*) v=$(( 100 + GREENLIGHT_REPEAT * 20 ));; 3/2) v=108;; 3/3) v=104;; *) v=100;; esac
          echo "{\"tflops\": $v}" >> "$GREENLIGHT_RESULTS"
`), 0o644)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "n.md"))
	want := "- ⚠ g: 2 of 4 points noisy (their runs disagree beyond 5% (the default; noise: sets it)): m=1; m=2; its block marks each"
	if !strings.Contains(string(md), want) {
		t.Errorf("the header lacks %q:\n%s", want, string(md)[:min(len(md), 2500)])
	}
	if n := strings.Count(string(md), "is noisy"); n != 0 {
		t.Errorf("%d per-point noise warnings; want none (one line for the phase)", n)
	}
	if !strings.Contains(string(md), "⚠ where the repeats' coefficient of variation is over 5% (the default; noise: sets it)") {
		t.Error("the block does not say the default limit")
	}
}

// TestPreciseAfterNRunsIsSaid: repeat: {until:} stops a steady point
// after its first runs; the record says which points stopped as precise
// and after how many runs, as the README promises (before: nowhere).
func TestPreciseAfterNRunsIsSaid(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := filepath.Join(dir, "p.yaml")
	os.WriteFile(c, []byte(`name: p
phases:
  - id: g
    gpus: none
    sweep: {m: [1, 2]}
    repeat: {until: 2%, max: 5}
    order: grouped
    steps:
      - run: |
          echo "{\"tflops\": 100}" >> "$GREENLIGHT_RESULTS"
`), 0o644)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "p.md"))
	want := "Stopped as precise (every metric's 95% interval within 2% of its mean): m=1 after 3 runs; m=2 after 3 runs; the runs they did not need were not run."
	if !strings.Contains(string(md), want) {
		t.Errorf("the record lacks %q:\n%s", want, md)
	}
}
