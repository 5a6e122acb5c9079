package report

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/report/mdfile"
	"github.com/greenlight-run/greenlight/runner"
)

// The real editors, driven in tmux as a person would: open the results
// file, add a line, save, a hundred times while a result arrives every
// 0.2 s, then quit. Every save goes through on the first try with no
// prompt (vim's "WARNING: The file has been changed since reading it",
// E949, nano's "File was modified since you opened it", Emacs's "changed
// on disk"), every line the person typed is in the file at the end, and
// so are greenlight's blocks with every row, within moments of the quit.

// realEditor is how a person drives one editor.
type realEditor struct {
	name    string
	viaLink bool // the results file is a symlink into a notes folder
	cmd     func(path string) []string
	// add types a line at the end of the buffer and saves it.
	add  func(s *tmuxPane, line string)
	quit func(s *tmuxPane)
}

// vimAdd and vimQuit are vim's and Neovim's keys: a line added at the end, :w, :q.
func vimAdd(s *tmuxPane, line string) {
	s.keys("G", "o")
	s.literal(line)
	s.keys("Escape", ":w", "Enter")
}

func vimQuit(s *tmuxPane) { s.keys(":q", "Enter") }

// vimCmd is vim with no vimrc and no viminfo, and extra flags.
func vimCmd(flags ...string) func(string) []string {
	return func(p string) []string {
		return append(append([]string{"vim", "-N", "-u", "NONE", "-i", "NONE"}, flags...), p)
	}
}

var realEditors = []realEditor{
	{name: "vim", viaLink: true, cmd: vimCmd(), add: vimAdd, quit: vimQuit},
	{name: "vim", cmd: vimCmd(), add: vimAdd, quit: vimQuit},
	// vim with no swap file (`set noswapfile` in a vimrc, or -n): found by
	// its open of the file alone.
	{name: "vim-noswap", cmd: vimCmd("-n"), add: vimAdd, quit: vimQuit},
	{name: "vim-noswap", viaLink: true, cmd: vimCmd("-n"), add: vimAdd, quit: vimQuit},
	// micro keeps no swap or lock file beside the file it edits.
	{name: "micro",
		cmd: func(p string) []string { return []string{"micro", "-savecursor", "false", "-saveundo", "false", p} },
		add: func(s *tmuxPane, line string) {
			s.keys("C-End", "Enter")
			s.literal(line)
			s.keys("C-s")
		},
		quit: func(s *tmuxPane) { s.keys("C-q") }},
	{name: "nvim",
		cmd:  func(p string) []string { return []string{"nvim", "--clean", "-i", "NONE", p} },
		add:  vimAdd,
		quit: vimQuit},
	{name: "nano",
		cmd: func(p string) []string { return []string{"nano", "--ignorercfiles", "--locking", p} },
		add: func(s *tmuxPane, line string) {
			s.keys("M-/") // the end of the file
			s.literal(line)
			s.keys("Enter", "C-s")
		},
		quit: func(s *tmuxPane) { s.keys("C-x") }},
	{name: "emacs",
		cmd: func(p string) []string { return []string{"emacs", "-nw", "-Q", p} },
		add: func(s *tmuxPane, line string) {
			s.keys("M->")
			s.literal(line)
			s.keys("C-j", "C-x", "C-s")
		},
		quit: func(s *tmuxPane) { s.keys("C-x", "C-c") }},
}

// prompts are what an editor asks when the file changed under it.
var prompts = []string{"changed since reading", "E949", "File was modified", "changed on disk", "really edit", "Save anyway", "(y/n)", "[yn]",
	"has changed", "Reload", "(y,n"}

type tmuxPane struct {
	t      *testing.T
	socket string
}

func (s *tmuxPane) tmux(args ...string) string {
	out, _ := exec.Command("tmux", append([]string{"-L", s.socket}, args...)...).CombinedOutput()
	return string(out)
}
func (s *tmuxPane) keys(k ...string)    { s.tmux(append([]string{"send-keys", "-t", "ed"}, k...)...) }
func (s *tmuxPane) literal(text string) { s.tmux("send-keys", "-t", "ed", "-l", text) }
func (s *tmuxPane) screen() string      { return s.tmux("capture-pane", "-p", "-t", "ed") }
func (s *tmuxPane) alive() bool {
	return exec.Command("tmux", "-L", s.socket, "has-session", "-t", "ed").Run() == nil
}
func (s *tmuxPane) start(argv []string) {
	s.tmux(append([]string{"new-session", "-d", "-s", "ed", "-x", "120", "-y", "40"}, argv...)...)
}
func (s *tmuxPane) stop() { s.tmux("kill-server") }

func hasTool(name string) bool { _, err := exec.LookPath(name); return err == nil }

const (
	editorSaves = 100                    // saves a person makes in one sitting
	resultEvery = 200 * time.Millisecond // a result arrives this often meanwhile
)

func TestRealEditorsSaveWhileResultsArrive(t *testing.T) {
	if !hasTool("tmux") {
		t.Skip("tmux is not installed (.ci/run installs it)")
	}
	for _, ed := range realEditors {
		name := ed.name
		if ed.viaLink {
			name += "-symlinked"
		}
		t.Run(name, func(t *testing.T) {
			if !hasTool(ed.cmd("")[0]) {
				t.Skipf("%s is not installed (.ci/run installs vim, neovim, nano, emacs-nox and micro)", ed.name)
			}
			t.Parallel()
			driveEditor(t, ed, editorSaves)
		})
	}
}

func driveEditor(t *testing.T, ed realEditor, saves int) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.md")
	if ed.viaLink {
		os.Mkdir(filepath.Join(dir, "notes"), 0o755)
		os.Symlink("notes/r.md", path)
	}
	os.WriteFile(path, []byte("# my notes\n\n"), 0o644)
	w := NewWriter(path, testPlan(t), testEnv(), fakeGPUs{}, filepath.Join(dir, "state"))
	base := fullState(w.plan)
	events := make(chan runner.Event, 1)
	var errs []string
	var holdMu sync.Mutex
	var holds []string // what the writer told of the hold, in order
	w.OnHold = func(msg string) { holdMu.Lock(); holds = append(holds, msg); holdMu.Unlock() }
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(events, func(err error) {
			var held *mdfile.Held
			if !errors.As(err, &held) {
				errs = append(errs, err.Error())
			}
		})
	}()
	// A result every 0.2 s until the test ends.
	stop, quitSeen := make(chan struct{}), make(chan struct{})
	rows := make(chan int, 1)
	go func() {
		defer close(events)
		n := 1
		tick := time.NewTicker(resultEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				rows <- n - 1
				<-quitSeen // the writer ends with the feed: after the file is checked
				return
			case <-tick.C:
				events <- runner.Event{Kind: runner.ResultRecorded, State: stateWithRows(base, n)}
				n++
			}
		}
	}()
	// The campaign has been writing the file for a while when the person
	// opens it: the owner has looked for an editor and found none (an
	// editor that leaves no swap file is then found only by its open).
	if !testutil.Within(10*time.Second, func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), "<!-- greenlight:begin header -->")
	}) {
		t.Fatal("greenlight's blocks never reached the file")
	}
	s := &tmuxPane{t: t, socket: fmt.Sprintf("gl-ed-%s-%v-%d", ed.name, ed.viaLink, os.Getpid())}
	defer s.stop()
	// HOME in the test's folder: the editors' own files (Neovim's swap
	// folder, Emacs's) are the test's.
	home := filepath.Join(dir, "home")
	os.MkdirAll(home, 0o755)
	s.start(append([]string{"env", "HOME=" + home, "TERM=xterm-256color"}, ed.cmd(path)...))
	if !testutil.Within(10*time.Second, func() bool { return strings.Contains(s.screen(), "my notes") }) {
		t.Fatalf("%s did not show the file:\n%s", ed.name, s.screen())
	}
	for i := range saves {
		line := fmt.Sprintf("note %d typed in %s", i, ed.name)
		ed.add(s, line)
		var scr string
		saved := testutil.Within(10*time.Second, func() bool {
			b, _ := os.ReadFile(path)
			scr = s.screen()
			return strings.Contains(string(b), line+"\n") || promptIn(scr) != ""
		})
		if p := promptIn(scr); p != "" {
			t.Fatalf("save %d: %s asked %q:\n%s", i+1, ed.name, p, scr)
		}
		if !saved {
			t.Fatalf("save %d: the line never reached the file; the screen:\n%s", i+1, scr)
		}
	}
	// The results stop, then the person quits: the file is written within
	// a second of the quit (the editor's letting go asks for the write),
	// not at a next result.
	close(stop)
	n := <-rows
	ed.quit(s)
	if !testutil.Within(10*time.Second, func() bool { return !s.alive() || !strings.Contains(s.screen(), "my notes") }) {
		t.Fatalf("%s did not quit:\n%s", ed.name, s.screen())
	}
	quit := time.Now()
	blocks := func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), fmt.Sprintf("%d rows", n)) || strings.Contains(string(b), fmt.Sprintf("| %d |", n-1))
	}
	if !testutil.Within(3*time.Second, blocks) {
		t.Errorf("the file lacks greenlight's last rows 3 s after %s quit", ed.name)
	} else if d := time.Since(quit); d > 1500*time.Millisecond {
		t.Errorf("the file was written %s after %s quit; want within a second", d.Round(time.Millisecond), ed.name)
	}
	close(quitSeen)
	<-done
	b, _ := os.ReadFile(path)
	md := string(b)
	for i := range saves {
		if c := strings.Count(md, fmt.Sprintf("note %d typed in %s\n", i, ed.name)); c != 1 {
			t.Errorf("note %d is in the file %d times", i, c)
		}
	}
	if !strings.Contains(md, "<!-- greenlight:begin header -->") || !strings.Contains(md, fmt.Sprintf("%d rows", n)) && !strings.Contains(md, fmt.Sprintf("| %d |", n-1)) {
		t.Errorf("greenlight's blocks with the last of %d rows are not in the file after the editor quit:\n%s", n, md)
	}
	if _, err := os.Stat(mdfile.PreviewOf(path)); err == nil {
		t.Errorf("the preview beside the file is left after the editor quit")
	}
	if len(errs) > 0 {
		t.Errorf("the writer said: %q", errs)
	}
	holdMu.Lock()
	defer holdMu.Unlock()
	if len(holds) < 2 || !strings.Contains(holds[0], "open in") || holds[len(holds)-1] != "" {
		t.Errorf("the window was told of the hold %q; want it said while %s had the file, then cleared", holds, ed.name)
	}
}

func promptIn(screen string) string {
	for _, p := range prompts {
		if strings.Contains(screen, p) {
			return p
		}
	}
	return ""
}

// TestStaleSaveRepairedAtOnce: a stale copy of the file (greenlight's
// blocks as they were, a line of the person's added) saved over it by
// rename, no editor holding it and no result coming: the file has the
// current blocks again, and the person's line, without waiting for a
// result. A stale copy is shorter than the file it replaced, so it is
// first given the 3 s an in-place save may take to finish (settle.go's
// quiet): repaired within quiet and a second. (An editor that holds the
// file is written within a second of letting go: the real editors' test.)
func TestStaleSaveRepairedAtOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.md")
	os.WriteFile(path, []byte("# my notes\n\n"), 0o644)
	w := NewWriter(path, testPlan(t), testEnv(), fakeGPUs{}, filepath.Join(dir, "state"))
	base := fullState(w.plan)
	events := make(chan runner.Event, 1)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(events, nil) }()
	events <- runner.Event{Kind: runner.ResultRecorded, State: stateWithRows(base, 3)}
	testutil.Eventually(t, 5*time.Second, "3 rows written", func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), "| 2 | 52 |")
	})
	stale, _ := os.ReadFile(path)
	events <- runner.Event{Kind: runner.ResultRecorded, State: stateWithRows(base, 7)}
	testutil.Eventually(t, 5*time.Second, "7 rows written", func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), "| 6 | 56 |")
	})
	tmp := path + ".tmp"
	os.WriteFile(tmp, append(stale, []byte("a line of mine\n")...), 0o644)
	os.Rename(tmp, path)
	saved := time.Now()
	if !testutil.Within(5*time.Second, func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), "| 6 | 56 |") && strings.Contains(string(b), "a line of mine\n")
	}) {
		b, _ := os.ReadFile(path)
		t.Fatalf("the stale save was not repaired:\n%s", b)
	}
	if d := time.Since(saved); d > 4*time.Second {
		t.Errorf("repaired %s after the save; want within quiet (3 s) and a second", d.Round(time.Millisecond))
	}
	close(events)
	<-done
}
