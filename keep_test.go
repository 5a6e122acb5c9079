package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/client"
	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/results"
)

// The README's pattern for one client on a server at a time, written
// with after: (an order, not a need): the decode grid, then the search,
// then the profile, each on the server. A decode point fails (a stand-in's
// connection reset at concurrency 64) until the file fixed exists.
const keptServerCampaign = `name: kept
notify: |
  echo "$GREENLIGHT_EVENT $GREENLIGHT_PHASE" >> told
phases:
  - id: serve
    service:
      run: |
        echo start >> starts
        echo "Application startup complete"
        while :; do sleep 0.1; done
      ready: {log: 'Application startup complete'}
  - id: decode
    needs: [serve]
    sweep: {concurrency: [1, 64]}
    repeat: 2
    on_failure: continue
    steps:
      - run: |
          if [ ${concurrency} = 64 ] && [ ! -e fixed ]; then echo "connection reset by peer"; exit 1; fi
          echo "{\"tpot_ms\": ${concurrency}}" >> "$GREENLIGHT_RESULTS"
          echo "decode ${concurrency}" >> ran
  - id: limit
    needs: [serve]
    after: [decode]
    steps:
      - run: |
          echo limit >> ran
  - id: profile
    needs: [serve]
    after: [limit]
    steps:
      - run: |
          echo profile >> ran
`

// TestAFailedPointCostsNoModelLoad, end to end with the binary: the
// failed point is recorded and the grid goes on; the search and the
// profile run; the server stays up for decode, said by status --json and
// the record; retry --point runs the point alone on that server; one
// notice for the one failure; the server started once.
func TestAFailedPointCostsNoModelLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeCampaign(t, dir, keptServerCampaign)
	t.Cleanup(func() { stopRunner(t, filepath.Join(dir, ".greenlight", "kept")) })
	cmd, out := startPlain(t, dir, "c.yaml")
	var st map[string]string
	var decode *results.Phase
	if !testutil.Within(30*time.Second, func() bool {
		raw, code := runBin(t, dir, "status", "--json", "c.yaml")
		var s client.Status
		if code != 0 || json.Unmarshal([]byte(raw), &s) != nil {
			return false // not started yet
		}
		st = map[string]string{}
		for _, p := range s.Phases {
			st[p.ID] = p.Status
			if p.ID == "serve" && p.Kept != "" {
				st["kept"] = p.Kept
			}
			if p.ID == "decode" {
				decode = p.Model
			}
		}
		return st["kept"] != ""
	}) {
		t.Fatalf("the server was never said kept: %v\n%s", st, out)
	}
	if st["decode"] != "failed" || st["limit"] != "done" || st["profile"] != "done" || st["serve"] != "ready" {
		t.Errorf("phases %v; want decode failed, limit and profile done, serve up", st)
	}
	if !strings.Contains(st["kept"], "r on decode") {
		t.Errorf("kept %q: the keys are not said", st["kept"])
	}
	if decode == nil || len(decode.Points) != 2 || decode.Points[0].State != results.Done || decode.Points[1].State != results.Failed {
		t.Errorf("decode's points in status --json: %+v; want concurrency=1 done, concurrency=64 failed", decode)
	}
	report := filepath.Join(dir, "kept.md")
	if !testutil.Within(10*time.Second, func() bool {
		b, _ := os.ReadFile(report)
		return strings.Contains(string(b), "kept for decode")
	}) {
		t.Error("the record never says the server is kept for decode")
	}
	os.WriteFile(filepath.Join(dir, "fixed"), nil, 0o644)
	if said, code := runBin(t, dir, "retry", "c.yaml", "decode", "--point", "concurrency=64"); code != 0 || !strings.Contains(said, "point concurrency=64 queued to run again") {
		t.Fatalf("retry --point: exit %d\n%s", code, said)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if code := exitOf(err); code != 0 {
			t.Errorf("the campaign exited %d after the point ran again\n%s", code, out)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the campaign did not end after the retry\n%s", out)
	}
	if got := readLines(t, filepath.Join(dir, "starts")); len(got) != 1 {
		t.Errorf("the server started %d times; want once", len(got))
	}
	if got := strings.Join(readLines(t, filepath.Join(dir, "ran")), ","); got != "decode 1,decode 1,limit,profile,decode 64,decode 64" {
		t.Errorf("ran %s", got)
	}
	var failed int
	for _, l := range readLines(t, filepath.Join(dir, "told")) {
		if strings.HasPrefix(l, "failed ") {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("%d failure notices; want one", failed)
	}
	s, _ := liveStatus(t, dir, "c.yaml")
	for _, p := range s.Phases {
		if p.Status != "done" {
			t.Errorf("from the journal %s is %s (%s)", p.ID, p.Status, p.Reason)
		}
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}
