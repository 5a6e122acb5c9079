package client

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/report/mdfile"
)

// TestRunAgainWaitsForTheLastRunner: a run started the moment the last
// one ended finds the campaign's last runner still holding the results
// file on its way out; it waits for it (up to ten seconds) instead of
// refusing. Another state dir's runner is said at once.
func TestRunAgainWaitsForTheLastRunner(t *testing.T) {
	dir := t.TempDir()
	report, state := filepath.Join(dir, "r.md"), filepath.Join(dir, ".greenlight", "c")
	release, err := mdfile.LockResults(report, state)
	if err != nil {
		t.Fatal(err)
	}
	go func(release func()) { time.Sleep(300 * time.Millisecond); release() }(release)
	start := time.Now()
	if who := heldAfterEnd(report, state); who != "" {
		t.Fatalf("still held: %q", who)
	}
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Errorf("returned after %s, before the last runner let go", took)
	}
	other, _ := mdfile.LockResults(report, filepath.Join(dir, "other"))
	defer other()
	start = time.Now()
	if who := heldAfterEnd(report, state); who == "" || time.Since(start) > time.Second {
		t.Errorf("another state dir's runner: %q after %s; want it named at once", who, time.Since(start))
	}
}
