package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/link"
	"github.com/greenlight-run/greenlight/runner/state"
)

// TestHelpOnEveryCommand: -h and --help print the command's help and exit
// 0, creating nothing (no demo folder, no state dir).
func TestHelpOnEveryCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, "name: h\nphases:\n  - id: a\n    steps: [{run: 'true'}]\n")
	os.Remove(c)
	for _, cmd := range []string{"run", "validate", "report", "demo", "gpus"} {
		for _, flag := range []string{"-h", "--help"} {
			out, code := runBin(t, dir, cmd, flag)
			if code != 0 || !strings.Contains(out, "Usage: greenlight "+cmd) {
				t.Errorf("greenlight %s %s = exit %d, %q; want exit 0 and its usage", cmd, flag, code, out)
			}
		}
	}
	if out, code := runBin(t, dir, "run", "--plain", "c.yaml", "--help"); code != 0 || !strings.Contains(out, "Exit status") {
		t.Errorf("help after the file: exit %d %q", code, out)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("help created %v", ents)
	}
}

// TestApproveTypoIsBadInput: --approve names phases like needs does; a typo
// is exit 2 with the nearest id, before anything is created or run.
func TestApproveTypoIsBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: gates
phases:
  - id: one
    gate: manual
    steps: [{run: "true"}]
`)
	out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", "--approve", "onee", c)
	if code != 2 || !strings.Contains(out, `no phase "onee"`) || !strings.Contains(out, `did you mean "one"?`) {
		t.Errorf("--approve onee = exit %d, %q; want 2 with did-you-mean", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, ".greenlight")); err == nil {
		t.Error("a bad --approve created the state dir")
	}
	out, code = runBin(t, dir, "run", "--plain", "--gpu", "none", "--approve", "one", c)
	if code != 0 {
		t.Errorf("--approve one = exit %d\n%s", code, out)
	}
}

// TestExitStatuses: a second greenlight on a running campaign attaches to
// its runner (--detach: at once, 0); 130 when interrupted (SIGINT twice,
// SIGTERM); 0 and 1 are in TestRunPlainExitStatus.
func TestExitStatuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		sigs  []syscall.Signal
		early bool // as the runner starts: the client may still be attaching
	}{{"SIGINT twice", []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, false}, {"SIGTERM", []syscall.Signal{syscall.SIGTERM}, false},
		{"SIGINT twice as the runner starts", []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, true}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c := writeCampaign(t, dir, `name: long
phases:
  - id: a
    steps:
      - run: |
          sleep 30
`)
			cmd := exec.Command(binary(t), "run", "--plain", "--gpu", "none", c)
			cmd.Dir = dir
			out := &strings.Builder{}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if tc.early {
				// The moment the runner holds its lock: the client that
				// started it is still attaching (before, the default
				// handler killed it there: exit -1).
				testutil.Eventually(t, 20*time.Second, "the runner's lock", func() bool {
					pid, _ := state.LockHolder(filepath.Join(dir, ".greenlight", "long"))
					return pid > 0
				})
			} else {
				waitForFile(t, filepath.Join(dir, ".greenlight", "long", "journal.jsonl"), `"kind":"step-pid"`)
				// A second greenlight on the same campaign attaches to its runner.
				pid, _ := state.LockHolder(filepath.Join(dir, ".greenlight", "long"))
				if o, code := runBin(t, dir, "run", "--detach", "--gpu", "none", c); code != 0 || !strings.Contains(o, fmt.Sprintf("runner pid %d", pid)) {
					t.Errorf("second greenlight: exit %d, %q; want 0, the runner pid %d", code, o, pid)
				}
			}
			for _, s := range tc.sigs {
				cmd.Process.Signal(s)
				time.Sleep(200 * time.Millisecond)
			}
			err := cmd.Wait()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			if code != 130 {
				t.Errorf("exit %d after %s; want 130\n%s", code, tc.name, out)
			}
			// Leave nothing running for the next case.
			stopRunner(t, filepath.Join(dir, ".greenlight", "long"))
		})
	}
}

// waitForFile waits until path contains want.
func waitForFile(t *testing.T, path, want string) {
	t.Helper()
	var b []byte
	if !testutil.Within(20*time.Second, func() bool { b, _ = os.ReadFile(path); return strings.Contains(string(b), want) }) {
		t.Fatalf("%s never held %q; it holds:\n%s", path, want, b)
	}
}

// killSteps stops every step group a state dir's status files name, and
// their supervisors, and waits for them to be gone, so that nothing writes
// into a test's folder while it is removed.
func killSteps(t *testing.T, stateDir string) {
	files, _ := filepath.Glob(filepath.Join(stateDir, "steps", "*", "*", "status.json"))
	var pids []int
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, field := range []string{`"pgid":`, `"supervisor_pid":`} {
			var id int
			if i := strings.Index(string(b), field); i >= 0 {
				fmt.Sscanf(string(b[i+len(field):]), "%d", &id)
			}
			if id <= 1 {
				continue
			}
			if field == `"pgid":` {
				syscall.Kill(-id, syscall.SIGKILL)
			} else {
				syscall.Kill(id, syscall.SIGKILL)
			}
			pids = append(pids, id)
		}
	}
	for _, pid := range pids {
		testutil.Within(5*time.Second, func() bool { return gone(pid) })
	}
}

// TestDetachIsZero: in the window, q then d leaves the campaign running on
// purpose: exit 0, and the step goes on.
func TestDetachIsZero(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	dir := t.TempDir()
	writeCampaign(t, dir, `name: detach
phases:
  - id: a
    steps:
      - run: |
          sleep 20
`)
	s := &tmuxSession{t: t, socket: fmt.Sprintf("greenlight-detach-%d", os.Getpid())}
	exit := filepath.Join(dir, "exit")
	s.run("new-session", "-d", "-s", "gl", "-x", "100", "-y", "30",
		fmt.Sprintf("cd %s && %s run --gpu none c.yaml; echo $? > %s; sleep 30", dir, binary(t), exit))
	t.Cleanup(func() {
		exec.Command("tmux", "-L", s.socket, "kill-server").Run()
		stopRunner(t, filepath.Join(dir, ".greenlight", "detach"))
	})
	s.waitFor("running", 20*time.Second)
	s.keys("q")
	s.waitFor("detach", 5*time.Second)
	s.keys("d")
	waitForFile(t, exit, "\n")
	if b, _ := os.ReadFile(exit); strings.TrimSpace(string(b)) != "0" {
		t.Errorf("detached on purpose: exit %s; want 0; the pane shows:\n%s", b, s.screen())
	}
}

// stopRunner ends a campaign's runner and its steps, so the test's folder
// can go.
func stopRunner(t *testing.T, stateDir string) {
	pid, held := state.LockHolder(stateDir)
	if held {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	killSteps(t, stateDir)
	// A runner that has let go of its lock may still be writing its last
	// words (the results file's last state, its log): the folder is
	// removed once it is gone too.
	if !held { // LockHolder names no pid then: the lock file still does
		b, _ := os.ReadFile(runner.Layout(stateDir).Lock())
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	ending := !held && pid > 0 && !gone(pid) && strings.Contains(readCmdline(pid), link.Command)
	if held || ending {
		testutil.Eventually(t, 10*time.Second, fmt.Sprintf("runner %d's end", pid), func() bool { return gone(pid) })
	}
}

func readCmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return string(b)
}

// gone says pid has exited (a zombie whose parent has not reaped it yet
// counts as gone).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z'
}

// TestApproveAPhaseWithNoGateIsBadInput: `approve` of a phase that has no
// gate is bad input (2), said before any runner is reached.
func TestApproveAPhaseWithNoGateIsBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, "name: nogate\nphases:\n  - id: one\n    steps:\n      - run: |\n          true\n")
	var out, errb strings.Builder
	code := run([]string{"approve", c, "one"}, &out, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), "one has no gate to open") {
		t.Errorf("approve of a phase with no gate: exit %d, %q; want %d and why", code, errb.String(), exitUsage)
	}
}

// TestOneRunnerPerResultsFile: a second runner for a results file that a
// runner writes (another --state-dir; another path to it through a
// symlink) is refused with exit 3, naming the runner; it makes nothing.
func TestOneRunnerPerResultsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, "name: once\nphases:\n  - id: a\n    steps:\n      - run: |\n          sleep 30\n")
	if out, code := runBin(t, dir, "run", "--detach", "--gpu", "none", c); code != 0 {
		t.Fatalf("first runner: exit %d\n%s", code, out)
	}
	t.Cleanup(func() { stopRunner(t, filepath.Join(dir, ".greenlight", "once")) })
	out, code := runBin(t, dir, "run", "--detach", "--gpu", "none", "--state-dir", filepath.Join(dir, "other"), c)
	if code != exitLocked || !strings.Contains(out, "written by another runner (pid") {
		t.Errorf("a second runner from another state dir: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "other")); err == nil {
		t.Error("the refused runner made its state dir")
	}
	os.Symlink(dir, filepath.Join(dir, "alias"))
	out, code = runBin(t, dir, "run", "--detach", "--gpu", "none", "--state-dir", filepath.Join(dir, "other2"), "--report", filepath.Join(dir, "alias", "once.md"), c)
	if code != exitLocked {
		t.Errorf("the same results file through a symlink: exit %d\n%s", code, out)
	}
	// The runner holds the lock itself: started without a client's check.
	out, code = runBin(t, dir, link.Command, "--state-dir", filepath.Join(dir, "other3"), "--gpu", "none", c)
	if code != exitLocked || !strings.Contains(out, "one runner per results file") {
		t.Errorf("a runner started directly: exit %d\n%s", code, out)
	}
}

// TestCtrlCInAWatchingClientDetaches: a --plain client attached to a
// runner it did not start says so, and its Ctrl-C detaches it alone: the
// campaign (a long load, say) goes on.
func TestCtrlCInAWatchingClientDetaches(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, "name: watch\nphases:\n  - id: a\n    steps:\n      - run: |\n          sleep 30\n")
	if out, code := runBin(t, dir, "run", "--detach", "--gpu", "none", c); code != 0 {
		t.Fatalf("start: exit %d\n%s", code, out)
	}
	state := filepath.Join(dir, ".greenlight", "watch")
	t.Cleanup(func() { stopRunner(t, state) })
	waitForFile(t, filepath.Join(state, "journal.jsonl"), `"kind":"step-pid"`)
	cmd, out := startPlain(t, dir, c)
	testutil.Within(10*time.Second, func() bool { return strings.Contains(out.String(), "attached to the campaign's runner") })
	if !strings.Contains(out.String(), "Ctrl-C detaches this client") {
		t.Errorf("the watching client does not say what Ctrl-C does:\n%s", out)
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	if o, _ := runBin(t, dir, "status", c); !strings.Contains(o, "running") {
		t.Errorf("after Ctrl-C in a watching client the campaign is not running:\n%s\nclient:\n%s", o, out)
	}
}

// TestRetryOnAFinishedCampaign: `retry FILE PHASE` after the campaign
// finished starts its runner, which runs that phase again (and only it)
// and ends; the record says finished again.
func TestRetryOnAFinishedCampaign(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, "name: again\nphases:\n  - id: a\n    steps:\n      - run: |\n          echo a >> ran\n  - id: b\n    needs: [a]\n    steps:\n      - run: |\n          echo b >> ran\n")
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	out, code := runBin(t, dir, "retry", c, "b")
	if code != 0 || !strings.Contains(out, "run b again") {
		t.Fatalf("retry on a finished campaign: exit %d\n%s", code, out)
	}
	// Asked, not done: nothing has run again when the verb returns.
	if !strings.Contains(out, "b: queued to run again") || strings.Contains(out, "retry done") {
		t.Errorf("retry says what is done before anything ran:\n%s", out)
	}
	waitForFile(t, filepath.Join(dir, "ran"), "a\nb\nb\n")
	md := waitFinished(t, filepath.Join(dir, "again.md"), 20*time.Second)
	if !strings.Contains(md, "Status:** finished") {
		t.Errorf("after the retry the record does not say finished:\n%s", md)
	}
	if got := readFile(t, filepath.Join(dir, "ran")); got != "a\nb\nb\n" {
		t.Errorf("ran %q; want a once and b twice", got)
	}
	// The record said finished before the retry too: the runner's end,
	// not the file, says it is done writing.
	testutil.Eventually(t, 20*time.Second, "the retry's runner to end", func() bool {
		_, held := state.LockHolder(filepath.Join(dir, ".greenlight", "again"))
		return !held
	})
	// Its results file's last write follows the lock's release by moments
	// (the runner then waits for a client that a verb never is).
	testutil.Eventually(t, 20*time.Second, "the runner's last write", func() bool {
		var newest time.Time
		filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
			if err == nil {
				if fi, err := d.Info(); err == nil && fi.ModTime().After(newest) {
					newest = fi.ModTime()
				}
			}
			return nil
		})
		return time.Since(newest) > 500*time.Millisecond
	})
}

// TestResumeKeepsTheGPUSource: a campaign started with --gpu fake:2 and
// stopped is resumed without the flag: the runner reads the same source
// (said), so preflight's count holds; a flag given again wins, said too.
func TestResumeKeepsTheGPUSource(t *testing.T) {
	t.Parallel() // its own folder, its own runner: it overlaps the others' waits
	dir := t.TempDir()
	c := writeCampaign(t, dir, "name: keep\ngpus: 2\nphases:\n  - id: a\n    steps:\n      - run: |\n          sleep 2; echo a >> ran\n")
	if out, code := runBin(t, dir, "run", "--detach", "--gpu", "fake:2", c); code != 0 {
		t.Fatalf("start: exit %d\n%s", code, out)
	}
	waitForFile(t, filepath.Join(dir, ".greenlight", "keep", "journal.jsonl"), `"kind":"step-pid"`)
	runBin(t, dir, "stop", c)
	waitFinished(t, filepath.Join(dir, "keep.md"), 20*time.Second)
	// The record says stopped a moment before the runner ends: a run then
	// may reach the runner on its way out, and waits for its end rather
	// than attach to it (and see its stop, exit 130).
	out, code := runBin(t, dir, "run", "--plain", c)
	if code != 0 || !strings.Contains(out, "--gpu fake:2, as the campaign was started with") {
		t.Errorf("resume without --gpu: exit %d\n%s", code, out)
	}
	if !strings.Contains(readFile(t, filepath.Join(dir, "keep.md")), "source fake") {
		t.Error("the resumed record lost the GPU source")
	}
}

// TestLogsFollowOnePhase: `logs -f FILE PHASE` before the phase starts
// says what it waits for, keeps each header on its own line after a step
// whose last line had no newline, and ends with the phase, not the
// campaign.
func TestLogsFollowOnePhase(t *testing.T) {
	t.Parallel() // its own folder, its own runner: it overlaps the others' waits
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: follow
phases:
  - id: a
    steps:
      - run: |
          sleep 2
  - id: b
    needs: [a]
    steps:
      - run: |
          printf 'no newline at the end'
      - run: |
          echo second
  - id: c
    needs: [b]
    steps:
      - run: |
          sleep 60
`)
	if out, code := runBin(t, dir, "run", "--detach", "--gpu", "none", c); code != 0 {
		t.Fatalf("start: exit %d\n%s", code, out)
	}
	t.Cleanup(func() { stopRunner(t, filepath.Join(dir, ".greenlight", "follow")) })
	start := time.Now()
	out, code := runBin(t, dir, "logs", "-f", c, "b")
	if code != 0 {
		t.Fatalf("logs -f: exit %d\n%s", code, out)
	}
	if time.Since(start) > 40*time.Second {
		t.Errorf("logs -f b followed the campaign (%v), not b", time.Since(start))
	}
	for _, want := range []string{"==> b has not started: waits for a <==", "no newline at the end\n==> b step 2", "second\n", "==> b done <=="} {
		if !strings.Contains(out, want) {
			t.Errorf("logs -f b lacks %q:\n%s", want, out)
		}
	}
}

// TestSkipPointBadInput: a point the grid does not have, or a phase that
// is no sweep, is bad input (exit 2, with the grid's own words), refused
// before any runner is reached.
func TestSkipPointBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, "name: pts\nphases:\n  - id: gemm\n    sweep: {m: [1, 64]}\n    steps:\n      - run: |\n          true\n  - id: plain\n    steps:\n      - run: |\n          true\n")
	for _, tc := range []struct{ phase, point, want string }{
		{"gemm", "m=65", `axis m has no value "65" (its values: 1, 64)`},
		{"plain", "m=1", "plain is not a sweep"},
	} {
		if out, code := runBin(t, dir, "skip", c, tc.phase, "--point", tc.point); code != 2 || !strings.Contains(out, tc.want) {
			t.Errorf("skip %s --point %s: exit %d, %q; want 2 saying %q", tc.phase, tc.point, code, out, tc.want)
		}
	}
}

// TestTraceReadInPartExits1: `greenlight trace` over a whole trace exits
// 0; over a whole one and a truncated one it summarises both (the second
// from what was read) and exits 1 saying which, so a script can tell.
func TestTraceReadInPartExits1(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	whole, _ := filepath.Glob("trace/testdata/rank0.*.pt.trace.json.gz")
	b, err := os.ReadFile(whole[0])
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "rank1.cut.pt.trace.json.gz")
	os.WriteFile(cut, b[:len(b)/2], 0o644)
	abs, _ := filepath.Abs(whole[0])
	csvPath := filepath.Join(dir, "k.csv")
	if out, code := runBin(t, dir, "trace", "--top", "1", "--csv", csvPath, abs); code != 0 || strings.Count(out, "`\n") > 40 {
		t.Errorf("a whole trace: exit %d\n%s", code, out)
	}
	// --csv has every kernel, whatever --top says.
	if rows := strings.Count(readFile(t, csvPath), "\n") - 1; rows < 20 || strings.Contains(readFile(t, csvPath), "(the other kernels)") {
		t.Errorf("--top 1 --csv wrote %d kernels; want every one", rows)
	}
	out, code := runBin(t, dir, "trace", abs, cut)
	if code != 1 || !strings.Contains(out, "1 of 2 trace(s) not read whole") || !strings.Contains(out, "| rank 1 |") {
		t.Errorf("a whole trace and a cut one: exit %d, want 1 with both summarised and the cut one named:\n%s", code, out)
	}
}
