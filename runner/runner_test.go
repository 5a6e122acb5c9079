package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

func TestOrderResultsAndRetry(t *testing.T) {
	t.Parallel()
	p := loadCampaign(t, `
name: order
phases:
  - id: second
    needs: [first]
    steps:
      - run: |
          echo "tok/s: 57.5"
          echo '{"shape":"1x7168","ms":0.25}' >> "$GREENLIGHT_RESULTS"
        results: {regex: 'tok/s: (?P<tok_s>[\d.]+)'}
        expect: {tok_s: ">= 55"}
  - id: first
    retries: 1
    steps:
      - run: test -f marker || { touch marker; echo flaky; exit 3; }
`)
	h := start(t, p, testOptions(t))
	st := h.finished(20 * time.Second)
	first, second := st.Phase("first"), st.Phase("second")
	if first.Status != Done || second.Status != Done {
		t.Fatalf("statuses: first %s (%s), second %s (%s)", first.Status, first.Reason, second.Status, second.Reason)
	}
	if !first.Ended.Before(second.Started) && !first.Ended.Equal(second.Started) {
		t.Errorf("second started %v before first ended %v", second.Started, first.Ended)
	}
	if first.Retried != 1 {
		t.Errorf("first.Retried = %d; want 1", first.Retried)
	}
	rows := second.Steps[0].Results
	if len(rows) != 2 {
		t.Fatalf("second has %d result rows; want 2: %+v", len(rows), rows)
	}
	var sawRegex, sawJSON bool
	for _, r := range rows {
		switch r.Cols[0] {
		case "tok_s":
			sawRegex = r.Values[0] == 57.5 && len(r.Checks) == 1 && r.Checks[0].Pass
		case "shape":
			sawJSON = r.Values[0] == "1x7168" && r.Values[1] == 0.25 && r.Cols[1] == "ms"
		}
	}
	if !sawRegex || !sawJSON {
		t.Errorf("rows = %+v; want a regex row tok_s=57.5 passing its check and a JSON row shape,ms", rows)
	}
}

func TestFailureBlocksDependents(t *testing.T) {
	t.Parallel()
	p := loadCampaign(t, `
name: fail
phases:
  - id: a
    steps: [{run: "exit 7"}]
  - id: b
    needs: [a]
    steps: [{run: "true"}]
`)
	st := start(t, p, testOptions(t)).finished(20 * time.Second)
	if a := st.Phase("a"); a.Status != Failed || !strings.Contains(a.Reason, "code 7") {
		t.Errorf("a = %s %q; want failed with code 7", a.Status, a.Reason)
	}
	if b := st.Phase("b"); b.Status != Blocked {
		t.Errorf("b = %s; want blocked", b.Status)
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	p := loadCampaign(t, `
name: timeout
phases:
  - id: slow
    steps: [{run: "sleep 30", timeout: 300ms}]
`)
	st := start(t, p, testOptions(t)).finished(20 * time.Second)
	if s := st.Phase("slow"); s.Status != Failed || !strings.Contains(s.Reason, "timed out") {
		t.Errorf("slow = %s %q; want failed, timed out", s.Status, s.Reason)
	}
}

func TestLoadRejectsNothingWrittenOnDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.yaml")
	os.WriteFile(path, []byte("name: x\nphases:\n  - id: a\n    stepz: []\n"), 0o644)
	if _, err := campaign.Load(path); err == nil {
		t.Fatal("Load accepted an unknown key")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("Load left files behind: %v", ents)
	}
}

// The poll falls on whole multiples of Poll by the clock, with the GPU
// sampler's rounds and the screen's clock.
func TestPollFallsOnTheInterval(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	if got := untilNext(at.Add(250*time.Millisecond), time.Second); got != 750*time.Millisecond {
		t.Errorf("next poll in %s; want 750ms", got)
	}
	if got := untilNext(at.Add(40*time.Millisecond), 20*time.Millisecond); got != 20*time.Millisecond {
		t.Errorf("next poll in %s; want 20ms", got)
	}
}
