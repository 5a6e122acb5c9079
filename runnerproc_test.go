package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/client"
	"github.com/greenlight-run/greenlight/internal/testutil"
	rstate "github.com/greenlight-run/greenlight/runner/state"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

const handCampaign = `name: hand
phases:
  - id: a
    steps:
      - run: |
          echo a >> ran; sleep 3
  - id: b
    needs: [a]
    steps:
      - run: |
          echo b >> ran; echo '{"b": 1}' >> "$GREENLIGHT_RESULTS"
`

func waitFinished(t *testing.T, report string, timeout time.Duration) string {
	t.Helper()
	var b []byte
	// Ended: finished, stopped or failed, as the headline says.
	if !testutil.Within(timeout, func() bool {
		b, _ = os.ReadFile(report)
		return strings.Contains(string(b), "Status:** finished") || strings.Contains(string(b), "Status:** stopped") || strings.Contains(string(b), "Status:** failed")
	}) {
		t.Fatalf("the campaign did not finish with no window:\n%s", b)
	}
	return string(b)
}

func tmuxOrSkip(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
}

// liveStatus is `greenlight status --json`, decoded strictly.
func liveStatus(t *testing.T, dir, campaign string) (client.Status, string) {
	t.Helper()
	out, code := runBin(t, dir, "status", "--json", campaign)
	var st client.Status
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if code != 0 || dec.Decode(&st) != nil {
		t.Fatalf("status --json: exit %d, not the schema:\n%s", code, out)
	}
	return st, out
}

// TestWindowKilledCampaignGoesOn: the tmux session holding the window is
// killed during phase a; phase b still starts, with no client attached,
// and each step ran once.
func TestWindowKilledCampaignGoesOn(t *testing.T) {
	tmuxOrSkip(t)
	t.Parallel() // its own folder and tmux server: it overlaps the others' waits
	dir := t.TempDir()
	writeCampaign(t, dir, handCampaign)
	t.Cleanup(func() { stopRunner(t, filepath.Join(dir, ".greenlight", "hand")) })
	s := &tmuxSession{t: t, socket: fmt.Sprintf("greenlight-hand-%d", os.Getpid())}
	s.run("new-session", "-d", "-s", "gl", "-x", "100", "-y", "30", fmt.Sprintf("cd %s && %s run --gpu none c.yaml", dir, binary(t)))
	s.waitFor("waits for a", 20*time.Second)
	s.run("kill-server")
	st, out := liveStatus(t, dir, "c.yaml")
	if st.Monitor.Kind != "runner" || st.Monitor.PID <= 0 || st.Finished {
		t.Fatalf("status after the window went: %s", out)
	}
	md := waitFinished(t, filepath.Join(dir, "hand.md"), 30*time.Second)
	if !strings.Contains(md, "b = 1") {
		t.Errorf("phase b's result is not in the record:\n%s", md)
	}
	if got := readFile(t, filepath.Join(dir, "ran")); got != "a\nb\n" {
		t.Errorf("steps ran %q; want each once", got)
	}
	if log := readFile(t, filepath.Join(dir, ".greenlight", "hand", "runner.log")); !strings.Contains(log, "b started") {
		t.Errorf("the runner's log does not say b started:\n%s", log)
	}
}

// TestDetachAndAttachAgain: q then d detaches (exit 0); `greenlight run`
// attaches to the same runner and follows the campaign to its end.
func TestDetachAndAttachAgain(t *testing.T) {
	tmuxOrSkip(t)
	t.Parallel() // its own folder and tmux server: it overlaps the others' waits
	dir := t.TempDir()
	writeCampaign(t, dir, strings.Replace(handCampaign, "sleep 3", "sleep 4", 1))
	s := &tmuxSession{t: t, socket: fmt.Sprintf("greenlight-back-%d", os.Getpid())}
	exit := filepath.Join(dir, "exit")
	s.run("new-session", "-d", "-s", "gl", "-x", "100", "-y", "30", fmt.Sprintf("cd %s && %s run --gpu none c.yaml; echo $? > %s; sleep 30", dir, binary(t), exit))
	t.Cleanup(func() { exec.Command("tmux", "-L", s.socket, "kill-server").Run() })
	s.waitFor("waits for a", 20*time.Second)
	pid, _ := lockHolder(filepath.Join(dir, ".greenlight", "hand"))
	s.keys("q")
	s.waitFor("detach", 5*time.Second)
	s.keys("d")
	waitForFile(t, exit, "\n")
	if code := strings.TrimSpace(readFile(t, exit)); code != "0" {
		t.Errorf("detached on purpose: exit %s; want 0", code)
	}
	out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", "c.yaml")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("attached to the campaign's runner (pid %d)", pid)) || !strings.Contains(out, "b=1") ||
		!strings.Contains(out, "a started") {
		t.Errorf("attaching again: exit %d:\n%s", code, out)
	}
	if got := readFile(t, filepath.Join(dir, "ran")); got != "a\nb\n" {
		t.Errorf("steps ran %q; want each once", got)
	}
}

// TestTwoWindowsOneCampaign: two windows attached at once; p in one
// pauses the campaign and the other shows it.
func TestTwoWindowsOneCampaign(t *testing.T) {
	tmuxOrSkip(t)
	t.Parallel() // its own folder and tmux server: it overlaps the others' waits
	dir := t.TempDir()
	writeCampaign(t, dir, `name: two
phases:
  - id: a
    steps:
      - run: |
          sleep 6
  - id: b
    needs: [a]
    steps:
      - run: |
          echo b >> ran
`)
	t.Cleanup(func() { stopRunner(t, filepath.Join(dir, ".greenlight", "two")) })
	one := &tmuxSession{t: t, socket: fmt.Sprintf("greenlight-one-%d", os.Getpid())}
	two := &tmuxSession{t: t, socket: fmt.Sprintf("greenlight-two-%d", os.Getpid())}
	for _, s := range []*tmuxSession{one, two} {
		s.run("new-session", "-d", "-s", "gl", "-x", "100", "-y", "30", fmt.Sprintf("cd %s && %s run --gpu none c.yaml; sleep 30", dir, binary(t)))
		t.Cleanup(func() { exec.Command("tmux", "-L", s.socket, "kill-server").Run() })
		s.waitFor("waits for a", 20*time.Second)
	}
	one.keys("p")
	two.waitFor("paused", 5*time.Second)
	// a ends; the runner's turn that records it is the one that would
	// start b, were it let.
	c := filepath.Join(dir, "c.yaml")
	testutil.Eventually(t, 20*time.Second, "a's end", func() bool {
		st, _ := liveStatus(t, dir, c)
		return len(st.Phases) == 2 && st.Phases[0].Status == "done"
	})
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("b started while paused")
	}
	two.keys("p") // the other window resumes it
	one.waitFor("campaign finished", 20*time.Second)
	if got := readFile(t, filepath.Join(dir, "ran")); got != "b\n" {
		t.Errorf("ran %q", got)
	}
}

const gateCampaign = `name: gated
phases:
  - id: warm
    steps:
      - run: |
          sleep 1
  - id: bench
    needs: [warm]
    gate: manual
    steps:
      - run: |
          echo bench >> ran; echo '{"tok_s": 60}' >> "$GREENLIGHT_RESULTS"
`

// TestVerbsDriveACampaign: a script drives a campaign with the verbs
// alone: run --detach, status --json (live, strict schema), approve with a
// typo (2, did you mean), approve, logs, and the end.
func TestVerbsDriveACampaign(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, gateCampaign)
	state := filepath.Join(dir, ".greenlight", "gated")
	t.Cleanup(func() { stopRunner(t, state) })
	for _, verb := range []string{"approve", "pause", "stop"} {
		args := []string{verb, c}
		if verb == "approve" {
			args = append(args, "bench")
		}
		if out, code := runBin(t, dir, args...); code != 2 || !strings.Contains(out, "has not run here") {
			t.Errorf("%s before any run: exit %d, %q; want 2 and why", verb, code, out)
		}
	}
	out, code := runBin(t, dir, "run", "--detach", "--gpu", "none", c)
	if code != 0 || !strings.Contains(out, "greenlight run") {
		t.Fatalf("run --detach: exit %d:\n%s", code, out)
	}
	var st client.Status
	if !testutil.Within(20*time.Second, func() bool {
		st, out = liveStatus(t, dir, c)
		return len(st.Phases) == 2 && st.Phases[1].Status == "waiting"
	}) {
		t.Fatalf("the gate never waited:\n%s", out)
	}
	if st.Schema != client.StatusSchema || st.Monitor.Kind != "runner" || st.Monitor.PID <= 0 || st.Finished || !st.Phases[1].Gate || st.Phases[1].Waiting == "" {
		t.Errorf("live status: %s", out)
	}
	if out, code := runBin(t, dir, "approve", c, "bnech"); code != 2 || !strings.Contains(out, `did you mean "bench"`) {
		t.Errorf("approve with a typo: exit %d, %q; want 2 and the nearest id", code, out)
	}
	if out, code := runBin(t, dir, "approve", c, "bench"); code != 0 || !strings.Contains(out, "bench greenlit") {
		t.Errorf("approve: exit %d, %q", code, out)
	}
	md := waitFinished(t, filepath.Join(dir, "gated.md"), 20*time.Second)
	if !strings.Contains(md, "tok_s") {
		t.Errorf("bench's result is not in the record:\n%s", md)
	}
	out, code = runBin(t, dir, "logs", c, "warm")
	if code != 0 || !strings.Contains(out, "==> warm step 1") {
		t.Errorf("logs: exit %d:\n%s", code, out)
	}
	// The runner has ended with the campaign; the verbs say so.
	testutil.Eventually(t, 10*time.Second, "the runner's end with its campaign", func() bool { _, held := lockHolder(state); return !held })
	if _, err := os.Stat(filepath.Join(state, "runner.sock")); err == nil {
		t.Error("the socket is left after the runner ended")
	}
	if out, code := runBin(t, dir, "pause", c); code != 2 || !strings.Contains(out, "has finished") {
		t.Errorf("pause on a finished campaign: exit %d, %q", code, out)
	}
	if st, _ := liveStatus(t, dir, c); !st.Finished || st.Monitor.Kind != "none" {
		t.Errorf("status after the end: %+v", st)
	}
}

// TestPauseResumeStopFromAShell: pause holds the queue, resume lets it go,
// stop ends the campaign with its running step stopped.
func TestPauseResumeStopFromAShell(t *testing.T) {
	t.Parallel() // its own folder, its own runner: it overlaps the others' waits
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: ctl
phases:
  - id: a
    steps:
      - run: |
          sleep 2
  - id: b
    needs: [a]
    steps:
      - run: |
          echo b >> ran; sleep 60
`)
	state := filepath.Join(dir, ".greenlight", "ctl")
	t.Cleanup(func() { stopRunner(t, state) })
	if out, code := runBin(t, dir, "run", "--detach", "--gpu", "none", c); code != 0 {
		t.Fatalf("run --detach: %d %s", code, out)
	}
	if out, code := runBin(t, dir, "pause", c); code != 0 || !strings.Contains(out, "paused") {
		t.Fatalf("pause: %d %s", code, out)
	}
	// The runner's turn that records a's end is the one that would start
	// b, were it let.
	testutil.Eventually(t, 20*time.Second, "a's end", func() bool {
		st, _ := liveStatus(t, dir, c)
		return len(st.Phases) == 2 && st.Phases[0].Status == "done"
	})
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("b started while paused")
	}
	if st, out := liveStatus(t, dir, c); !st.Paused {
		t.Errorf("status does not say paused:\n%s", out)
	}
	runBin(t, dir, "resume", c)
	waitForFile(t, filepath.Join(dir, "ran"), "b")
	if out, code := runBin(t, dir, "stop", c); code != 0 || !strings.Contains(out, "stopping") {
		t.Fatalf("stop: %d %s", code, out)
	}
	md := waitFinished(t, filepath.Join(dir, "ctl.md"), 20*time.Second)
	if !strings.Contains(md, "stopped") {
		t.Errorf("the record does not say b was stopped:\n%s", md)
	}
}

// TestRunnerKilledResumes: the runner is killed (-9) while a service is up
// and a step runs; `greenlight run` starts a new runner that re-adopts
// both: the step ran once, the service was started once.
func TestRunnerKilledResumes(t *testing.T) {
	t.Parallel() // its own folder, its own runner: it overlaps the others' waits
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: kill
phases:
  - id: serve
    service:
      run: |
        echo up >> served; echo ready; sleep 300
      ready: {log: ready}
  - id: bench
    needs: [serve]
    steps:
      - run: |
          echo bench >> ran; sleep 4; echo '{"tok_s": 7}' >> "$GREENLIGHT_RESULTS"
`)
	state := filepath.Join(dir, ".greenlight", "kill")
	t.Cleanup(func() { stopRunner(t, state) })
	if out, code := runBin(t, dir, "run", "--detach", "--gpu", "none", c); code != 0 {
		t.Fatalf("run --detach: %d %s", code, out)
	}
	waitForFile(t, filepath.Join(dir, "ran"), "bench")
	pid, held := lockHolder(state)
	if !held {
		t.Fatal("no runner holds the campaign")
	}
	syscall.Kill(pid, syscall.SIGKILL)
	testutil.Eventually(t, 10*time.Second, "the killed runner's end", func() bool { return gone(pid) })
	out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c)
	if code != 0 || !strings.Contains(out, "tok_s=7") || !strings.Contains(out, "started the campaign's runner") {
		t.Errorf("after the runner was killed: exit %d:\n%s", code, out)
	}
	if got := readFile(t, filepath.Join(dir, "ran")); got != "bench\n" {
		t.Errorf("the step ran %q; want once", got)
	}
	if got := readFile(t, filepath.Join(dir, "served")); got != "up\n" {
		t.Errorf("the service started %q; want once (re-adopted, not reloaded)", got)
	}
}

// TestLogsFollow: logs -f prints a step's lines as they come and the next
// step's too, and ends with the campaign.
func TestLogsFollow(t *testing.T) {
	t.Parallel() // its own folder, its own runner: it overlaps the others' waits
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: follow
phases:
  - id: a
    steps:
      - run: |
          for i in 1 2 3; do echo "line $i"; sleep 0.5; done
      - run: |
          printf 'second \033[2J step\n'
`)
	t.Cleanup(func() { stopRunner(t, filepath.Join(dir, ".greenlight", "follow")) })
	if out, code := runBin(t, dir, "run", "--detach", "--gpu", "none", c); code != 0 {
		t.Fatalf("run --detach: %d %s", code, out)
	}
	cmd := exec.Command(binary(t), "logs", "-f", c)
	cmd.Dir = dir
	pipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("logs -f did not end with the campaign")
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{"line 1", "line 3", "==> a step 2", `second \x1b[2J step`} {
		if !strings.Contains(got, want) {
			t.Errorf("logs -f lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\x1b") {
		t.Errorf("a raw escape reached the terminal:\n%q", got)
	}
}

// TestDemoFinishesWithNoWindow: the tmux session holding the demo is
// killed while its server loads; the demo campaign still finishes.
func TestDemoFinishesWithNoWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo takes about a minute")
	}
	t.Parallel() // its own folder, its own runner: it overlaps the others' waits
	tmuxOrSkip(t)
	dir := t.TempDir()
	s := &tmuxSession{t: t, socket: fmt.Sprintf("greenlight-nowin-%d", os.Getpid())}
	s.run("new-session", "-d", "-s", "gl", "-x", "110", "-y", "32",
		fmt.Sprintf("cd %s && export XDG_STATE_HOME=%s LANG=C.UTF-8; %s demo", dir, dir, binary(t)))
	s.waitFor("loading weights", 30*time.Second)
	s.run("kill-server")
	md := waitFinished(t, filepath.Join(dir, "greenlight", "demo", "demo-results.md"), 150*time.Second)
	if n := strings.Count(md, "✅ done"); n < 5 {
		t.Errorf("the demo finished with %d phases done; want all 5:\n%s", n, md)
	}
	// The server's /metrics was read every 0.5 s while the phase that
	// used it ran (its requests held against the row's load), said so.
	if !regexp.MustCompile(`scrapes from [0-9:]+ to [0-9:]+, one every 0\.(4|5)[0-9]* s \(the median\)`).MatchString(md) {
		t.Errorf("the demo's Server table does not say a 0.5 s cadence:\n%s", md[max(0, strings.Index(md, "### Server")):])
	}
	// Its runner ends once its last writes are done: the folder is left
	// to the test's cleanup only then.
	state := filepath.Join(dir, "greenlight", "demo", ".greenlight", "demo-vllm-profile")
	testutil.Eventually(t, 60*time.Second, "the demo's runner's end", func() bool {
		for _, r := range runnersOf(ownerEnv + "=" + os.Getenv(ownerEnv)) {
			if strings.Contains(r, state) {
				return false
			}
		}
		return true
	})
}

// TestStoppedRunnerSaidSo: a runner that stops answering (kill -STOP) is
// said so within the client's 2 s, by status and by a verb, never waited on.
func TestStoppedRunnerSaidSo(t *testing.T) {
	t.Parallel() // its own folder, its own runner: it overlaps the others' waits
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: stopped
phases:
  - id: a
    steps:
      - run: |
          sleep 30
`)
	state := filepath.Join(dir, ".greenlight", "stopped")
	t.Cleanup(func() { stopRunner(t, state) })
	if out, code := runBin(t, dir, "run", "--detach", "--gpu", "none", c); code != 0 {
		t.Fatalf("run --detach: %d %s", code, out)
	}
	waitForFile(t, filepath.Join(state, "journal.jsonl"), `"kind":"step-pid"`)
	pid, _ := lockHolder(state)
	syscall.Kill(pid, syscall.SIGSTOP)
	defer syscall.Kill(pid, syscall.SIGCONT)
	start := time.Now()
	out, code := runBin(t, dir, "status", c)
	if code != 0 || !strings.Contains(out, "does not answer") || time.Since(start) > 6*time.Second {
		t.Errorf("status of a stopped runner: exit %d after %v:\n%s", code, time.Since(start).Round(time.Millisecond), out)
	}
	start = time.Now()
	out, code = runBin(t, dir, "pause", c)
	if code == 0 || !strings.Contains(out, "within 2s") || time.Since(start) > 6*time.Second {
		t.Errorf("pause on a stopped runner: exit %d after %v:\n%s", code, time.Since(start).Round(time.Millisecond), out)
	}
}

// TestFollowerOutlivesItsRunner: `run --plain` follows a campaign whose
// runner is killed under it: it starts a new runner, which resumes, and
// follows that one to the end (the step ran once).
func TestFollowerOutlivesItsRunner(t *testing.T) {
	t.Parallel() // its own folder, its own runner: it overlaps the others' waits
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: outlive
phases:
  - id: a
    steps:
      - run: |
          echo a >> ran; sleep 3; echo '{"x": 1}' >> "$GREENLIGHT_RESULTS"
`)
	state := filepath.Join(dir, ".greenlight", "outlive")
	t.Cleanup(func() { stopRunner(t, state) })
	cmd, out := startPlain(t, dir, c)
	waitForFile(t, filepath.Join(state, "journal.jsonl"), `"kind":"step-pid"`)
	testutil.Eventually(t, 10*time.Second, "the follower's attach", func() bool { return strings.Contains(out.String(), "a started") })
	pid, _ := lockHolder(state)
	syscall.Kill(pid, syscall.SIGKILL)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if code := exitOf(err); code != 0 || !strings.Contains(out.String(), "went away; a new one") || !strings.Contains(out.String(), "x=1") {
			t.Errorf("exit %d:\n%s", code, out)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the follower hung after its runner was killed:\n%s", out)
	}
	if got := readFile(t, filepath.Join(dir, "ran")); got != "a\n" {
		t.Errorf("the step ran %q; want once", got)
	}
}

// TestEditedFileSaidOnAttach: a client whose campaign file changed since
// its runner started says the runner goes on with the file as it was.
func TestEditedFileSaidOnAttach(t *testing.T) {
	t.Parallel() // its own folder, its own runner: it overlaps the others' waits
	dir := t.TempDir()
	body := "name: edited\nphases:\n  - id: a\n    steps:\n      - run: |\n          sleep 2\n"
	c := writeCampaign(t, dir, body)
	t.Cleanup(func() { stopRunner(t, filepath.Join(dir, ".greenlight", "edited")) })
	if out, code := runBin(t, dir, "run", "--detach", "--gpu", "none", c); code != 0 {
		t.Fatalf("run --detach: %d %s", code, out)
	}
	writeCampaign(t, dir, body+"# an edit\n")
	out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c)
	if code != 0 || !strings.Contains(out, "changed since its runner") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// TestApproveWhenAttaching: --approve given to a run that attaches to a
// running runner opens the named gate there; naming a phase with no gate
// is no error, as it is not when the runner starts.
func TestApproveWhenAttaching(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, gateCampaign)
	t.Cleanup(func() { stopRunner(t, filepath.Join(dir, ".greenlight", "gated")) })
	if out, code := runBin(t, dir, "run", "--detach", "--gpu", "none", c); code != 0 {
		t.Fatalf("run --detach: %d %s", code, out)
	}
	out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", "--approve", "warm,bench", c)
	if code != 0 || !strings.Contains(out, "tok_s=60") || strings.Contains(out, "--approve:") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// TestCompletedRunNeverRunsAgain: the runner killed, then the step's
// supervisor, while its command runs; the command goes on to its end and
// writes its row. Its exit status is on disk (its own shell wrote it), so
// the next runner takes the run as ended, done in try 1: it is never run
// again as try 2 (it was, every time, before: "its supervisor died ...;
// its outcome is unknown: it runs again as try 2").
func TestCompletedRunNeverRunsAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: orphan
phases:
  - id: bench
    steps:
      - run: |
          echo bench >> ran; sleep 3; echo '{"tok_s": 7}' >> "$GREENLIGHT_RESULTS"; echo finished >> ran
`)
	state := filepath.Join(dir, ".greenlight", "orphan")
	t.Cleanup(func() { stopRunner(t, state) })
	if out, code := runBin(t, dir, "run", "--detach", "--gpu", "none", c); code != 0 {
		t.Fatalf("run --detach: %d %s", code, out)
	}
	waitForFile(t, filepath.Join(dir, "ran"), "bench")
	pid, held := lockHolder(state)
	if !held {
		t.Fatal("no runner holds the campaign")
	}
	syscall.Kill(pid, syscall.SIGKILL)
	testutil.Eventually(t, 10*time.Second, "the killed runner's end", func() bool { return gone(pid) })
	st, err := supervise.ReadStatus(filepath.Join(state, "steps", "bench", "a1-s1-t1", "status.json"))
	if err != nil || st.Supervisor <= 0 {
		t.Fatalf("the step's status: %v %+v", err, st)
	}
	syscall.Kill(st.Supervisor, syscall.SIGKILL)
	waitForFile(t, filepath.Join(dir, "ran"), "finished")
	// Its shell's last moment, after its last line: not a condition of
	// the test (a greenlight without the shell's exit record writes none).
	testutil.Within(3*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(state, "steps", "bench", "a1-s1-t1", "exit"))
		return err == nil
	})
	out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c)
	if code != 0 || strings.Contains(out, "runs again as try 2") {
		t.Errorf("after the supervisor died, its command ended: exit %d:\n%s", code, out)
	}
	if got := readFile(t, filepath.Join(dir, "ran")); got != "bench\nfinished\n" {
		t.Errorf("the step ran %q; want once", got)
	}
	if _, err := os.Stat(filepath.Join(state, "steps", "bench", "a1-s1-t2")); err == nil {
		t.Error("a try 2 was started for a run that had ended")
	}
}

// TestStatusAfterAKillSaysTheJournal: stopped while its first phase ran
// (the second, not started, stopped with it), run again, its runner then
// killed: status from the journal says the second phase is pending, as the
// runner that was killed had it, not "stopped" by the stop before; and
// the campaign, which no runner runs, is "interrupted", never "running".
func TestStatusAfterAKillSaysTheJournal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: killed
phases:
  - id: first
    steps:
      - run: |
          echo go >> ran; sleep 60
  - id: second
    steps:
      - run: |
          true
`)
	state := filepath.Join(dir, ".greenlight", "killed")
	t.Cleanup(func() { stopRunner(t, state) })
	if out, code := runBin(t, dir, "run", "--detach", "--gpu", "none", c); code != 0 {
		t.Fatalf("run --detach: %d %s", code, out)
	}
	waitForFile(t, filepath.Join(dir, "ran"), "go")
	if out, code := runBin(t, dir, "stop", c); code != 0 {
		t.Fatalf("stop: %d %s", code, out)
	}
	testutil.Eventually(t, 20*time.Second, "the stop's end", func() bool { _, held := lockHolder(state); return !held })
	if out, code := runBin(t, dir, "run", "--detach", "--gpu", "none", c); code != 0 {
		t.Fatalf("run --detach again: %d %s", code, out)
	}
	waitForFile(t, filepath.Join(dir, "ran"), "go\ngo")
	pid, held := lockHolder(state)
	if !held {
		t.Fatal("no runner holds the campaign")
	}
	syscall.Kill(pid, syscall.SIGKILL)
	testutil.Eventually(t, 10*time.Second, "the killed runner's end", func() bool { return gone(pid) })
	out, code := runBin(t, dir, "status", "--json", c)
	var st struct {
		State   string `json:"state"`
		Monitor struct {
			Kind string `json:"kind"`
		} `json:"monitor"`
		Phases []struct {
			ID, Status string
		} `json:"phases"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status --json: exit %d\n%s", code, out)
	}
	if st.State != "interrupted" || st.Monitor.Kind == "runner" {
		t.Errorf("no runner runs it: state %q, monitor %q; want interrupted", st.State, st.Monitor.Kind)
	}
	for _, p := range st.Phases {
		if p.ID == "second" && p.Status != "pending" {
			t.Errorf("the second phase reads %q; want pending, as the killed runner had it", p.Status)
		}
	}
}

// lockHolder is state.LockHolder, for tests whose state dir is named state.
var lockHolder = rstate.LockHolder
