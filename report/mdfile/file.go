// Package mdfile keeps one markdown file current for its owner while a
// person edits it: the owner's blocks between their markers
// (<!-- greenlight:begin ID --> ... <!-- greenlight:end ID -->), every
// other line the person's, behind one Save.
//
// It promises: every write is whole (a temp file swapped in, the folder
// fsynced); a save that lands while a write runs is merged, never lost
// (swapped back, or taken from the file it displaced); a version that
// looks mid-save is not merged until it settles; every version of the
// person's a write replaced is kept in the state dir; a symlink stays a
// symlink, a hard link is written in place. A file that cannot be written
// (a directory in its place, read-only, its folder gone) is an
// *Unwritable, and the next Save after it is writable again says
// *Restored.
package mdfile

import (
	"errors"
	"os"
	"sync/atomic"
	"time"
)

// Blocks are the owner's blocks: each one's body by id, and their order
// in a new file (a block the file lacks goes after the one before it).
type Blocks struct {
	Bodies map[string]string
	Order  []string
}

// File is one markdown file kept for its owner.
type File struct {
	path   string
	title  string        // a new file's heading
	blocks func() Blocks // rendered at each merge: a save may have come between
	st     fileState
	remade []string               // blocks whose markers were damaged or deleted, written again at the end
	hold   hold                   // an editor that has the file open (holds.go)
	mine   atomic.Pointer[fileID] // the file the last write put in place, for watchSaves

	testHook func(at string)
}

// Open keeps the file at path; stateDir keeps the versions a write
// replaced ("" keeps none); title heads a file made new.
func Open(path, stateDir, title string) *File {
	f := &File{path: path, title: title}
	f.st.versions = newVersions(stateDir)
	return f
}

// Path is the file.
func (f *File) Path() string { return f.path }

// Remade are the blocks whose markers were found damaged or deleted (they
// were written again at the file's end): for the owner to say so.
func (f *File) Remade() []string { return f.remade }

// OnChange is called when a file a write displaced is written into late,
// to ask for a Save that merges it; set it before the first Save.
func (f *File) OnChange(kick func()) {
	f.st.mu.Lock()
	f.st.kick = kick
	f.st.mu.Unlock()
	watchOpens(f.path, kick)
	go f.watchSaves(kick)
}

// Check says whether the file can be written now: nil, or an
// *Unwritable (remembered: the next Save that reaches it says *Restored).
func (f *File) Check() error {
	_, err := resolve(f.path, f.st.out == "")
	if _, ok := err.(*Unwritable); ok {
		f.st.away = true
	}
	return err
}

// Save merges blocks into the file as the person has it now. While an
// editor has the file open it writes nothing there and says *Held (the
// preview beside it, PreviewOf, is written instead); the file is written
// once the editor lets go, at the next Save, which OnChange's kick asks for
// within a second.
func (f *File) Save(blocks func() Blocks) error {
	tg, err := resolve(f.path, f.st.out == "")
	if err != nil {
		if _, ok := err.(*Unwritable); ok {
			f.st.away = true
		}
		return err
	}
	f.blocks = blocks
	if held := f.held(); held != nil {
		f.writePreview()
		return held
	}
	err = f.write(tg)
	var held *Held
	if errors.As(err, &held) { // an editor opened it while this write was made
		f.writePreview()
		return err
	}
	os.Remove(PreviewOf(f.path)) // the file itself is current: no preview beside it
	return err
}

// lateWindow is how long after a swap a write into the displaced file is
// waited for at the end: an append opened just before the swap lands
// within microseconds; a few milliseconds cover a loaded machine.
const lateWindow = 5 * time.Millisecond

// Flush merges what was written late into a file a write replaced; call
// it last, after the last Save.
func (f *File) Flush() error {
	if f.blocks == nil {
		return nil
	}
	// An append that opened the file just before our last swap lands in
	// the file we displaced within moments: wait out those moments. A
	// file displaced while it looked cut short (an editor stalled between
	// its truncate and its write) is waited for a little longer, on its
	// fsnotify watch.
	if len(f.st.held) > 0 {
		time.Sleep(lateWindow - time.Since(f.st.held[len(f.st.held)-1].since))
	}
	for t := f.st.suspectUntil(); !f.st.lateWrites() && time.Now().Before(t); t = f.st.suspectUntil() {
		f.st.waitHeld(t, time.Now())
	}
	if !f.st.lateWrites() {
		return nil
	}
	tg, err := resolve(f.path, false)
	if err != nil {
		return err
	}
	return f.write(tg)
}

// KeepVersion keeps data as a version of the file, as a write that
// replaced it would (for tests of the bounds).
func (f *File) KeepVersion(data string) { f.st.versions.keep(data, KeptReplaced) }

// SetTestHook lets a test act at the instants a save could land ("read",
// "temp", "swap", "swapped").
func (f *File) SetTestHook(h func(at string)) { f.testHook = h }
