package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	deadline := time.Now().Add(timeout)
	for {
		b, _ := os.ReadFile(report)
		if strings.Contains(string(b), "Status:** finished") {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the campaign did not finish with no window:\n%s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tmuxOrSkip(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
}

// TestWindowKilledCampaignGoesOn: the tmux session holding the window is
// killed during phase a; phase b still runs, with no window, and each step
// ran once.
func TestWindowKilledCampaignGoesOn(t *testing.T) {
	tmuxOrSkip(t)
	dir := t.TempDir()
	writeCampaign(t, dir, handCampaign)
	s := &tmuxSession{t: t, socket: fmt.Sprintf("greenlight-hand-%d", os.Getpid())}
	s.run("new-session", "-d", "-s", "gl", "-x", "100", "-y", "30", fmt.Sprintf("cd %s && %s run --gpu none c.yaml", dir, bin))
	s.waitFor("waits for a", 20*time.Second)
	s.run("kill-server")
	// From another shell: the background monitor runs it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := runBin(t, dir, "status", "--json", "c.yaml")
		var st statusJSON
		if json.Unmarshal([]byte(out), &st) == nil && st.Monitor.Kind == "background" && st.Monitor.PID > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never said the background monitor runs it:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	md := waitFinished(t, filepath.Join(dir, "hand.md"), 30*time.Second)
	if !strings.Contains(md, "b = 1") {
		t.Errorf("phase b's result is not in the record:\n%s", md)
	}
	if got := readFile(t, filepath.Join(dir, "ran")); got != "a\nb\n" {
		t.Errorf("steps ran %q; want each once", got)
	}
	if log := readFile(t, filepath.Join(dir, ".greenlight", "hand", "monitor.log")); !strings.Contains(log, "re-adopted step 1") {
		t.Errorf("the background monitor did not re-adopt the running step:\n%s", log)
	}
}

// TestLeftRunningGoesOnAndIsTakenBack: q then l leaves the campaign to the
// background monitor (exit 0); `greenlight run` takes it back (no exit 3)
// and follows it to its end.
func TestLeftRunningGoesOnAndIsTakenBack(t *testing.T) {
	tmuxOrSkip(t)
	dir := t.TempDir()
	writeCampaign(t, dir, strings.Replace(handCampaign, "sleep 3", "sleep 4", 1))
	s := &tmuxSession{t: t, socket: fmt.Sprintf("greenlight-back-%d", os.Getpid())}
	exit := filepath.Join(dir, "exit")
	s.run("new-session", "-d", "-s", "gl", "-x", "100", "-y", "30", fmt.Sprintf("cd %s && %s run --gpu none c.yaml; echo $? > %s; sleep 30", dir, bin, exit))
	t.Cleanup(func() { exec.Command("tmux", "-L", s.socket, "kill-server").Run() })
	s.waitFor("waits for a", 20*time.Second)
	s.keys("q")
	s.waitFor("leave", 5*time.Second)
	s.keys("l")
	waitForFile(t, exit, "\n")
	if code := strings.TrimSpace(readFile(t, exit)); code != "0" {
		t.Errorf("left running on purpose: exit %s; want 0", code)
	}
	out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", "c.yaml")
	if code != 0 || !strings.Contains(out, "taking the campaign back") || !strings.Contains(out, "b=1") {
		t.Errorf("taking it back: exit %d:\n%s", code, out)
	}
	if got := readFile(t, filepath.Join(dir, "ran")); got != "a\nb\n" {
		t.Errorf("steps ran %q; want each once", got)
	}
}

// TestDemoFinishesWithNoWindow: the tmux session holding the demo is
// killed while its server loads; the demo campaign still finishes.
func TestDemoFinishesWithNoWindow(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo takes about a minute")
	}
	tmuxOrSkip(t)
	dir := t.TempDir()
	s := &tmuxSession{t: t, socket: fmt.Sprintf("greenlight-nowin-%d", os.Getpid())}
	s.run("new-session", "-d", "-s", "gl", "-x", "110", "-y", "32",
		fmt.Sprintf("cd %s && export XDG_STATE_HOME=%s LANG=C.UTF-8; %s demo", dir, dir, bin))
	s.waitFor("loading weights", 30*time.Second)
	s.run("kill-server")
	md := waitFinished(t, filepath.Join(dir, "greenlight", "demo", "demo-results.md"), 150*time.Second)
	if n := strings.Count(md, "✅ done"); n < 5 {
		t.Errorf("the demo finished with %d phases done; want all 5:\n%s", n, md)
	}
}
