package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// fileState is what the writer knows of the results file between writes.
type fileState struct {
	ours     fileID // the file we put in place last
	held     []heldFile
	noSwap   bool // the filesystem refused to swap; said once
	saidOnce bool
}

// heldFile is a file we displaced, kept open: a writer that opened it
// before the swap (`echo note >> results.md`, an editor rewriting in
// place) still writes into it, and what it writes must not be lost.
type heldFile struct {
	f     *os.File
	data  string // its content, as merged
	id    fileID
	since time.Time // last change seen, or when displaced
}

const (
	heldFor  = 10 * time.Second // a displaced file quiet this long is let go
	heldMax  = 256
	maxTries = 50
)

// lateWrites reports whether a displaced file changed since.
func (fs *fileState) lateWrites() bool {
	for _, h := range fs.held {
		if fi, err := h.f.Stat(); err == nil && idOf(fi) != h.id {
			return true
		}
	}
	return false
}

// late collects what was written into displaced files after we took them
// in: text appended to one (a line added at its end) is returned as
// appended; a file rewritten in place is the user's newest version and is
// returned as latest.
func (fs *fileState) late() (appended string, latest *snapshot) {
	keep := fs.held[:0]
	for i, h := range fs.held {
		fi, err := h.f.Stat()
		if err == nil && idOf(fi) != h.id {
			snap := settleOpen(h.f, fileID{})
			if strings.HasPrefix(snap.data, h.data) {
				appended += ensureNL(snap.data[len(h.data):])
			} else {
				s := snap
				latest = &s
				appended = "" // the rewrite holds what it keeps
			}
			h.data, h.id, h.since = snap.data, snap.id, time.Now()
		}
		if time.Since(h.since) > heldFor || len(fs.held)-i > heldMax {
			h.f.Close()
			continue
		}
		keep = append(keep, h)
	}
	fs.held = keep
	return appended, latest
}

func (fs *fileState) hold(f *os.File, snap snapshot) {
	fs.held = append(fs.held, heldFile{f: f, data: snap.data, id: snap.id, since: time.Now()})
}

// settleOpen reads an open file once it stops changing (at most 2 s); the
// file we wrote last (ours) is settled as it is.
func settleOpen(f *os.File, ours fileID) snapshot {
	deadline := time.Now().Add(2 * time.Second)
	for {
		snap, stable, err := readOpen(f, ours)
		if err != nil || stable || time.Now().After(deadline) {
			return snap
		}
		time.Sleep(settle / 2)
	}
}

func ensureNL(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		return s + "\n"
	}
	return s
}

// write merges the current state into the file. It reads the file once it
// has settled, merges our blocks into the user's text, writes that beside
// it, checks the file did not change meanwhile, and swaps the new one in.
// The swap hands back whatever stood there at that instant: if it is not
// what we merged from, the user saved in the moment between the check and
// the swap, so we swap straight back and merge again from their file.
// Files we displaced are held open for writes that land in them late.
func (w *Writer) write() error {
	at, err := readSettled(w.path, w.file.ours, 2*time.Second)
	if err != nil {
		return err
	}
	src := at // what the user's text is taken from
	w.hook("read")
	for try := 0; try < maxTries; try++ {
		appended, latest := w.file.late()
		if latest != nil {
			src = *latest
		}
		out := w.compose(src, appended)
		if out == at.data && at.exists {
			return nil
		}
		tmp, id, err := w.temp(out)
		if err != nil {
			return fmt.Errorf("%s not updated (the old one is intact): %w", filepath.Base(w.path), err)
		}
		w.hook("temp")
		if changed(w.path, at) {
			os.Remove(tmp)
			if at, err = readSettled(w.path, w.file.ours, 2*time.Second); err != nil {
				return err
			}
			src = at
			continue
		}
		w.hook("swap")
		displaced, old, err := w.swap(tmp, at)
		w.hook("swapped")
		if errors.Is(err, fs.ErrExist) { // created or changed meanwhile: merge with it
			os.Remove(tmp)
			if at, err = readSettled(w.path, w.file.ours, 2*time.Second); err != nil {
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
			// once, then merge from it.
			if back, ok := w.undo(tmp, id); ok {
				old.Close() // it is in place again: read it afresh
				if at, err = readSettled(w.path, w.file.ours, 2*time.Second); err != nil {
					return err
				}
				src = at
				switch {
				case back == nil:
				case strings.HasPrefix(back.data, out): // appended to ours in that instant
					src.data = ensureNL(src.data) + back.data[len(out):]
				default: // saved over ours in that instant too: the newest
					src = *back
				}
				continue
			}
			w.file.hold(old, *displaced)
			src, at = *displaced, snapshot{data: out, exists: true, id: id}
			os.Remove(tmp)
			continue
		}
		if old != nil {
			w.file.hold(old, *displaced)
		}
		os.Remove(tmp) // now the name of the file we displaced, held open
		w.file.ours = id
		syncDir(filepath.Dir(w.path))
		at = snapshot{data: out, exists: true, id: id}
		if !w.file.lateWrites() {
			return w.noSwapNote()
		}
		src = at
	}
	return fmt.Errorf("%s keeps changing; will try again", w.path)
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
func (w *Writer) undo(tmp string, ours fileID) (back *snapshot, ok bool) {
	if w.file.noSwap || exchange(tmp, w.path) != nil {
		return nil, false
	}
	defer os.Remove(tmp)
	f, err := os.Open(tmp)
	if err != nil {
		return nil, true
	}
	fi, err := f.Stat()
	if err == nil && idOf(fi) == ours {
		f.Close()
		return nil, true
	}
	snap := settleOpen(f, fileID{})
	w.file.hold(f, snap)
	return &snap, true
}

// hook lets tests act at the instants a save could land; nil in use.
func (w *Writer) hook(at string) {
	if w.testHook != nil {
		w.testHook(at)
	}
}

// compose is the file with our blocks merged into src's text.
func (w *Writer) compose(src snapshot, appended string) string {
	content := src.data
	if appended != "" {
		content = ensureNL(content) + appended
	}
	if !src.exists && content == "" {
		content = "# " + w.plan.Name + "\n\n"
	}
	if _, damaged := parse(content); len(damaged) > 0 {
		for _, d := range damaged {
			if !contains(w.remade, d) {
				w.remade = append(w.remade, d)
			}
		}
	}
	bodies, order := w.render(w.st)
	out, _ := merge(content, bodies, order)
	return out
}

// temp writes out beside the file, with the file's mode.
func (w *Writer) temp(out string) (string, fileID, error) {
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(w.path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := writeTemp(w.path, []byte(out), mode)
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

// swap puts tmp at the file's path and returns what it displaced, open,
// or nil when nothing was there. Where the filesystem cannot swap, it
// renames tmp over the file if the file still holds what was read (a save
// landing in the instant between that check and the rename is lost: said
// once).
func (w *Writer) swap(tmp string, at snapshot) (*snapshot, *os.File, error) {
	if !w.file.noSwap {
		err := exchange(tmp, w.path)
		switch {
		case errors.Is(err, errNoSwap):
			w.file.noSwap = true
			return w.swap(tmp, at)
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
		snap := settleOpen(f, w.file.ours)
		return &snap, f, nil
	}
	now, err := readSettled(w.path, w.file.ours, 2*time.Second)
	if err != nil {
		return nil, nil, err
	}
	if now.exists != at.exists || now.data != at.data {
		return nil, nil, fs.ErrExist // changed: merge again from it
	}
	f, _ := os.Open(w.path)
	if err := os.Rename(tmp, w.path); err != nil {
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

func (w *Writer) noSwapNote() error {
	if !w.file.noSwap || w.file.saidOnce {
		return nil
	}
	w.file.saidOnce = true
	return fmt.Errorf("results file written, but %w: an edit saved in the same instant as a greenlight write may be lost", errNoSwap)
}
