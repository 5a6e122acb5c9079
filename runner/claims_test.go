package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

// TestWarningSaidWhileResumingIsJournaledOnce: two phases whose globs
// match one folder write a file there while both run, and end while no
// runner runs (it was killed -9): the next runner's resume claims what
// they wrote and says the file is neither's. That warning is journaled
// once (before, as it was said and again at the loop's start: report,
// reading the journal, then listed what the runner had once twice, or in
// another order).
func TestWarningSaidWhileResumingIsJournaledOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	p := writeCampaign(t, filepath.Join(dir, "c.yaml"), fmt.Sprintf(`
name: once
phases:
  - id: a
    gpus: none
    artifacts: ['%[1]s/out/*.txt']
    steps:
      - run: |
          while [ ! -e %[2]s ]; do sleep 0.05; done; sleep 0.2
  - id: b
    gpus: none
    artifacts: ['%[1]s/out/*.txt']
    steps:
      - run: |
          while [ ! -e %[2]s ]; do sleep 0.05; done; mkdir -p %[1]s/out; echo x > %[1]s/out/shared.txt; sleep 0.3
`, dir, gate))
	state := filepath.Join(dir, "state")
	killRunnerWhen(t, p.File, state, "both steps running", func() bool {
		return strings.Count(readJournalText(t, state), `"kind":"step-pid"`) == 2
	})
	os.WriteFile(gate, nil, 0o644)
	testutil.Eventually(t, 10*time.Second, "both steps ended with no runner", func() bool {
		st, _ := filepath.Glob(filepath.Join(state, "steps", "*", "*", "status.json"))
		n := 0
		for _, f := range st {
			if s, err := supervise.ReadStatus(f); err == nil && s.CommandEnded() {
				n++
			}
		}
		return n == 2
	})
	h := startAgain(t, p, state)
	end := h.finished(20 * time.Second)
	said := func(ws []string) int {
		n := 0
		for _, w := range ws {
			if strings.Contains(w, "shared.txt was written while") {
				n++
			}
		}
		return n
	}
	if n := said(end.Warnings); n != 1 {
		t.Fatalf("the runner's warnings say the shared file %d times; want once: %q", n, end.Warnings)
	}
	if n := strings.Count(readJournalText(t, state), "shared.txt was written while"); n != 1 {
		t.Errorf("the journal holds the warning %d times; want once", n)
	}
	st, err := Replay(p, state)
	if err != nil {
		t.Fatal(err)
	}
	if n := said(st.Warnings); n != 1 {
		t.Errorf("report's replay says the shared file %d times; want once, as the runner: %q", n, st.Warnings)
	}
}

func readJournalText(t *testing.T, stateDir string) string {
	b, _ := os.ReadFile(Layout(stateDir).Journal())
	return string(b)
}
