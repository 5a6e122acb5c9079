package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/greenlight-run/greenlight/record"
)

// TestDecodeAgainstItsFloor: a decode phase under a service that names
// its model (Llama-3-8B's config.json) and runs it tensor-parallel 2, on
// fake H100s: each point's TPOT is said against the bytes a step reads
// over 2 × the bandwidth a roofline phase measured, 3,000 GB/s, not the
// spec's 3,350 (by hand: batch 1 at 1,000 tokens reads 15,140,388,864
// bytes, 2.523 ms; batch 64 adds 64 × 1,000 tokens of KV cache,
// 23,397,924,864 bytes, 3.900 ms), the byte model term by term. The
// bandwidth is the phase floor: bandwidth: names; a GEMM roofline beside
// it (622 GB/s, what one GEMM achieved) is never the box's bandwidth.
func TestDecodeAgainstItsFloor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "llama"), 0o755)
	cfg, err := os.ReadFile("internal/decodefloor/testdata/llama-3-8b.json")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "llama", "config.json"), cfg, 0o644)
	c := filepath.Join(dir, "floor.yaml")
	os.WriteFile(c, []byte(`name: floor
phases:
  - id: serve
    gpus: [0, 1]
    service:
      run: |
        echo "serving -tp 2"; echo up; sleep 30
      ready: {log: up}
      model: llama
  - id: stream
    gpus: none
    sweep: {n: [1]}
    roofline: {flops: 1, bytes: 3e12, seconds: secs, dtype: bf16}
    steps:
      - run: |
          echo '{"secs": 1}' >> "$GREENLIGHT_RESULTS"
  - id: gemm
    gpus: none
    sweep: {n: [8192]}
    roofline: {flops: 2*n*n*n, bytes: 6*n*n, seconds: secs, dtype: bf16}
    steps:
      - run: |
          echo '{"secs": 0.000647, "n": 8192}' >> "$GREENLIGHT_RESULTS"
  - id: decode
    needs: [serve]
    gpus: none
    sweep: {c: [1, 64]}
    floor:
      batch: max_concurrency
      context: 1000
      tpot: mean_tpot_ms
      bandwidth: stream
    steps:
      - run: |
          t=$([ ${c} = 1 ] && echo 3.0 || echo 4.0)
          echo "{\"max_concurrency\": ${c}, \"mean_tpot_ms\": $t}" >> "$GREENLIGHT_RESULTS"
`), 0o644)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "fake:2:h100", c); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "floor.md"))
	i := strings.Index(string(md), "### Decode against its floor")
	if i < 0 {
		t.Fatalf("no floor block:\n%s", md)
	}
	block := string(md)[i:]
	for _, want := range []string{
		"over 2 × 3000 GB/s (h100-sxm, measured: stream's best point, n=1); model: of serve and tensor-parallel 2 of serve",
		"| c=1 | 1 | 1 | 1000 | 3 ms | 2.523 ms | 84 % |",
		"| c=64 | 1 | 64 | 1000 | 4 ms | 3.9 ms | 97 % |",
		"| KV cache | 8.389 |",
		"| total | 23.4 |",
	} {
		if !strings.Contains(block, want) {
			t.Errorf("the floor block lacks %q:\n%s", want, block)
		}
	}
	rec, err := record.Read(filepath.Join(dir, "floor.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fl *record.Floor
	for _, p := range rec.Phases {
		if p.Floor != nil {
			fl = p.Floor
		}
	}
	if fl == nil || len(fl.Points) != 2 || fl.GPUs != 2 || len(fl.Terms) != 4 {
		t.Errorf("the record's floor: %+v", fl)
	}
}

// TestFloorKeepsTheSpecBesideAGEMM: with a GEMM roofline phase in the
// campaign (622 GB/s, what one GEMM achieved) and no floor: bandwidth:,
// the floor's bandwidth is the board's spec (3,350 GB/s for an H100
// SXM): batch 1 at 1,000 tokens reads 15,140,388,864 bytes over 2 ×
// 3,350 GB/s, 2.26 ms, 75% of a 3 ms TPOT, never "under the floor". A
// bandwidth: that names no phase is refused at its line, with the phase
// it likely means.
func TestFloorKeepsTheSpecBesideAGEMM(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "llama"), 0o755)
	cfg, err := os.ReadFile("internal/decodefloor/testdata/llama-3-8b.json")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "llama", "config.json"), cfg, 0o644)
	campaign := func(bandwidth string) string {
		return `name: floor
phases:
  - id: serve
    gpus: [0, 1]
    service:
      run: |
        echo "serving -tp 2"; echo up; sleep 30
      ready: {log: up}
      model: llama
  - id: gemm
    gpus: none
    sweep: {n: [8192]}
    roofline: {flops: 2*n*n*n, bytes: 6*n*n, seconds: secs, dtype: bf16}
    steps:
      - run: |
          echo '{"secs": 0.000647, "n": 8192}' >> "$GREENLIGHT_RESULTS"
  - id: decode
    needs: [serve]
    gpus: none
    sweep: {c: [1]}
    floor:
      batch: max_concurrency
      context: 1000
      tpot: mean_tpot_ms` + bandwidth + `
    steps:
      - run: |
          echo '{"max_concurrency": 1, "mean_tpot_ms": 3.0}' >> "$GREENLIGHT_RESULTS"
`
	}
	c := filepath.Join(dir, "floor.yaml")
	os.WriteFile(c, []byte(campaign("")), 0o644)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "fake:2:h100", c); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "floor.md"))
	for _, want := range []string{
		"over 2 × 3350 GB/s (h100-sxm, the board's spec)",
		"| c=1 | 1 | 1 | 1000 | 3 ms | 2.26 ms | 75 % |",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("the record lacks %q:\n%s", want, md)
		}
	}
	slip := filepath.Join(dir, "slip.yaml")
	os.WriteFile(slip, []byte(campaign("\n      bandwidth: gemn")), 0o644)
	out, code := runBin(t, dir, "validate", slip)
	if code != 2 || !strings.Contains(out, "slip.yaml:25:18: floor: bandwidth: names no phase") || !strings.Contains(out, "did you mean gemm?") {
		t.Errorf("bandwidth: gemn: exit %d\n%s", code, out)
	}
}
