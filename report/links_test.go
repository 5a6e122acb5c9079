package report

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/report/mdfile"
	"github.com/greenlight-run/greenlight/runner"
)

// userSaves appends a line to the file as an editor saving by rename would.
func userSaves(t *testing.T, path, line string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".swp"
	if err := os.WriteFile(tmp, append(b, line+"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestSymlinkedResultsFileStaysALink: report: out.md, a symlink into the
// user's notes repository: the link stays a link and the notes file gets
// every write, the user's lines kept.
func TestSymlinkedResultsFileStaysALink(t *testing.T) {
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes-repo", "bench.md")
	os.MkdirAll(filepath.Dir(notes), 0o755)
	os.WriteFile(notes, []byte("# my notes\n\n"), 0o644)
	link := filepath.Join(dir, "run", "out.md")
	os.MkdirAll(filepath.Dir(link), 0o755)
	if err := os.Symlink("../notes-repo/bench.md", link); err != nil {
		t.Fatal(err)
	}
	w := newTestWriter(t, link)
	st := fullState(w.plan)
	if err := w.Write(st); err != nil {
		t.Fatal(err)
	}
	userSaves(t, notes, "a finding")
	if err := w.Write(stateWithRows(st, 3)); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(link)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("out.md is no longer a symlink: %v %v", fi.Mode(), err)
	}
	got := string(must(os.ReadFile(notes)))
	if !strings.Contains(got, "<!-- greenlight:begin header -->") || !strings.HasPrefix(got, "# my notes\n") || !strings.Contains(got, "a finding\n") {
		t.Errorf("the notes file the link points to was not written, or lost the user's lines:\n%s", got)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "run", ".out.md.greenlight-*")); len(left) > 0 {
		t.Errorf("temporary files left beside the link: %v", left)
	}
}

// TestDanglingSymlinkMakesItsFile: a link whose file does not exist yet
// gets the file made where it points.
func TestDanglingSymlinkMakesItsFile(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "out.md")
	os.Symlink("real.md", link)
	w := newTestWriter(t, link)
	if err := w.Write(fullState(w.plan)); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced by a file")
	}
	if !strings.Contains(string(must(os.ReadFile(filepath.Join(dir, "real.md")))), "greenlight:begin header") {
		t.Error("the file the link names was not written")
	}
}

// TestHardLinkedFileWrittenInPlace: a results file with a second name is
// written in place, so both names see every write; said once.
func TestHardLinkedFileWrittenInPlace(t *testing.T) {
	dir := t.TempDir()
	path, other := filepath.Join(dir, "r.md"), filepath.Join(dir, "copy.md")
	os.WriteFile(path, []byte("# my notes\n"), 0o644)
	if err := os.Link(path, other); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	w := newTestWriter(t, path)
	st := fullState(w.plan)
	err := w.Write(st)
	if err == nil || !strings.Contains(err.Error(), "hard link") {
		t.Errorf("the hard link is not said: %v", err)
	}
	userSaves(t, other, "typed under the other name") // breaks the link: a rename
	os.Remove(other)
	os.Link(path, other)
	os.WriteFile(other, append(must(os.ReadFile(other)), "in place under the other name\n"...), 0o644)
	if err := w.Write(stateWithRows(st, 5)); err != nil {
		t.Errorf("said twice: %v", err)
	}
	a, b := string(must(os.ReadFile(path))), string(must(os.ReadFile(other)))
	if a != b || !strings.Contains(a, "in place under the other name\n") || !strings.Contains(a, "greenlight:begin header") {
		t.Errorf("the two names differ or lost a line:\n%s\n----\n%s", a, b)
	}
}

// TestVersionsKept: each version of the user's that a write replaced is
// in the state dir, bounded, listed oldest first; a deleted file's last
// content is kept too.
func TestVersionsKept(t *testing.T) {
	dir := t.TempDir()
	path, state := filepath.Join(dir, "r.md"), filepath.Join(dir, "state")
	os.WriteFile(path, []byte("# my notes\n"), 0o644)
	w := NewWriter(path, testPlan(t), testEnv(), fakeGPUs{}, state)
	st := fullState(w.plan)
	w.Write(st)
	for i := range 3 {
		userSaves(t, path, "finding "+string(rune('a'+i)))
		if err := w.Write(stateWithRows(st, i+1)); err != nil {
			t.Fatal(err)
		}
	}
	list, err := mdfile.ListVersions(state)
	if err != nil || len(list) < 4 { // the first file, then one per save
		t.Fatalf("versions kept: %d, %v", len(list), err)
	}
	last := string(must(os.ReadFile(list[len(list)-1].Path)))
	if !strings.HasSuffix(last, "finding c\n") || list[len(list)-1].Why != mdfile.KeptReplaced {
		t.Errorf("the newest version is not the user's last save (%s):\n%s", list[len(list)-1].Why, last)
	}
	os.Remove(path)
	w.Write(st)
	list, _ = mdfile.ListVersions(state)
	if v := list[len(list)-1]; v.Why != mdfile.KeptDeleted || !strings.Contains(string(must(os.ReadFile(v.Path))), "finding c\n") {
		t.Errorf("a deleted file's last content is not kept: %+v", v)
	}
	// Bounded: the last mdfile.VersionsKept.
	for i := range mdfile.VersionsKept + 20 {
		w.file.KeepVersion(strings.Repeat("x", i+1))
	}
	list, _ = mdfile.ListVersions(state)
	if len(list) != mdfile.VersionsKept || list[len(list)-1].Size != mdfile.VersionsKept+20 {
		t.Errorf("%d versions kept (want %d), the newest of %d bytes", len(list), mdfile.VersionsKept, list[len(list)-1].Size)
	}
}

// TestUnwritableResultsFile: a directory at the path, a read-only file and
// a removed folder are each said in one line; results go on to the CSV;
// the file is written whole again, the user's lines in it, once it can be.
func TestUnwritableResultsFile(t *testing.T) {
	cases := []struct {
		name         string
		break_, mend func(path string)
		csvGoesOn    bool
	}{
		{"directory", func(p string) {
			// Swapped in at once (renameat2's exchange): a remove, then a
			// mkdir, leaves a moment in which a write sees the file
			// deleted and makes it new, and the mkdir then fails.
			dir := p + ".dir"
			if err := os.Mkdir(dir, 0o755); err != nil {
				panic(err)
			}
			if err := unix.Renameat2(unix.AT_FDCWD, dir, unix.AT_FDCWD, p, unix.RENAME_EXCHANGE); err != nil {
				panic(err)
			}
			os.Remove(dir) // the file, now under the folder's old name
		}, func(p string) { os.Remove(p) }, true},
		{"read-only", func(p string) { os.Chmod(p, 0o444) }, func(p string) { os.Chmod(p, 0o644) }, true},
		{"folder removed", func(p string) {
			// Gone at once (moved away, then removed): a removal that takes
			// the file first and the folder after leaves a moment in which a
			// write sees the file deleted, and a deleted results file is made
			// new (its text kept among the versions), so the user's lines
			// would rightly not come back.
			gone := filepath.Dir(p) + ".gone"
			if err := os.Rename(filepath.Dir(p), gone); err != nil {
				panic(err)
			}
			os.RemoveAll(gone)
		}, func(p string) { os.MkdirAll(filepath.Dir(p), 0o755) }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out", "r.md")
			os.MkdirAll(filepath.Dir(path), 0o755)
			os.WriteFile(path, []byte("# my notes\nkeep me\n"), 0o644)
			w := newTestWriter(t, path)
			st := fullState(w.plan)
			events := make(chan runner.Event)
			var mu sync.Mutex
			var said []string
			done := make(chan struct{})
			go func() {
				w.Run(events, func(err error) { mu.Lock(); said = append(said, err.Error()); mu.Unlock() })
				close(done)
			}()
			send := func(n int) {
				events <- runner.Event{Kind: runner.ResultRecorded, State: stateWithRows(st, n)}
			}
			send(1)
			eventually(t, func() bool { return strings.Contains(string(must(os.ReadFile(path))), "greenlight:begin header") })
			before := string(must(os.ReadFile(path)))
			c.break_(path)
			for n := 2; n <= 6; n++ {
				send(n)
			}
			csv := filepath.Join(filepath.Dir(path), "r.bench.csv")
			if c.csvGoesOn {
				// Row i=5 of step 1 is the sixth result: written meanwhile.
				eventually(t, func() bool {
					b, _ := os.ReadFile(csv)
					return strings.Contains(string(b), "\n1,2026-12-02T09:00:00Z,5,")
				})
			}
			// Said at a write after the trouble began (a write in flight
			// as the folder went may have raced the removal): results go on.
			n := 7
			eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				if len(said) == 0 {
					n++
					mu.Unlock()
					send(n)
					mu.Lock()
				}
				return len(said) > 0
			})
			if c.name == "read-only" && string(must(os.ReadFile(path))) != before {
				t.Error("a read-only results file was written")
			}
			c.mend(path)
			send(n + 1)
			eventually(t, func() bool {
				b, _ := os.ReadFile(path)
				return strings.Contains(string(b), "keep me\n") && strings.Contains(string(b), "**Status:**")
			})
			close(events)
			<-done
			mu.Lock()
			defer mu.Unlock()
			var unwritable int
			for _, s := range said {
				if strings.Contains(s, "written whole again once") {
					unwritable++
				}
			}
			if unwritable != 1 || !strings.Contains(said[len(said)-1], "is written whole again") {
				t.Errorf("want the trouble said once, then that it is written whole again; said:\n%s", strings.Join(said, "\n"))
			}
		})
	}
}

// TestLateWriteMergedWithoutAnotherResult: an append that lands in a file
// a write displaced is merged at once (fsnotify on the held file), not
// only when the next result comes.
func TestLateWriteMergedWithoutAnotherResult(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.md")
	os.WriteFile(path, []byte("# my notes\n"), 0o644)
	w := newTestWriter(t, path)
	st := fullState(w.plan)
	events := make(chan runner.Event, 1)
	done := make(chan struct{})
	go func() { w.Run(events, nil); close(done) }()
	defer func() { close(events); <-done }()
	shell, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0) // `>>` opened before the write
	if err != nil {
		t.Fatal(err)
	}
	events <- runner.Event{Kind: runner.ResultRecorded, State: stateWithRows(st, 1)}
	eventually(t, func() bool { return strings.Contains(string(must(os.ReadFile(path))), "greenlight:begin header") })
	shell.WriteString("late note\n")
	shell.Close()
	eventually(t, func() bool { return strings.Contains(string(must(os.ReadFile(path))), "late note\n") })
}

// TestStalledEditorAtTheEnd: an editor truncates the file, stalls 1.5 s,
// then writes, while the campaign's last write and its flush run: the
// line it saves is in the file when the writer is done.
func TestStalledEditorAtTheEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.md")
	os.WriteFile(path, []byte("# my notes\n"), 0o644)
	w := newTestWriter(t, path)
	st := fullState(w.plan)
	if err := w.Write(st); err != nil {
		t.Fatal(err)
	}
	text := string(must(os.ReadFile(path))) + "the last word\n"
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(1500 * time.Millisecond)
		f.WriteString(text)
		f.Close()
	}()
	if err := w.Write(stateWithRows(st, 4)); err != nil && !errors.Is(err, mdfile.ErrNoSwap) {
		t.Fatal(err)
	}
	w.Flush()
	got := string(must(os.ReadFile(path)))
	if !strings.Contains(got, "the last word\n") || !strings.HasPrefix(got, "# my notes\n") {
		t.Errorf("the stalled editor's save was lost:\n%s", got)
	}
}

// eventually waits up to 10 s for cond, failing the test if it never holds.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, "the condition", cond)
}

// TestLateLineSurvivesAStaleInPlaceSave: a line appended to a file a write
// had just displaced is merged into the new file; an editor then saves in
// place over that new file the text it read before (without the line):
// the next write puts the line back.
func TestLateLineSurvivesAStaleInPlaceSave(t *testing.T) {
	w, ed, base := newEditedFile(t)
	path := ed.path
	shell, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0) // `>>`, opened before the write
	if err != nil {
		t.Fatal(err)
	}
	read := string(must(os.ReadFile(path))) // what the editor read
	if err := w.Write(stateWithRows(base, 2)); err != nil {
		t.Fatal(err)
	}
	shell.WriteString("late line\n")
	shell.Close()
	if err := w.Write(stateWithRows(base, 3)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(must(os.ReadFile(path))), "late line\n") {
		t.Fatal("the late line was not merged")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0) // the editor saves in place what it read, and its own line
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(read + "editor line\n")
	f.Close()
	if err := w.Write(stateWithRows(base, 4)); err != nil {
		t.Fatal(err)
	}
	got := string(must(os.ReadFile(path)))
	if strings.Count(got, "late line\n") != 1 || strings.Count(got, "editor line\n") != 1 {
		t.Errorf("want the late line and the editor's line once each:\n%s", got)
	}
}
