package mdfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// fileState is what the writer knows of the results file between writes.
type fileState struct {
	ours     fileID // the file we put in place last
	out      string // what we wrote last: the user's text as we last merged it
	held     []heldFile
	noSwap   bool // the filesystem refused to swap; said once
	saidOnce bool
	linkSaid bool // a hard-linked file is written in place; said once
	away     bool // the last write could not reach the file (Unwritable)
	// What came late into displaced files and is not yet in a file we put
	// in place: kept across writes, so a write that gives up (the file
	// keeps changing) loses none of it.
	carried    string
	rewrites   []lateRewrite // displaced files rewritten, oldest first, with what each was edited from
	injected   []string      // late lines put in place, watched for a save that drops them
	injectedAt time.Time     // when
	exposed    []exposure    // our file stood at the path a moment before a save was put back (held.go)
	versions   *versions

	watch   *fsnotify.Watcher // the held files, by /proc/self/fd/N
	changed chan struct{}     // a held file changed
	kick    func()            // asks for a write (set by Writer.Run)
	mu      sync.Mutex        // guards kick against the watch's goroutine
}

func ensureNL(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		return s + "\n"
	}
	return s
}

// write merges the current state into the file. It reads the file once it
// has settled and does not look mid-save, merges our blocks into the
// user's text, writes that beside it, checks the file did not change
// meanwhile, and swaps the new one in. The swap hands back whatever stood
// there at that instant: if it is not what we merged from, the user saved
// in the moment between the check and the swap, so we swap straight back
// and merge again from their file. Files we displaced are held open and
// watched for writes that land in them late; every version of the user's
// that a write replaces is kept in the state dir.
func (f *File) write(tg target) error {
	fl := &f.st
	path := tg.path
	at, err := readUser(path, fl.ours, fl.out)
	if err != nil {
		return err
	}
	fl.recall(at)
	src := at // what the user's text is taken from
	switch {
	case at.exists:
	case fl.away && fl.out != "":
		// Back after the file could not be written: whole again, with the
		// user's text as we last had it.
		src = snapshot{data: fl.out, exists: true}
	case fl.out != "":
		fl.versions.keep(fl.out, KeptDeleted) // deleted: recoverable
	}
	if tg.links > 1 {
		return f.writeInPlace(path, at, src)
	}
	f.hook("read")
	start := time.Now()
	for try := 0; try < maxTries; try++ {
		appended, rws, wait := fl.late()
		fl.carried += appended
		fl.rewrites = append(fl.rewrites, rws...)
		if !wait.IsZero() {
			if !fl.waitHeld(wait, start) {
				return fmt.Errorf("%s: a file greenlight replaced is still being written; will try again", filepath.Base(f.path))
			}
			continue
		}
		src = fl.unexposed(src)
		base := src
		for _, rw := range fl.rewrites {
			base = fl.withRewrite(base, rw.snap, rw.base)
		}
		out := f.compose(base, fl.carried)
		if out == at.data && at.exists {
			fl.out = out
			return nil
		}
		tmp, id, err := f.temp(path, out)
		if err == nil {
			f.mine.Store(&id) // before the swap: its own event must not ask for another write
		}
		if errors.Is(err, fs.ErrNotExist) {
			fl.away = true
			return folderGone(f.path, filepath.Dir(path))
		}
		if err != nil {
			return fmt.Errorf("%s not updated (the old one is intact): %w", filepath.Base(f.path), err)
		}
		f.hook("temp")
		if h := f.held(); h != nil {
			// Opened in an editor since the look before this write (an
			// open answered a moment late, or none for a while): nothing
			// lands under it, this write included. Looked at before the
			// check that the file is as read, so the look's time does not
			// widen the moment between that check and the swap.
			os.Remove(tmp)
			return h
		}
		if changed(path, at) {
			os.Remove(tmp)
			if at, err = readUser(path, fl.ours, fl.out); err != nil {
				return err
			}
			fl.recall(at)
			src = at
			continue
		}
		f.hook("swap")
		displaced, old, err := f.swap(path, tmp, at)
		f.hook("swapped")
		if errors.Is(err, fs.ErrExist) { // created or changed meanwhile: merge with it
			os.Remove(tmp)
			if at, err = readUser(path, fl.ours, fl.out); err != nil {
				return err
			}
			src = at
			continue
		}
		if err != nil {
			os.Remove(tmp)
			return err
		}
		if displaced != nil && displaced.data != at.data {
			// Saved in the instant before the swap: put theirs back at
			// once, then merge from it; unless the path no longer holds
			// ours (saved over it too: an editor may be mid-save on what
			// it read there, and a swap back would pull the file from
			// under it). Then the displaced file is held as what we
			// merged from, so that its change is merged as a late write.
			if !stillOurs(path, id) {
				fl.hold(old, at, at.data)
				os.Remove(tmp)
				if at, err = readUser(path, fl.ours, fl.out); err != nil {
					return err
				}
				src = at
				continue
			}
			if back, ok := f.undo(path, tmp, id); ok {
				old.Close() // it is in place again: read it afresh
				fl.expose(out, displaced.data)
				if at, err = readUser(path, fl.ours, fl.out); err != nil {
					return err
				}
				src = at
				switch {
				case back == nil:
				case isAppend(out, back.data): // appended to ours in that instant
					fl.carried += ensureNL(back.data[len(out):])
				default: // saved over ours in that instant too: merged with theirs
					fl.rewrites = append(fl.rewrites, lateRewrite{snap: *back, base: out})
				}
				continue
			}
			// No swap back on this filesystem: ours stays, and the save it
			// displaced is merged as a late write into a held file.
			fl.hold(old, at, at.data)
			at = snapshot{data: out, exists: true, id: id}
			src = at
			os.Remove(tmp)
			fl.ours, fl.out = id, out
			continue
		}
		if displaced != nil && displaced.data != fl.out {
			fl.versions.keep(displaced.data, KeptReplaced)
		}
		if old != nil {
			// An editor that rewrites the displaced file read it whole
			// before; if it was displaced cut short (taken as a deletion
			// after a long stall), its rewrite supersedes what we made
			// of the cut: the merge's base is then our new file.
			base := displaced.data
			if displaced.data == "" || len(displaced.data) < len(fl.out) {
				base = out
			}
			fl.hold(old, *displaced, base)
		}
		os.Remove(tmp) // now the name of the file we displaced, held open
		fl.ours, fl.out = id, out
		fl.remember(fl.carried)
		fl.carried, fl.rewrites, fl.away = "", nil, false
		syncDir(filepath.Dir(path))
		at = snapshot{data: out, exists: true, id: id}
		if !fl.lateWrites() {
			return f.noSwapNote()
		}
		src = at
	}
	return fmt.Errorf("%s keeps changing; will try again", f.path)
}

// writeInPlace writes a file that has other names (a hard link) over its
// own bytes, so that every name sees it; said once, since a save landing
// in the same instant may be lost.
func (mf *File) writeInPlace(path string, at, src snapshot) error {
	fl := &mf.st
	out := mf.compose(src, "")
	if out == at.data {
		fl.out = out
		return nil
	}
	if h := mf.held(); h != nil {
		return h // opened in an editor since the look before this write
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if changed(path, at) {
		return fmt.Errorf("%s changed while written; will try again", filepath.Base(path))
	}
	if at.data != fl.out {
		fl.versions.keep(at.data, KeptReplaced)
	}
	_, err = f.WriteAt([]byte(out), 0)
	if err == nil {
		err = f.Truncate(int64(len(out)))
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		return fmt.Errorf("%s not fully written in place: %w", filepath.Base(path), err)
	}
	if fi, err := f.Stat(); err == nil {
		fl.ours = idOf(fi)
	}
	fl.out, fl.away = out, false
	if !fl.linkSaid {
		fl.linkSaid = true
		return fmt.Errorf("%s has other names (a hard link): written in place so that every name sees it, rather than swapped; an edit saved in the same instant as a write may be lost", mf.path)
	}
	return nil
}

// stillOurs reports whether path holds the file we put there (id).
func stillOurs(path string, id fileID) bool {
	fi, err := os.Stat(path)
	return err == nil && idOf(fi) == id
}

// changed reports whether the file at path is no longer the one read.
func changed(path string, at snapshot) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return at.exists
	}
	return !at.exists || idOf(fi) != at.id
}

// undo swaps back after a swap that displaced a save: the user's file is
// at path again, ours under tmp, removed. back is what the second swap
// displaced if it was not ours (a save in that instant too).
func (mf *File) undo(path, tmp string, ours fileID) (back *snapshot, ok bool) {
	if mf.st.noSwap || exchange(tmp, path) != nil {
		return nil, false
	}
	defer os.Remove(tmp)
	f, err := os.Open(tmp)
	if err != nil {
		return nil, true
	}
	// Ours stood at the path for a moment: a shell that opened it then
	// (`>>`) may write into it later, so it is held like any file we
	// displaced.
	snap := settleOpen(f)
	mf.st.hold(f, snap, snap.data)
	if snap.id == ours {
		return nil, true
	}
	return &snap, true
}

// settleOpen reads an open file once it stops changing (at most 2 s).
func settleOpen(f *os.File) snapshot {
	deadline := time.Now().Add(2 * time.Second)
	for {
		snap, stable, err := readOpen(f, fileID{})
		if err != nil || stable || time.Now().After(deadline) {
			return snap
		}
		time.Sleep(settle / 2)
	}
}

// hook lets tests act at the instants a save could land; nil in use.
func (f *File) hook(at string) {
	if f.testHook != nil {
		f.testHook(at)
	}
}

// compose is the file with our blocks merged into src's text.
func (f *File) compose(src snapshot, appended string) string {
	content := src.data
	if appended != "" {
		content = ensureNL(content) + appended
	}
	if !src.exists && content == "" {
		content = "# " + f.title + "\n\n"
	}
	if _, damaged := parse(content); len(damaged) > 0 {
		for _, d := range damaged {
			if !contains(f.remade, d) {
				f.remade = append(f.remade, d)
			}
		}
	}
	b := f.blocks()
	out, _ := merge(content, b.Bodies, b.Order)
	return out
}

// temp writes out beside the file at path, with the file's mode.
func (f *File) temp(path, out string) (string, fileID, error) {
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := writeTemp(path, []byte(out), mode, f.st.out == "")
	if err != nil {
		return "", fileID{}, err
	}
	fi, err := os.Stat(tmp)
	if err != nil {
		os.Remove(tmp)
		return "", fileID{}, err
	}
	return tmp, idOf(fi), nil
}

// swap puts tmp at path and returns what it displaced, open, or nil when
// nothing was there. Where the filesystem cannot swap, it renames tmp over
// the file if the file still holds what was read (a save landing in the
// instant between that check and the rename is lost: said once).
func (mf *File) swap(path, tmp string, at snapshot) (*snapshot, *os.File, error) {
	if !mf.st.noSwap {
		err := exchange(tmp, path)
		switch {
		case errors.Is(err, ErrNoSwap):
			mf.st.noSwap = true
			return mf.swap(path, tmp, at)
		case err != nil:
			return nil, nil, err
		}
		// Renamed into an empty place, or swapped: tmp tells which.
		if _, serr := os.Lstat(tmp); serr != nil {
			return nil, nil, nil
		}
		f, err := os.Open(tmp)
		if err != nil {
			return nil, nil, err
		}
		snap := settleOpen(f)
		return &snap, f, nil
	}
	now, err := readUser(path, mf.st.ours, mf.st.out)
	if err != nil {
		return nil, nil, err
	}
	if now.exists != at.exists || now.data != at.data {
		return nil, nil, fs.ErrExist // changed: merge again from it
	}
	f, _ := os.Open(path)
	if err := os.Rename(tmp, path); err != nil {
		if f != nil {
			f.Close()
		}
		return nil, nil, err
	}
	if f == nil {
		return nil, nil, nil
	}
	return &now, f, nil
}

func (f *File) noSwapNote() error {
	if !f.st.noSwap || f.st.saidOnce {
		return nil
	}
	f.st.saidOnce = true
	return fmt.Errorf("results file written, but %w: an edit saved in the same instant as a greenlight write may be lost", ErrNoSwap)
}
