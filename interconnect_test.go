package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPeerWritesCollapsed: an nvbandwidth run whose writes from GPU 0 to
// GPU 1 go at 7 GB/s where reads go at 52: the block puts each pair's
// read and write side by side and flags the collapse; the other
// direction is not flagged.
func TestPeerWritesCollapsed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fixture, _ := filepath.Abs("runner/testdata/nvbandwidth.json")
	c := filepath.Join(dir, "bw.yaml")
	os.WriteFile(c, []byte(`name: bw
phases:
  - id: p2p
    gpus: none
    steps:
      - results: {format: nvbandwidth}
        run: |
          cat `+fixture+`
`), 0o644)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "bw.md"))
	for _, want := range []string{
		"### The interconnect: peer reads and writes",
		"| GPU 0 | — | 52.29 / 7.12 (⚠ 0.14) |",
		"| GPU 1 | 52.31 / 51.9 (0.99) | — |",
		"⚠ Posted writes collapsed on 1 pair(s): 0 → 1.",
		"device_to_device_bidirectional_memcpy_read_ce: Waived",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("the record lacks %q:\n%s", want, md)
		}
	}
}
