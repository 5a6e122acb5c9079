package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/testutil"
)

// tmuxSession drives the real binary in tmux, as a person over ssh would.
type tmuxSession struct {
	t      *testing.T
	socket string
}

func (s *tmuxSession) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (s *tmuxSession) screen() string { return s.run("capture-pane", "-p", "-t", "gl") }

func (s *tmuxSession) keys(k ...string) { s.run(append([]string{"send-keys", "-t", "gl"}, k...)...) }

// waitFor polls the screen until it shows want.
func (s *tmuxSession) waitFor(want string, timeout time.Duration) string {
	s.t.Helper()
	var scr string
	if !testutil.Within(timeout, func() bool { scr = s.screen(); return strings.Contains(scr, want) }) {
		s.t.Fatalf("the screen never showed %q; it shows:\n%s", want, scr)
	}
	return scr
}

func TestDemoInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo takes about a minute")
	}
	t.Parallel() // its own folder and tmux server: it overlaps the others' waits
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	dir := t.TempDir()
	s := &tmuxSession{t: t, socket: fmt.Sprintf("greenlight-e2e-%d", os.Getpid())}
	exit, detached := filepath.Join(dir, "exit"), filepath.Join(dir, "detached")
	demo := filepath.Join(dir, "greenlight", "demo")
	// The demo, left running with q then l, then attached to again with
	// `greenlight run` on the campaign file it printed, from the same shell.
	s.run("new-session", "-d", "-s", "gl", "-x", "110", "-y", "32",
		fmt.Sprintf("cd %s && export XDG_STATE_HOME=%s LANG=C.UTF-8; %s demo; echo $? > %s; %s run %s/campaign.yaml; echo $? > %s; sleep 30",
			dir, dir, binary(t), detached, binary(t), demo, exit))
	t.Cleanup(func() { exec.Command("tmux", "-L", s.socket, "kill-server").Run() })

	s.waitFor("vLLM server (simulated)", 20*time.Second)
	s.waitFor("loading weights", 20*time.Second)

	s.keys("p")
	s.waitFor("paused", 5*time.Second)
	s.keys("p")
	s.waitFor("running", 5*time.Second)

	// Skip the flaky phase while it waits its turn.
	s.keys("j", "j", "j")
	s.waitFor("›· Flaky", 5*time.Second)
	s.keys("s")
	s.waitFor("skipped: by you", 5*time.Second)

	// The report preview follows an edit made from outside.
	s.keys("Tab")
	s.waitFor("Campaign: demo-vllm-profile", 10*time.Second)
	report := filepath.Join(demo, "demo-results.md")
	f, err := os.OpenFile(report, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "\nE2E NOTE from another pane")
	f.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.screen(), "E2E NOTE from another pane") {
		if time.Now().After(deadline) {
			t.Fatalf("the edit never showed in the preview:\n%s", s.screen())
		}
		s.keys("End")
		time.Sleep(300 * time.Millisecond)
	}

	// Leave it running, and attach again.
	s.keys("q")
	s.waitFor("detach", 5*time.Second)
	s.keys("d")
	waitForFile(t, detached, "\n")
	if b, _ := os.ReadFile(detached); strings.TrimSpace(string(b)) != "0" {
		t.Errorf("left running on purpose: exit %s; want 0", b)
	}
	s.waitFor("vLLM server (simulated)", 20*time.Second)

	// The gated phase waits; greenlight it.
	s.keys("j")
	s.waitFor("waiting for your greenlight", 90*time.Second)
	s.keys("g")
	s.waitFor("finished", 60*time.Second)
	s.keys("q")
	deadline = time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(exit)
		if err == nil && strings.TrimSpace(string(b)) != "" {
			if code := strings.TrimSpace(string(b)); code != "0" {
				t.Errorf("greenlight demo exited %s; want 0 (every phase done or skipped by the user)", code)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("greenlight did not exit after q:\n%s", s.screen())
		}
		time.Sleep(200 * time.Millisecond)
	}
	b, _ := os.ReadFile(report)
	md := string(b)
	for _, want := range []string{"E2E NOTE from another pane", "⏭ skipped", "Status:** finished"} {
		if !strings.Contains(md, want) {
			t.Errorf("results file lacks %q", want)
		}
	}
	if n := strings.Count(md, "<!-- greenlight:begin"); n != 6 {
		t.Errorf("results file has %d blocks; want 6", n)
	}
}
