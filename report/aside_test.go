package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

// TestSetAsideOneFolder: --fresh moves the state dir, the results file,
// the CSV tables and the artifacts into one dated folder; links in the
// set-aside file point into it.
func TestSetAsideOneFolder(t *testing.T) {
	dir := t.TempDir()
	c := filepath.Join(dir, "c.yaml")
	os.WriteFile(c, []byte("name: k\nphases:\n  - id: a\n    artifacts: [traces/*.json]\n    steps:\n      - run: |\n          true\n"), 0o644)
	plan, err := campaign.Load(c)
	if err != nil {
		t.Fatal(err)
	}
	write := func(rel, body string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755)
		os.WriteFile(filepath.Join(dir, rel), []byte(body), 0o644)
	}
	write("k.md", "# k\nsee [the trace](traces/r0.json) and `traces/r0.json`, [table](k.a.csv)\ncaptured: [rank 0](.greenlight/k/artifacts/a/rank0.pt.trace.json)\n")
	write("k.a.csv", "step\n")
	write("k.a.kernels.csv", "rank\n")
	write("traces/r0.json", "{}")
	write(".greenlight/k/journal.jsonl", "{}\n")
	a, err := SetAside(plan, filepath.Join(dir, ".greenlight/k"), time.Date(2026, 12, 3, 7, 1, 2, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if a.Dir != filepath.Join(dir, "k.20261203-070102") {
		t.Errorf("set aside in %s", a.Dir)
	}
	for _, f := range []string{"k.md", "k.a.csv", "k.a.kernels.csv", "artifacts/traces/r0.json", "state/journal.jsonl"} {
		if _, err := os.Stat(filepath.Join(a.Dir, f)); err != nil {
			t.Errorf("%s not set aside: %v", f, err)
		}
	}
	for _, f := range []string{"k.md", "k.a.csv", "traces/r0.json", ".greenlight/k"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s is still in place", f)
		}
	}
	md, _ := os.ReadFile(filepath.Join(a.Dir, "k.md"))
	if want := "see [the trace](artifacts/traces/r0.json) and `artifacts/traces/r0.json`, [table](k.a.csv)"; !strings.Contains(string(md), want) {
		t.Errorf("links not rewritten:\n%s\nwant %s", md, want)
	}
	// A capture's trace lies in the state dir, which moved as a whole.
	if want := "[rank 0](state/artifacts/a/rank0.pt.trace.json)"; !strings.Contains(string(md), want) {
		t.Errorf("a link into the state dir is not rewritten:\n%s", md)
	}
}
