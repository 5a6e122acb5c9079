package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/greenlight-run/greenlight/client"
)

// The results file never states a falsehood: each test runs the real
// binary on a campaign that used to make it lie.

func writeCampaign(t *testing.T, dir, yaml string) string {
	t.Helper()
	c := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(c, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExpectedResultNeverProducedFails: a benchmark that dies before
// printing its number (or a typo in the result's name) is not a pass.
func TestExpectedResultNeverProducedFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: missing
fail_on_expect: true
phases:
  - id: bench
    expect: {tok_s: ">= 55"}
    steps:
      - run: |
          echo '{"tok_per_s": 61}' >> "$GREENLIGHT_RESULTS"
`)
	out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c)
	if code != 1 || strings.Contains(out, "every phase done") {
		t.Errorf("exit %d; want 1, not a pass:\n%s", code, out)
	}
	md := readFile(t, filepath.Join(dir, "missing.md"))
	for _, want := range []string{"tok_s not produced", "❌ failed", "✗ `tok_s` >= 55: not produced"} {
		if !strings.Contains(md, want) {
			t.Errorf("results file lacks %q:\n%s", want, md)
		}
	}
	// Without fail_on_expect the phase is done, but the miss is said.
	c = writeCampaign(t, dir, strings.Replace(readFile(t, c), "fail_on_expect: true", "fail_on_expect: false", 1))
	os.RemoveAll(filepath.Join(dir, ".greenlight"))
	out, code = runBin(t, dir, "run", "--plain", "--gpu", "none", c)
	md = readFile(t, filepath.Join(dir, "missing.md"))
	if code != 0 || !strings.Contains(md, "tok_s not produced") {
		t.Errorf("without fail_on_expect: exit %d, and the file must still say tok_s was not produced:\n%s\n%s", code, out, md)
	}
}

var startedRe = regexp.MustCompile(`\*\*Started:\*\* ([0-9-]+ [0-9:]+ \w+)`)
var elapsedRe = regexp.MustCompile(`\*\*Elapsed:\*\* (\S+)`)

// TestTimesComeFromTheJournal: re-running a finished campaign, and
// rebuilding its file, keep its start, end and elapsed time, its status
// and its GPU inventory; a phase ends when its step ended.
func TestTimesComeFromTheJournal(t *testing.T) {
	t.Parallel() // its own folder, its own runner: it overlaps the others' waits
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: times
phases:
  - id: a
    title: first title
    steps:
      - run: |
          sleep 2; echo '{"x": 1}' >> "$GREENLIGHT_RESULTS"
`)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "fake:2", c); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	report := filepath.Join(dir, "times.md")
	first := readFile(t, report)
	started := startedRe.FindStringSubmatch(first)
	elapsed := elapsedRe.FindStringSubmatch(first)
	if started == nil || elapsed == nil || !strings.Contains(first, "Status:** finished") {
		t.Fatalf("no start, elapsed or finished status in:\n%s", first)
	}
	if elapsed[1] == "0s" || elapsed[1] == "1s" {
		t.Errorf("elapsed %s for a campaign with a 2 s step", elapsed[1])
	}
	time.Sleep(1100 * time.Millisecond)
	// Run again with the title, an estimate, a timeout and an
	// expectation changed: none changes the work, so nothing re-runs and
	// nothing moves.
	writeCampaign(t, dir, strings.Replace(readFile(t, c), "title: first title",
		"title: a better title\n    estimate: 5m\n    timeout: 1h\n    expect: {x: '>= 1'}", 1))
	out, code := runBin(t, dir, "run", "--plain", "--gpu", "fake:2", c)
	if code != 0 || strings.Contains(out, "runs again") || strings.Contains(out, "step 1/1") {
		t.Errorf("rerun after a title edit: exit %d, and nothing may run again:\n%s", code, out)
	}
	second := readFile(t, report)
	if !strings.Contains(second, "✓ `x` >= 1: 1 of 1 result(s) met") {
		t.Errorf("the new expectation is not checked against the kept result:\n%s", second)
	}
	if s := startedRe.FindStringSubmatch(second); s == nil || s[1] != started[1] {
		t.Errorf("start moved on rerun: %v, was %v", s, started[1])
	}
	if e := elapsedRe.FindStringSubmatch(second); e == nil || e[1] != elapsed[1] {
		t.Errorf("elapsed changed on rerun: %v, was %v", e, elapsed[1])
	}
	// Rebuilt from the state dir: the same status, times and inventory.
	os.Remove(report)
	if out, code := runBin(t, dir, "report", c); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	rebuilt := readFile(t, report)
	for _, want := range []string{"Status:** finished", "**Started:** " + started[1], "**Elapsed:** " + elapsed[1], "**GPUs:** 2", "source fake"} {
		if !strings.Contains(rebuilt, want) {
			t.Errorf("rebuilt file lacks %q:\n%s", want, rebuilt)
		}
	}
	for _, bad := range []string{"running", "ETA"} {
		if strings.Contains(strings.SplitN(rebuilt, "\n", 4)[2], bad) {
			t.Errorf("rebuilt header says %q of a finished campaign:\n%s", bad, rebuilt)
		}
	}
}

// TestStepDataEscaped: control bytes, invalid UTF-8 and a 10 MB value in
// what a step writes never reach the file or the plain output raw.
func TestStepDataEscaped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: hostile
phases:
  - id: a
    steps:
      - run: |
          printf 'not json \000 \001 \033[2J \377\n' >> "$GREENLIGHT_RESULTS"
          printf '{"note": "\\u001b[31mred\\u0000", "big": "%s"}\n' "$(head -c 10000000 /dev/zero | tr '\0' x)" >> "$GREENLIGHT_RESULTS"
          printf '{"tok_s": 5}\n' >> "$GREENLIGHT_RESULTS"
`)
	out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c)
	if code != 0 {
		t.Fatalf("exit %d\n%.2000s", code, out)
	}
	md := readFile(t, filepath.Join(dir, "hostile.md"))
	for name, text := range map[string]string{"results file": md, "plain output": out} {
		if !utf8.ValidString(text) {
			t.Errorf("%s is not valid UTF-8", name)
		}
		if strings.ContainsAny(text, "\x00\x01\x1b") {
			t.Errorf("%s holds raw control bytes", name)
		}
		if len(text) > 1<<20 {
			t.Errorf("%s is %d bytes: the 10 MB value was not cut", name, len(text))
		}
	}
	for _, want := range []string{`\x1b[2J`, `\x1b[31mred`, "…(10000000 bytes)"} {
		if !strings.Contains(md, want) {
			t.Errorf("results file lacks %q", want)
		}
	}
	csv := readFile(t, filepath.Join(dir, "hostile.a.csv"))
	if strings.ContainsAny(csv, "\x00\x1b") || len(csv) > 1<<20 {
		t.Errorf("the CSV holds raw control bytes or the whole 10 MB value (%d bytes)", len(csv))
	}
}

// TestEndlessResultsLineIsSkipped: a step that writes 40 MB without a
// newline to $GREENLIGHT_RESULTS gets a warning, not a monitor that holds
// it all in memory; the rows after it are recorded.
func TestEndlessResultsLineIsSkipped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: endless
phases:
  - id: a
    steps:
      - run: |
          head -c 40000000 /dev/zero | tr '\0' x >> "$GREENLIGHT_RESULTS"
          echo >> "$GREENLIGHT_RESULTS"
          echo '{"after": 1}' >> "$GREENLIGHT_RESULTS"
`)
	out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c)
	if code != 0 || !strings.Contains(out, "of over 32.0 MiB: skipped") || !strings.Contains(out, "after=1") {
		t.Errorf("exit %d:\n%.3000s", code, out)
	}
}

// TestEveryRowOfAFastStepIsKept: a step that writes 20 MB of rows and ends
// at once (more than one read of the results file takes in) has every row
// recorded, in the CSV and in the count the file shows.
func TestEveryRowOfAFastStepIsKept(t *testing.T) {
	t.Parallel() // its own folder, its own runner: it overlaps the others' waits
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: fast
phases:
  - id: a
    steps:
      - run: |
          awk 'BEGIN{for(i=0;i<400000;i++) printf "{\"i\": %d, \"pad\": \"xxxxxxxxxxxxxxxxxxxx\"}\n", i}' >> "$GREENLIGHT_RESULTS"
`)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	md := readFile(t, filepath.Join(dir, "fast.md"))
	if !strings.Contains(md, "**400000 rows**") {
		t.Errorf("the file does not count 400000 rows:\n%.2000s", md)
	}
	csv := readFile(t, filepath.Join(dir, "fast.a.csv"))
	if n := strings.Count(csv, "\n"); n != 400001 {
		t.Errorf("the CSV has %d lines; want 400001 (a header and every row)", n)
	}
}

// TestFreshStartsOverKeepingTheOld: run --fresh on a finished campaign
// runs it again; everything the old run produced (state dir, results file,
// CSV, the phase's artifacts) is set aside into one dated folder beside
// the results file, never deleted, so the new run never takes the old
// run's traces for its own; run without it says how to start over.
func TestFreshStartsOverKeepingTheOld(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: again
phases:
  - id: a
    artifacts: [traces/*.txt]
    steps:
      - run: |
          mkdir -p traces; echo run >> count; n=$(wc -l < count); echo "trace of run $n" > traces/rank$n.txt; echo '{"x": 1}' >> "$GREENLIGHT_RESULTS"
`)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c); code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, out)
	}
	os.WriteFile(filepath.Join(dir, "again.md"), []byte(readFile(t, filepath.Join(dir, "again.md"))+"\nmy notes\n"), 0o644)
	out, _ := runBin(t, dir, "run", "--plain", "--gpu", "none", c)
	if !strings.Contains(out, "already finished") || !strings.Contains(out, "--fresh") {
		t.Errorf("run on a finished campaign does not say how to start over:\n%s", out)
	}
	out, code := runBin(t, dir, "run", "--fresh", "--plain", "--gpu", "none", c)
	if code != 0 || !strings.Contains(out, "the last run is set aside in") || !strings.Contains(out, "step 1/1") {
		t.Fatalf("--fresh: exit %d\n%s", code, out)
	}
	if got := readFile(t, filepath.Join(dir, "count")); got != "run\nrun\n" {
		t.Errorf("the step ran %q; want twice", got)
	}
	asides, _ := filepath.Glob(filepath.Join(dir, "again.2*"))
	if len(asides) != 1 {
		t.Fatalf("want one folder set aside, found %v", asides)
	}
	aside := asides[0]
	if !strings.Contains(readFile(t, filepath.Join(aside, "again.md")), "my notes") {
		t.Error("the old results file was not set aside with its notes")
	}
	for _, f := range []string{"again.a.csv", "state/journal.jsonl", "artifacts/traces/rank1.txt"} {
		if _, err := os.Stat(filepath.Join(aside, f)); err != nil {
			t.Errorf("%s was not set aside: %v", f, err)
		}
	}
	if now, _ := filepath.Glob(filepath.Join(dir, "traces", "*.txt")); len(now) != 1 || !strings.HasSuffix(now[0], "rank2.txt") {
		t.Errorf("the new run's traces are %v; want only its own rank2.txt", now)
	}
}

// TestStatusJSON: greenlight status --json, parsed against its schema,
// after a run with a failed expectation; and exit 2 where nothing ran.
func TestStatusJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: st
phases:
  - id: bench
    expect: {tok_s: ">= 55", ttft: "< 1"}
    steps:
      - run: |
          echo '{"tok_s": 60}' >> "$GREENLIGHT_RESULTS"; echo '{"tok_s": 61}' >> "$GREENLIGHT_RESULTS"
  - id: later
    gate: manual
    needs: [bench]
    steps:
      - run: |
          true
`)
	if out, code := runBin(t, dir, "status", c); code != 2 || !strings.Contains(out, "has not run here") {
		t.Errorf("status before any run: exit %d, %q; want 2 and why", code, out)
	}
	runBin(t, dir, "run", "--plain", "--gpu", "none", "--approve", "later", c)
	out, code := runBin(t, dir, "status", "--json", c)
	var st client.Status
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if code != 0 || dec.Decode(&st) != nil {
		t.Fatalf("status --json: exit %d, not the schema:\n%s", code, out)
	}
	if st.Schema != client.StatusSchema || st.Campaign != "st" || !st.Finished || st.Monitor.Kind != "none" || st.Started == nil || st.Ended == nil {
		t.Errorf("status: %+v", st)
	}
	if len(st.Phases) != 2 || st.Phases[0].Results != 2 || st.Phases[0].Status != "done" ||
		len(st.Phases[0].NotProduced) != 1 || st.Phases[0].NotProduced[0] != "ttft" || !st.Phases[1].Gate {
		t.Errorf("phases: %+v", st.Phases)
	}
	if out, _ := runBin(t, dir, "status", c); !strings.Contains(out, "st: finished") || !strings.Contains(out, "✗ ttft not produced") {
		t.Errorf("status:\n%s", out)
	}
}
