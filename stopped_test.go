package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/client"
	"github.com/greenlight-run/greenlight/internal/testutil"
)

// TestVerbsOnAStoppedCampaign: a campaign stopped part-way takes skip,
// skip --point and approve (they act when it runs again, said so); run
// then keeps the units done, leaves the skipped point and phase out, and
// status --json names the point skipped.
func TestVerbsOnAStoppedCampaign(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: stopverbs
phases:
  - id: g
    gpus: none
    sweep: {m: [1, 2, 3, 4, 5, 6]}
    steps:
      - run: |
          echo ${m} >> ledger
          echo "{\"t_ms\": ${m}}" >> "$GREENLIGHT_RESULTS"
          sleep 1.5
  - id: later
    gate: manual
    needs: [g]
    steps:
      - run: |
          echo later >> ledger
  - id: extra
    needs: [g]
    steps:
      - run: |
          echo extra >> ledger
`)
	cmd, out := startPlain(t, dir, c)
	testutil.Eventually(t, 30*time.Second, "two units done", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "ledger"))
		return strings.Count(string(b), "\n") >= 3
	})
	if o, code := runBin(t, dir, "stop", c); code != 0 {
		t.Fatalf("stop: exit %d\n%s", code, o)
	}
	cmd.Wait()
	_ = out
	for _, verb := range [][]string{{"skip", "--point", "m=5", c, "g"}, {"skip", c, "extra"}, {"approve", c, "later"}} {
		o, code := runBin(t, dir, verb...)
		if code != 0 || !strings.Contains(o, "runs again") && !strings.Contains(o, "continues it") {
			t.Errorf("%v on a stopped campaign: exit %d\n%s", verb, code, o)
		}
	}
	if o, _ := runBin(t, dir, "status", c); !strings.Contains(o, "stopped") {
		t.Errorf("status of the stopped campaign after the verbs does not read stopped:\n%s", o)
	}
	before := fileLinesOf(t, filepath.Join(dir, "ledger"))
	if o, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c); code != 0 || !strings.Contains(o, "units were done and are kept") {
		t.Errorf("run again: exit %d; want it to say what it kept\n%s", code, o)
	}
	got := fileLinesOf(t, filepath.Join(dir, "ledger"))
	seen := map[string]int{}
	for _, l := range got {
		seen[l]++
	}
	for _, m := range []string{"1", "2"} {
		if seen[m] != 1 {
			t.Errorf("unit m=%s ran %d times; ledger %v (before the run: %v)", m, seen[m], got, before)
		}
	}
	if seen["5"] != 0 || seen["extra"] != 0 || seen["later"] != 1 || seen["6"] != 1 {
		t.Errorf("ledger %v: want m=5 and extra never run, later and m=6 once", got)
	}
	o, _ := runBin(t, dir, "status", "--json", c)
	var st client.Status
	if err := json.Unmarshal([]byte(o), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, o)
	}
	g := st.Phases[0]
	if g.Points == nil || g.Points.Status["m=5"] != "skipped" {
		t.Errorf("status --json: point m=5 is not skipped: %+v", g.Points)
	}
	if st.Phases[2].Status != "skipped" {
		t.Errorf("extra reads %s; want skipped", st.Phases[2].Status)
	}
	md := readFile(t, filepath.Join(dir, "stopverbs.md"))
	if !strings.Contains(md, "| 5 | skipped by you |") {
		t.Errorf("the record's table does not name the point skipped:\n%s", md)
	}
}

func fileLinesOf(t *testing.T, path string) []string {
	t.Helper()
	b, _ := os.ReadFile(path)
	return strings.Fields(string(b))
}

// TestFreshKeepsTheFlags: run --fresh after run --gpu fake:3 keeps the
// GPU source (said), says where the notes went, and the set-aside record
// links its capture's traces where they now are.
func TestFreshKeepsTheFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: freshflags
phases:
  - id: a
    steps:
      - run: |
          echo '{"x": 1}' >> "$GREENLIGHT_RESULTS"
`)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "fake:3", c); code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, out)
	}
	md := filepath.Join(dir, "freshflags.md")
	os.WriteFile(md, []byte(readFile(t, md)+"\nmy notes\n"), 0o644)
	out, code := runBin(t, dir, "run", "--fresh", "--plain", c)
	if code != 0 || !strings.Contains(out, "--gpu fake:3, as the campaign was started with") || strings.Contains(out, "NVML") {
		t.Errorf("--fresh did not keep --gpu fake:3 (exit %d):\n%s", code, out)
	}
	if !strings.Contains(out, "the notes you wrote in freshflags.md went with it") {
		t.Errorf("--fresh does not say where the notes went:\n%s", out)
	}
	if got := readFile(t, md); !strings.Contains(got, "fake") && !strings.Contains(got, "3 ×") {
		t.Logf("record after --fresh:\n%s", got)
	}
}

// TestNote: greenlight note through a running campaign's runner, and on
// a finished one (journaled, the record rebuilt): both in the record's
// Notes with their times, escaped; report rebuilds them.
func TestNote(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: noted
phases:
  - id: a
    steps:
      - run: |
          while [ ! -e go ]; do sleep 0.05; done
`)
	cmd, _ := startPlain(t, dir, c)
	testutil.Eventually(t, 20*time.Second, "the runner", func() bool {
		o, _ := runBin(t, dir, "status", c)
		return strings.Contains(o, "running")
	})
	if o, code := runBin(t, dir, "note", c, "GEMM", "looked", "odd | <b>"); code != 0 || !strings.Contains(o, "note added") {
		t.Fatalf("note while running: exit %d\n%s", code, o)
	}
	os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
	cmd.Wait()
	if o, code := runBin(t, dir, "note", c, "second look: fine"); code != 0 {
		t.Fatalf("note after the end: exit %d\n%s", code, o)
	}
	md := readFile(t, filepath.Join(dir, "noted.md"))
	for _, want := range []string{"## Notes", `GEMM looked odd \| &lt;b>`, "second look: fine"} {
		if !strings.Contains(md, want) {
			t.Errorf("the record lacks %q:\n%s", want, md)
		}
	}
	os.Remove(filepath.Join(dir, "noted.md"))
	runBin(t, dir, "report", c)
	if md := readFile(t, filepath.Join(dir, "noted.md")); !strings.Contains(md, "second look: fine") || !strings.Contains(md, "GEMM looked odd") {
		t.Errorf("report dropped the notes:\n%s", md)
	}
	if _, code := runBin(t, dir, "note", c); code != 2 {
		t.Errorf("note with no text: exit %d; want 2", code)
	}
}

// TestSkipPartWayKeepsWhatItMeasured: a sweep skipped after some of its
// units keeps their rows, tables and CSV, says how many it did, and report
// rebuilds the same.
func TestSkipPartWayKeepsWhatItMeasured(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: partway
phases:
  - id: g
    gpus: none
    sweep: {m: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}
    repeat: 3
    steps:
      - run: |
          echo "{\"t_ms\": ${m}.5}" >> "$GREENLIGHT_RESULTS"
          echo x >> ledger
          sleep 0.1
`)
	cmd, _ := startPlain(t, dir, c)
	testutil.Eventually(t, 30*time.Second, "some units done", func() bool { return len(fileLinesOf(t, filepath.Join(dir, "ledger"))) >= 5 })
	if o, code := runBin(t, dir, "skip", c, "g"); code != 0 {
		t.Fatalf("skip: exit %d\n%s", code, o)
	}
	cmd.Wait()
	md := readFile(t, filepath.Join(dir, "partway.md"))
	csv := readFile(t, filepath.Join(dir, "partway.g.csv"))
	rows := strings.Count(csv, "\n") - 1
	var done int
	at := max(0, strings.Index(md, "skipped — by you after "))
	if _, err := fmt.Sscanf(md[at:], "skipped — by you after %d of 30 units", &done); err != nil || done < 4 || rows < done || !strings.Contains(md, "| 1 | 1.5") {
		t.Errorf("the record of a sweep skipped part-way (%d rows in its CSV, %d units said done):\n%s", rows, done, md)
	}
	os.Remove(filepath.Join(dir, "partway.md"))
	runBin(t, dir, "report", c)
	if again := readFile(t, filepath.Join(dir, "partway.md")); again != md {
		t.Errorf("report rebuilt another record:\n%s\nwant\n%s", again, md)
	}
}

// TestVerbsAreOneTable: a verb is taken or refused by the same rule live
// and on a stopped campaign (runner.Allowed): a failed phase let go is
// not let go again in either, and a gate already given is not given
// twice.
func TestVerbsAreOneTable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: onetable
phases:
  - id: bad
    gpus: none
    steps:
      - run: |
          exit 3
  - id: long
    gpus: none
    steps:
      - run: |
          touch started
          sleep 30
  - id: later
    gate: manual
    needs: [long]
    steps:
      - run: |
          true
`)
	cmd, _ := startPlain(t, dir, c)
	testutil.Eventually(t, 30*time.Second, "long runs", func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	})
	// long may start before bad's end is seen (they run side by side): a
	// skip said then is a running phase's, and taken.
	testutil.Eventually(t, 30*time.Second, "bad failed", func() bool {
		out, _ := runBin(t, dir, "status", "--json", c)
		var st struct {
			Phases []struct{ ID, Status string }
		}
		return json.Unmarshal([]byte(out), &st) == nil && slices.ContainsFunc(st.Phases, func(p struct{ ID, Status string }) bool {
			return p.ID == "bad" && p.Status == "failed"
		})
	})
	// Skip of a failed phase lets it go (it stays failed, nothing is
	// kept up for it), once: the same rule refuses it again, live or
	// stopped.
	if live, code := runBin(t, dir, "skip", c, "bad"); code != 0 {
		t.Errorf("skip of a failed phase, live: exit %d\n%s", code, live)
	}
	live, code := runBin(t, dir, "skip", c, "bad")
	if code != 2 || !strings.Contains(live, `phase "bad" failed and was let go already`) {
		t.Errorf("skip of a failed phase let go, live: exit %d\n%s", code, live)
	}
	if o, code := runBin(t, dir, "stop", c); code != 0 {
		t.Fatalf("stop: exit %d\n%s", code, o)
	}
	cmd.Wait()
	stopped, code := runBin(t, dir, "skip", c, "bad")
	if code != 2 || !strings.Contains(stopped, `phase "bad" failed and was let go already`) {
		t.Errorf("skip of a failed phase let go, stopped: exit %d\n%s", code, stopped)
	}
	if o, code := runBin(t, dir, "approve", c, "later"); code != 0 {
		t.Errorf("approve while stopped: exit %d\n%s", code, o)
	}
	if o, code := runBin(t, dir, "approve", c, "later"); code != 2 || !strings.Contains(o, "greenlit already") {
		t.Errorf("approve twice while stopped: exit %d\n%s", code, o)
	}
}
