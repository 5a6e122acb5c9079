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

// TestAllReduceBySize: a step reading all_reduce_perf's table gives the
// block of small messages' time and the largest's bus bandwidth, and the
// chart of bus bandwidth by size beside the file, embedded.
func TestAllReduceBySize(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fixture, _ := filepath.Abs("runner/testdata/all_reduce_perf.txt")
	c := filepath.Join(dir, "ar.yaml")
	os.WriteFile(c, []byte(`name: ar
phases:
  - id: allreduce
    gpus: none
    steps:
      - name: 2 GPUs
        results: {format: nccl-tests}
        run: |
          cat `+fixture+`
`), 0o644)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "ar.md"))
	for _, want := range []string{
		"### The collective by message size",
		"| 2 GPUs | — | — | — | 13.41 µs | 128 MiB | 127.5 GB/s | 33.4 GB/s |",
		"![allreduce: bus bandwidth by message size](ar.allreduce.busbw.svg)",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("the record lacks %q:\n%s", want, md)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ar.allreduce.busbw.svg")); err != nil {
		t.Errorf("no bus bandwidth chart: %v", err)
	}
}
