package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const benchYAML = `name: NAME
BASELINE
conditions:
  commands:
    - |
      cat vllm-version
phases:
  - id: gemm
    sweep: {m: [1, 64]}
    repeat: 3
    expect: {tflops: ">= 1"}
    steps:
      - run: |
          echo "{\"tflops\": $(( ${m} * SCALE + GREENLIGHT_REPEAT ))}" >> "$GREENLIGHT_RESULTS"
  - id: decode
    better: higher
    steps:
      - run: |
          echo '{"tok_s": TOKS}' >> "$GREENLIGHT_RESULTS"
`

func bench(t *testing.T, dir, name, baseline, version, scale, toks string) string {
	os.WriteFile(filepath.Join(dir, "vllm-version"), []byte("vllm "+version+"\n"), 0o644)
	r := strings.NewReplacer("NAME", name, "BASELINE", baseline, "SCALE", scale, "TOKS", toks)
	c := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(c, []byte(r.Replace(benchYAML)), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCompareTwoCampaigns is the user's night: bench0 runs, bench1 runs
// with a changed parameter and baseline: bench0, and compare holds them:
// the conditions' difference first, the verdicts, the live change beside
// each result, the block in the results file; bad input exits 2 with
// words.
func TestCompareTwoCampaigns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c0 := bench(t, dir, "bench0", "", "0.13.0", "10", "55.0")
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "fake:2", c0); code != 0 {
		t.Fatalf("bench0: exit %d\n%s", code, out)
	}
	c1 := bench(t, dir, "bench1", "baseline: bench0.md", "0.14.1", "12", "57.2")
	out, code := runBin(t, dir, "run", "--plain", "--gpu", "fake:2", c1)
	if code != 0 {
		t.Fatalf("bench1: exit %d\n%s", code, out)
	}
	for _, want := range []string{
		"gemm: tflops 769 at m=64: +19.8% vs bench0, better, beyond noise · result m=64 repeat=1", // against bench0's 3 repeats
		"decode: tok_s 57.2: +4.0% vs bench0, better, beyond the tolerance · result tok_s=57.2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("bench1's lines lack %q:\n%s", want, out)
		}
	}
	if log := readFile(t, filepath.Join(dir, ".greenlight", "bench1", "runner.log")); !strings.Contains(log, "compared with bench0 (") {
		t.Errorf("the runner's log does not say what it compares with:\n%s", log)
	}
	md := readFile(t, filepath.Join(dir, "bench1.md"))
	for _, want := range []string{"## Compared with bench0", "| Key result | Δ vs bench0 |", "output of `cat vllm-version` vllm 0.13.0 → vllm 0.14.1",
		"| gemm | m=64 | tflops | 642.0 ± 1.0 (n=3) | 770.0 ± 1.0 (n=3) | +19.9% | better | Welch's t-test, p < 0.001, n = 3 and 3 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("bench1.md lacks %q:\n%s", want, md)
		}
	}

	out, code = runBin(t, dir, "compare", "--markdown", "cmp.md", "bench0.md", c1)
	if code != 0 || !strings.Contains(out, "bench0 (finished, started ") || !strings.Contains(out, "): 2 better, 1 within noise") || !strings.Contains(out, "vllm 0.13.0 → vllm 0.14.1") {
		t.Errorf("compare: exit %d\n%s", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "cmp.md")); err != nil || !strings.HasPrefix(string(b), "# bench1 compared with bench0") {
		t.Errorf("--markdown: %v\n%s", err, b)
	}
	if _, code := runBin(t, dir, "compare", "--fail-worse", "bench1.json", "bench0.json"); code != 1 {
		t.Errorf("--fail-worse with bench0 worse than bench1: exit %d, want 1", code)
	}
	os.WriteFile(filepath.Join(dir, "future.json"), []byte(`{"kind": "greenlight-results", "schema": 9, "rows": []}`), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.md"), []byte("# just notes\n"), 0o644)
	for _, c := range []struct{ arg, want string }{
		{"future.json", "a record of schema 9; this greenlight reads schemas 1 to 3"},
		{"notes.md", "notes.md has no record beside it"},
		{"bench0.yaml-missing", "no such file"},
	} {
		if out, code := runBin(t, dir, "compare", c.arg, "bench1.md"); code != 2 || !strings.Contains(out, c.want) {
			t.Errorf("compare %s: exit %d, want 2 saying %q:\n%s", c.arg, code, c.want, out)
		}
	}
}
