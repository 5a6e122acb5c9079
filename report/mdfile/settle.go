package mdfile

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// An editor that saves in place truncates the file, then writes it: on a
// busy machine the moments between can last a second, and a file read in
// them is empty or cut in half. Taken as the user's text, such a read
// drops every line after the cut (and the second half, landing later in
// the file we displaced, comes back as marker lines that re-pair with our
// blocks). So a version that looks mid-save is not merged until it has
// been left alone for quiet (3 s); a user who deleted their lines sees
// them deleted once the file has stayed without them that long.

// quiet is how long a version that looks mid-save must stay unchanged
// before it is taken as the user's deliberate text. An editor stalled a
// second between its truncate and its write, read a little over a second
// later on a machine whose every core was busy, lost three notes in
// TestStallingEditor at one second: three leave room for the reader's
// own delay on top of the editor's.
const quiet = 3 * time.Second

// waitMax bounds one write's wait for the file to settle: a file that
// keeps changing past it is tried again at the next write.
const waitMax = 30 * time.Second

// looksMidSave reports whether snap, a version that is not ours, may be
// an editor's save caught halfway: changed within quiet, and empty,
// shorter than the version it replaced (prev), or missing a block prev
// had whole.
func looksMidSave(snap snapshot, prev string) bool {
	if !snap.exists || time.Since(snap.id.mtime) >= quiet {
		return false
	}
	return snap.data == "" || len(snap.data) < len(prev) || missingBlock(snap.data, prev)
}

// missingBlock reports whether a block that is whole in prev is not whole
// in data.
func missingBlock(data, prev string) bool {
	if prev == "" {
		return false
	}
	have := map[string]bool{}
	segs, _ := parse(data)
	for _, s := range segs {
		have[s.id] = true
	}
	old, _ := parse(prev)
	for _, s := range old {
		if s.id != "" && !have[s.id] {
			return true
		}
	}
	return false
}

// waiter wakes a writer that waits for a file to settle: on any change in
// the file's folder (fsnotify), or at a deadline, whichever comes first.
type waiter struct {
	w     *fsnotify.Watcher
	start time.Time
}

func newWaiter(path string) *waiter {
	wt := &waiter{start: time.Now()}
	if w, err := fsnotify.NewWatcher(); err == nil {
		if w.Add(filepath.Dir(path)) == nil {
			wt.w = w
		} else {
			w.Close()
		}
	}
	return wt
}

// until waits for a change or for t; false once the writer has waited
// waitMax in all.
func (wt *waiter) until(t time.Time) bool {
	if time.Since(wt.start) > waitMax {
		return false
	}
	d := max(time.Until(t), time.Millisecond)
	timer := time.NewTimer(d)
	defer timer.Stop()
	if wt.w == nil { // no inotify: the deadline alone
		<-timer.C
		return true
	}
	select {
	case <-wt.w.Events:
	case <-wt.w.Errors:
	case <-timer.C:
	}
	return true
}

func (wt *waiter) close() {
	if wt != nil && wt.w != nil {
		wt.w.Close()
	}
}

// readUser reads the results file at path as the user left it: once it
// is settled (unchanged while read, untouched for settle, or ours) and
// does not look mid-save against prev (the last whole version). It waits
// on fsnotify between looks, however long the editor takes, up to waitMax.
func readUser(path string, ours fileID, prev string) (snapshot, error) {
	var wt *waiter
	defer func() { wt.close() }()
	for {
		f, err := os.Open(path)
		if os.IsNotExist(err) {
			return snapshot{}, nil
		}
		if err != nil {
			return snapshot{}, err
		}
		snap, stable, err := readOpen(f, ours)
		f.Close()
		if err != nil {
			return snapshot{}, err
		}
		next := time.Time{}
		switch {
		case !stable:
			next = snap.id.mtime.Add(settle)
		case snap.id != ours && looksMidSave(snap, prev):
			next = snap.id.mtime.Add(quiet)
		default:
			return snap, nil
		}
		if wt == nil {
			wt = newWaiter(path)
			continue // look again now that changes are watched
		}
		if !wt.until(next) {
			return snapshot{}, fmt.Errorf("%s keeps changing (an editor saving it for %v); will try again", filepath.Base(path), waitMax)
		}
	}
}
