package mdfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHeldSaysALongHoldPlainly: a hold is said as the editor that holds
// the file; past HoldSaid, that the file lags the results.
func TestHeldSaysALongHoldPlainly(t *testing.T) {
	h := &Held{Path: "/x/r.md", By: Holder{Editor: "vim", PID: 42, Since: time.Now()}}
	if got := h.Error(); got != "r.md is open in vim (pid 42): written when you leave it" {
		t.Errorf("a fresh hold: %q", got)
	}
	h.By.Since = time.Now().Add(-HoldSaid - time.Second)
	if got := h.Error(); !strings.Contains(got, "has been open in vim (pid 42) for over 10m0s: it lags the results") {
		t.Errorf("a long hold: %q", got)
	}
}

// TestSwaplessEditorFoundByItsProcess: an editor that leaves no swap file
// is found among the processes by the file in its arguments; a look that
// found none stands for scanEvery (reading /proc at every write was most
// of an idle runner's CPU), then the processes are read again.
func TestSwaplessEditorFoundByItsProcess(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.md")
	os.WriteFile(path, []byte("# r\n"), 0o644)
	if h := scannedEditor(path); h != nil {
		t.Fatalf("no editor yet: %+v", h)
	}
	vim := filepath.Join(dir, "vim") // comm is the script's name: vim
	os.WriteFile(vim, []byte("#!/bin/sh\nsleep 30\n"), 0o755)
	cmd := exec.Command(vim, path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	time.Sleep(100 * time.Millisecond)
	if h := scannedEditor(path); h != nil {
		t.Errorf("found within scanEvery of a look that found none: %+v", h)
	}
	scans.mu.Lock()
	scans.none[path] = time.Now().Add(-scanEvery)
	scans.mu.Unlock()
	h := scannedEditor(path)
	if h == nil || h.Editor != "vim" || h.PID != cmd.Process.Pid {
		t.Errorf("after scanEvery: %+v; want vim, pid %d", h, cmd.Process.Pid)
	}
}
