package mdfile

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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
	scans.none[path] = noEditor{at: time.Now().Add(-scanEvery)}
	scans.mu.Unlock()
	h := scannedEditor(path)
	if h == nil || h.Editor != "vim" || h.PID != cmd.Process.Pid {
		t.Errorf("after scanEvery: %+v; want vim, pid %d", h, cmd.Process.Pid)
	}
}

// TestEditorFoundWhenItOpensTheFile: an editor that leaves no swap file
// (vim -n, micro, Helix) is found within moments of opening the file, by
// the open (inotify), not by a look made every scanEvery; a process read
// as no editor a moment before it exec'd the editor is read again.
func TestEditorFoundWhenItOpensTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.md")
	os.WriteFile(path, []byte("# r\n"), 0o644)
	f := Open(path, "", "r")
	kicks := make(chan struct{}, 16)
	f.OnChange(func() {
		select {
		case kicks <- struct{}{}:
		default:
		}
	})
	if fd, err := unix.InotifyInit1(unix.IN_CLOEXEC); err != nil {
		t.Skipf("inotify is not available here (%v): the open watch falls back to a look every scanEvery", err)
	} else {
		unix.Close(fd)
	}
	blocks := func() Blocks { return Blocks{Bodies: map[string]string{"a": "one\n"}, Order: []string{"a"}} }
	for range 5 {
		if err := f.Save(blocks); err != nil {
			t.Fatal(err)
		}
	}
	if h := scannedEditor(path); h != nil {
		t.Fatalf("no editor yet: %+v", h)
	}
	// A shell that is read as no editor, then execs one, which opens the
	// file: `env vim FILE` as tmux starts it.
	vim := filepath.Join(dir, "vim")
	os.WriteFile(vim, []byte("#!/bin/sh\ncat \"$1\" >/dev/null\nsleep 30\n"), 0o755)
	cmd := exec.Command("sh", "-c", "sleep 0.3; exec \"$0\" \"$1\"", vim, path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if h := scannedEditor(path); h != nil { // the shell, read as no editor
		t.Fatalf("found before the editor started: %+v", h)
	}
	start := time.Now()
	var h *Holder
	for h == nil && time.Since(start) < 5*time.Second {
		select {
		case <-kicks:
			h = HolderOf(path)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if h == nil || h.Editor != "vim" || h.PID != cmd.Process.Pid {
		t.Fatalf("the editor that opened the file was not found by its open: %+v; want vim, pid %d", h, cmd.Process.Pid)
	}
	if err := f.Save(blocks); err == nil || !strings.Contains(err.Error(), "open in vim") {
		t.Errorf("Save while the editor has it: %v; want held", err)
	}
}

// TestASaveBuiltOnOurExposedFileKeepsTheSaveWePutBack: a save lands
// between a write's read and its swap, so the write puts it back; an
// editor that read the file in the moment ours stood there saves, later,
// ours with its line added and without the line of the save put back.
// The next write keeps both lines, once each.
func TestASaveBuiltOnOurExposedFileKeepsTheSaveWePutBack(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.md")
	os.WriteFile(path, []byte("# notes\n\n"), 0o644)
	f := Open(path, "", "r")
	n := 0
	blocks := func() Blocks {
		return Blocks{Bodies: map[string]string{"a": fmt.Sprintf("rows %d\n", n)}, Order: []string{"a"}}
	}
	if err := f.Save(blocks); err != nil {
		t.Fatal(err)
	}
	renameSave := func(text string) {
		tmp := path + ".tmp"
		os.WriteFile(tmp, []byte(text), 0o644)
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	var built string
	saved := false
	f.SetTestHook(func(at string) {
		switch {
		case at == "swap" && !saved: // a save lands before our swap
			saved = true
			b, _ := os.ReadFile(path)
			renameSave(strings.Replace(string(b), "# notes\n", "# notes\nline k\n", 1))
		case at == "swapped" && saved && built == "": // an editor reads ours, standing there for a moment
			b, _ := os.ReadFile(path)
			built = string(b) + "line k+1\n"
		}
	})
	n++
	if err := f.Save(blocks); err != nil && !errors.Is(err, ErrNoSwap) {
		t.Fatal(err)
	}
	f.SetTestHook(nil)
	if built == "" {
		t.Skip("this filesystem cannot swap: no write of ours stands at the path before a save is put back")
	}
	if strings.Contains(built, "line k\n") {
		t.Fatalf("the editor read the save, not ours: %q", built)
	}
	renameSave(built) // the editor's save, built on ours
	n++
	if err := f.Save(blocks); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	for _, l := range []string{"line k\n", "line k+1\n"} {
		if c := strings.Count(string(b), l); c != 1 {
			t.Errorf("%q is in the file %d times:\n%s", l, c, b)
		}
	}
}
