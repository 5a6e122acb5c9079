package statedir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/state"
)

func plan(t *testing.T, dir string) *campaign.Plan {
	t.Helper()
	p, err := campaign.Parse("c.yaml", filepath.Join(dir, "c.yaml"), []byte("name: sd\nphases:\n  - id: a\n    steps:\n      - run: |\n          true\n"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func journal(t *testing.T, dir string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	os.WriteFile(state.Layout(dir).Journal(), []byte("{}\n"), 0o644)
}

// TestResolve: the default beside the results file, absolute; a given
// dir made absolute; a dir the campaign was started with (Remember) found
// without the flag, and said; a given dir that differs from it said too;
// a default that holds a campaign of its own wins over a remembered one.
func TestResolve(t *testing.T) {
	dir := t.TempDir()
	p := plan(t, dir)
	def := filepath.Join(dir, ".greenlight", "sd")
	if got, note, err := Resolve(p, ""); err != nil || got != def || note != "" {
		t.Fatalf("default = %q %q %v; want %q", got, note, err, def)
	}
	t.Chdir(dir)
	if got, _, _ := Resolve(p, "rel/state"); got != filepath.Join(dir, "rel", "state") {
		t.Errorf("relative --state-dir = %q; want it absolute", got)
	}
	other := filepath.Join(dir, "other")
	journal(t, other)
	if err := Remember(p, other); err != nil {
		t.Fatal(err)
	}
	got, note, _ := Resolve(p, "")
	if got != other || !strings.Contains(note, "as the campaign was started with") {
		t.Errorf("after Remember = %q %q; want %q, said", got, note, other)
	}
	third := filepath.Join(dir, "third")
	if got, note, _ := Resolve(p, third); got != third || !strings.Contains(note, "last started with --state-dir "+other) {
		t.Errorf("--state-dir %s = %q %q; want it, and the difference said", third, got, note)
	}
	journal(t, def)
	if got, note, _ := Resolve(p, ""); got != def || note != "" {
		t.Errorf("a default with its own journal = %q %q; want the default", got, note)
	}
	if err := Remember(p, other); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(def, pointerName)); len(b) > 0 && string(b) != other+"\n" {
		t.Errorf("pointer rewritten over a default that has a journal: %q", b)
	}
}
