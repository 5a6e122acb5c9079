package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/runner/state"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

// TestSlipsSaidAsSlips: a search whose SLO names p99_tpot where the rows
// have p99_tpot_ms stops at its first run and says so (the record, the
// key result, status), rather than concluding that no value meets the
// SLO; a metrics: name no row has is said with the name the rows have.
func TestSlipsSaidAsSlips(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := filepath.Join(dir, "slip.yaml")
	os.WriteFile(c, []byte(`name: slip
phases:
  - id: limit
    gpus: none
    search: {axis: concurrency, range: [1, 64], slo: {p99_tpot: "<= 30"}, resolution: 50%}
    repeat: 3
    steps:
      - run: |
          echo run >> ledger
          echo "{\"p99_tpot_ms\": $(( ${concurrency} * 2 )), \"p99_ttft_ms\": 5}" >> "$GREENLIGHT_RESULTS"
  - id: gemm
    gpus: none
    metrics: [tok_s]
    steps:
      - run: |
          echo '{"tok_ss": 61.5}' >> "$GREENLIGHT_RESULTS"
`), 0o644)
	out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c)
	if code != 1 {
		t.Errorf("run: exit %d; want 1 (the search failed on its slip)\n%s", code, out)
	}
	if runs := strings.Count(readFile(t, filepath.Join(dir, "ledger")), "run"); runs != 1 {
		t.Errorf("the search ran %d times; want it stopped at its first run", runs)
	}
	md := readFile(t, filepath.Join(dir, "slip.md"))
	for _, want := range []string{
		"no run wrote p99_tpot (did you mean p99_tpot_ms?); the rows have p99_tpot_ms, p99_ttft_ms",
		"metrics: names a column its first rows do not have: no run wrote tok_s (did you mean tok_ss?)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the record lacks %q:\n%s", want, md)
		}
	}
	for _, bad := range []string{"meets the SLO", "could not be told"} {
		if strings.Contains(phaseBlock(md, "limit"), bad) {
			t.Errorf("the search's block concludes (%q) on a column no run wrote:\n%s", bad, phaseBlock(md, "limit"))
		}
	}
	st, _ := runBin(t, dir, "status", c)
	if !strings.Contains(st, "search stopped: the search's SLO names a column no run wrote") {
		t.Errorf("status does not say the slip:\n%s", st)
	}
	js, _ := runBin(t, dir, "status", "--json", c)
	var v struct {
		Phases []struct {
			ID     string `json:"id"`
			Points *struct {
				Search *struct {
					Slip string `json:"slip"`
				} `json:"search"`
			} `json:"points"`
		} `json:"phases"`
	}
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatalf("status --json: %v\n%s", err, js)
	}
	said := false
	for _, p := range v.Phases {
		if p.ID == "limit" && p.Points != nil && p.Points.Search != nil && strings.Contains(p.Points.Search.Slip, "p99_tpot") {
			said = true
		}
	}
	if !said {
		t.Errorf("status --json has no search slip:\n%s", js)
	}
}

// TestConditionsCommandsEachKeepTheirOutcome: conditions: commands where
// one hangs (a child sleeping), one prints 100 MB, one fails with exit 3
// and one closes its output and sleeps: the campaign ends, each command
// that ended keeps its own outcome in the record, the ones that hang are
// said as no answer, and none of them still runs after the runner exits.
func TestConditionsCommandsEachKeepTheirOutcome(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mark := "gl-cond-" + filepath.Base(dir)
	c := filepath.Join(dir, "cond.yaml")
	os.WriteFile(c, []byte(`name: cond
conditions:
  commands:
    - echo v1.2.3
    - |
      sh -c 'GL_COND_MARK=`+mark+` sleep 300'
    - head -c 100000000 /dev/zero | tr '\0' x
    - |
      echo failing; exit 3
    - |
      exec >&- 2>&-; GL_COND_MARK=`+mark+` sleep 300
phases:
  - id: a
    gpus: none
    steps:
      - run: |
          echo '{"x": 1}' >> "$GREENLIGHT_RESULTS"
`), 0o644)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	md := readFile(t, filepath.Join(dir, "cond.md"))
	for _, want := range []string{"- `echo v1.2.3`: v1.2.3", "failing (exit status 3)", "xxxxxxxx", "gave no answer in"} {
		if !strings.Contains(md, want) {
			t.Errorf("the record's conditions lack %q:\n%s", want, md)
		}
	}
	n := 0
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "- `") && strings.Contains(l, "gave no answer in") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d commands said as no answer in the conditions; want the two that hang:\n%s", n, md)
	}
	if left := procsMarked("GL_COND_MARK=" + mark); len(left) > 0 {
		t.Errorf("conditions: commands still run after the runner exited: pids %v", left)
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// procsMarked are the live processes whose environment holds mark.
func procsMarked(mark string) []int {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var out []int
	for _, p := range procs {
		env, err := os.ReadFile(p + "/environ")
		if err != nil || !bytes.Contains(append([]byte("\x00"), env...), []byte("\x00"+mark+"\x00")) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(p)); err == nil {
			if st, _, ok := supervise.ProcStat(pid); ok && st != 'Z' {
				out = append(out, pid)
			}
		}
	}
	return out
}

// TestTwoRunsAtOnceStartOneRunner: two `greenlight run --detach` at the
// same moment, one through a symlinked folder: both name one runner, and
// only one runner is started (the clients take turns to start one): the
// runners' log has one runner's start and no runner that lost the
// campaign's lock.
func TestTwoRunsAtOnceStartOneRunner(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	os.Mkdir(real, 0o755)
	link := filepath.Join(dir, "link")
	os.Symlink(real, link)
	os.WriteFile(filepath.Join(real, "two.yaml"), []byte(`name: two
phases:
  - id: a
    gpus: none
    steps:
      - run: |
          sleep 3
`), 0o644)
	outs := make(chan string, 2)
	for _, d := range []string{real, link} {
		go func() {
			out, code := runBin(t, d, "run", "--detach", "--gpu", "none", filepath.Join(d, "two.yaml"))
			outs <- fmt.Sprintf("exit %d: %s", code, out)
		}()
	}
	a, b := <-outs, <-outs
	runBin(t, real, "stop", filepath.Join(real, "two.yaml"))
	// The runner's end is waited for: it writes its last files as it goes.
	testutil.Within(20*time.Second, func() bool {
		_, held := state.LockHolder(filepath.Join(real, ".greenlight", "two"))
		return !held && len(procsMarked(supervise.EnvState+"="+filepath.Join(real, ".greenlight", "two")))+len(procsMarked(supervise.EnvState+"="+filepath.Join(link, ".greenlight", "two"))) == 0
	})
	// and its last files: the folder is left alone for a moment before
	// the test's cleanup removes it.
	testutil.Within(10*time.Second, func() bool {
		var newest time.Time
		filepath.Walk(real, func(_ string, fi os.FileInfo, err error) error {
			if err == nil && fi.ModTime().After(newest) {
				newest = fi.ModTime()
			}
			return nil
		})
		return time.Since(newest) > 500*time.Millisecond
	})
	log := readFile(t, filepath.Join(real, ".greenlight", "two", "runner.log"))
	if n := strings.Count(log, "runner pid "); n != 1 || strings.Contains(log, "holds") || strings.Contains(log, "locked") {
		t.Errorf("%d runners started for one campaign; want one, and none that lost its lock:\n%s\n%s\nthe runners' log:\n%s", n, a, b, log)
	}
	for _, o := range []string{a, b} {
		if !strings.HasPrefix(o, "exit 0") || !strings.Contains(o, "runner pid") {
			t.Errorf("a client: %s", o)
		}
	}
	pid := func(o string) string {
		_, after, _ := strings.Cut(o, "runner pid ")
		p, _, _ := strings.Cut(after, ",")
		return p
	}
	if pid(a) != pid(b) {
		t.Errorf("the two clients name two runners:\n%s\n%s", a, b)
	}
}
