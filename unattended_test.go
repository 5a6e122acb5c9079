package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/runner/state"
)

// Left alone for a night: each test runs the real binary through a fault
// that used to stall a campaign or record it wrong.

// syncBuffer is output a test reads while the process still writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startPlain starts `greenlight run --plain` in the background.
func startPlain(t *testing.T, dir string, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"run", "--plain", "--gpu", "none"}, args...)...)
	cmd.Dir = dir
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

func exitOf(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestApprovalSurvivesAKill: --approve is journaled; greenlight killed
// with SIGKILL and started again without the flag does not wait at the
// gate.
func TestApprovalSurvivesAKill(t *testing.T) {
	t.Parallel() // its own folder, its own runner: it overlaps the others' waits
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: approve
phases:
  - id: load
    steps:
      - run: |
          sleep 2
  - id: bench
    needs: [load]
    gate: manual
    steps:
      - run: |
          echo '{"tok_s": 60}' >> "$GREENLIGHT_RESULTS"
`)
	cmd, _ := startPlain(t, dir, "--approve", "bench", c)
	waitForFile(t, filepath.Join(dir, ".greenlight", "approve", "journal.jsonl"), `"kind":"step-pid"`)
	// The runner is killed, and the window with it.
	if pid, held := state.LockHolder(filepath.Join(dir, ".greenlight", "approve")); held {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	done := make(chan struct{})
	var out string
	var code int
	go func() {
		out, code = runBin(t, dir, "run", "--plain", "--gpu", "none", c)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		killSteps(t, filepath.Join(dir, ".greenlight", "approve"))
		t.Fatal("the rerun waited at the gate that --approve had opened")
	}
	if code != 0 || strings.Contains(out, "waits for your greenlight") || !strings.Contains(out, "tok_s=60") {
		t.Errorf("rerun: exit %d; want 0, no wait at the gate, bench's result:\n%s", code, out)
	}
}

// TestWaitingGateSaysHow: in plain output a waiting gate says how to open
// it.
func TestWaitingGateSaysHow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: gate
phases:
  - id: bench
    gate: manual
    steps: [{run: "true"}]
`)
	cmd, out := startPlain(t, dir, c)
	// SIGTERM detaches the client; its runner would wait at the gate for
	// good: stop it, so the test leaves nothing running.
	t.Cleanup(func() { stopRunner(t, filepath.Join(dir, ".greenlight", "gate")) })
	testutil.Within(20*time.Second, func() bool { return strings.Contains(out.String(), "waits for your greenlight") })
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if !strings.Contains(out.String(), "--approve bench") || !strings.Contains(out.String(), "press g") {
		t.Errorf("the waiting gate does not say how to open it:\n%s", out)
	}
}

// smallDisk mounts a tmpfs of size MiB for the test, as root; it skips
// with the reason where it cannot.
func smallDisk(t *testing.T, mib int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs that can fill up (CI runs as root)")
	}
	dir := filepath.Join(t.TempDir(), "disk")
	os.Mkdir(dir, 0o755)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm", mib), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s)", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// journalWhole checks every line of a journal is a JSON object.
func journalWhole(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if !json.Valid([]byte(l)) {
			t.Errorf("journal line %d is not whole: %q", i+1, l)
		}
	}
}

// TestFullDisk: a step fills the disk with its trace and exits 0. It is
// recorded done (with a warning), not as a dead supervisor; the guard
// holds the next phase; freeing space lets the queue go on with no key
// pressed; the journal and results file stay whole throughout.
func TestFullDisk(t *testing.T) {
	t.Parallel()
	dir := smallDisk(t, 48)
	c := writeCampaign(t, dir, `name: full
preflight:
  disk_free: 8MiB
phases:
  - id: trace
    artifacts: [traces/*]
    steps:
      - run: |
          mkdir -p traces
          head -c 100000000 /dev/zero > traces/huge.bin || true
          # tmpfs counts pages per CPU in batches: take the slack too,
          # so that not even a 4 KiB file can be written.
          i=0; while [ $i -lt 10000 ] && printf '%4096s' x > traces/slack.$i 2>/dev/null; do i=$((i+1)); done
          echo '{"captured": 1}' >> "$GREENLIGHT_RESULTS" || true
          exit 0
  - id: next
    needs: [trace]
    steps:
      - run: |
          echo '{"tok_s": 60}' >> "$GREENLIGHT_RESULTS"
`)
	cmd, out := startPlain(t, dir, c)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "disk nearly full") {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the guard never paused:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// trace's end is the runner's turn that would start next, were it let.
	testutil.Eventually(t, 30*time.Second, "trace's end", func() bool { return strings.Contains(out.String(), "trace done") })
	state := filepath.Join(dir, ".greenlight", "full")
	journalWhole(t, filepath.Join(state, "journal.jsonl"))
	if strings.Contains(out.String(), "next started") {
		t.Errorf("next started on a full disk:\n%s", out)
	}
	if s := out.String(); !strings.Contains(s, "trace done") || strings.Contains(s, "supervisor died") {
		t.Errorf("the step that exited 0 on a full disk is not recorded done:\n%s", s)
	}
	os.RemoveAll(filepath.Join(dir, "traces"))
	select {
	case err := <-done:
		if code := exitOf(err); code != 0 {
			t.Errorf("exit %d after space was freed; want 0:\n%s", code, out)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the queue did not go on by itself after space was freed:\n%s", out)
	}
	journalWhole(t, filepath.Join(state, "journal.jsonl"))
	md := readFile(t, filepath.Join(dir, "full.md"))
	for _, want := range []string{"the disk filled up while step 1", "tok_s", "Status:** finished"} {
		if !strings.Contains(md, want) {
			t.Errorf("results file lacks %q:\n%s", want, md)
		}
	}
	if segs := strings.Count(md, "<!-- greenlight:begin"); segs != strings.Count(md, "<!-- greenlight:end") {
		t.Errorf("results file markers unbalanced")
	}
}

// TestStateRemovedMidRun: the whole state dir, then the journal alone, is
// removed while a step runs; the step is not marked dead, its result is
// recorded, the next phase runs, and the journal is whole again after.
func TestStateRemovedMidRun(t *testing.T) {
	t.Parallel() // its own folder, its own runner: it overlaps the others' waits
	for _, what := range []string{"state dir", "journal"} {
		t.Run(what, func(t *testing.T) {
			dir := t.TempDir()
			c := writeCampaign(t, dir, `name: vanish
phases:
  - id: long
    steps:
      - run: |
          sleep 3
          echo '{"tok_s": 61}' >> "$GREENLIGHT_RESULTS"
  - id: after
    needs: [long]
    steps:
      - run: |
          echo '{"after": 1}' >> "$GREENLIGHT_RESULTS"
`)
			state := filepath.Join(dir, ".greenlight", "vanish")
			cmd, out := startPlain(t, dir, c)
			waitForFile(t, filepath.Join(state, "journal.jsonl"), `"kind":"step-pid"`)
			if what == "journal" {
				os.Remove(filepath.Join(state, "journal.jsonl"))
			} else {
				os.RemoveAll(state)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if code := exitOf(err); code != 0 {
					t.Errorf("exit %d; want 0:\n%s", code, out)
				}
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("did not finish:\n%s", out)
			}
			s := out.String()
			for _, want := range []string{what + " ", "was removed while the campaign ran", "tok_s=61", "after=1", "every phase done"} {
				if !strings.Contains(s, want) {
					t.Errorf("output lacks %q:\n%s", want, s)
				}
			}
			if strings.Contains(s, "died") {
				t.Errorf("a live step was marked dead:\n%s", s)
			}
			journalWhole(t, filepath.Join(state, "journal.jsonl"))
			// A rerun finds the campaign finished from the rebuilt journal.
			if o, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c); code != 0 || strings.Contains(o, "step 1/1") {
				t.Errorf("rerun after the rebuilt journal ran something again (exit %d):\n%s", code, o)
			}
		})
	}
}

// TestJournalRemovedStepsKept: a rerun after the journal alone was
// removed between runs runs the step again in a new folder; the old
// folder's "exited" status is not taken for the new step's.
func TestJournalRemovedStepsKept(t *testing.T) {
	t.Parallel() // its own folder, its own runner: it overlaps the others' waits
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: fresh
phases:
  - id: a
    steps:
      - run: |
          sleep 1
          echo '{"run": 1}' >> "$GREENLIGHT_RESULTS"
`)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c); code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, out)
	}
	state := filepath.Join(dir, ".greenlight", "fresh")
	os.Remove(filepath.Join(state, "journal.jsonl"))
	out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c)
	if code != 0 || !strings.Contains(out, "run=1") || strings.Contains(out, "done in 0s") {
		t.Errorf("rerun: exit %d; want the step run again, for real:\n%s", code, out)
	}
	dirs, _ := filepath.Glob(filepath.Join(state, "steps", "a", "a1-s1-t1*", "status.json"))
	if len(dirs) != 2 {
		t.Errorf("step folders %v; want the old one kept and a new one", dirs)
	}
}

// TestPlainOutputReaderGoesAway: `greenlight run --plain | head -1` does
// not end the campaign's monitor: the campaign finishes and its record is
// whole; preflight's warning is in the record too.
func TestPlainOutputReaderGoesAway(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeCampaign(t, dir, `name: pipe
gpus: 8
phases:
  - id: a
    steps:
      - run: |
          sleep 1; echo '{"x": 1}' >> "$GREENLIGHT_RESULTS"
  - id: b
    needs: [a]
    steps:
      - run: |
          echo '{"y": 2}' >> "$GREENLIGHT_RESULTS"
`)
	cmd := exec.Command("sh", "-c", binary(t)+" run --plain --gpu none c.yaml | head -1")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		// The runner may not have written the file yet when head exits.
		b, _ := os.ReadFile(filepath.Join(dir, "pipe.md"))
		md := string(b)
		if strings.Contains(md, "Status:** finished") {
			if !strings.Contains(md, "preflight: the campaign expects 8 GPUs") {
				t.Errorf("the preflight warning is not in the record:\n%s", md)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the campaign did not finish once its reader went away:\n%s", md)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
