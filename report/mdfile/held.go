package mdfile

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// The files a write displaced, held open and watched: what lands in them
// late (an append opened before the swap, an editor saving in place,
// stalled on a busy machine) is merged by the next write they ask for.

// heldFile is a file we displaced, kept open: a writer that opened it
// before the swap (`echo note >> results.md`, an editor saving in place,
// stalled on a busy machine) still writes into it, and what it writes
// must not be lost. Its changes are watched (fsnotify on the open file)
// and merged by a write they ask for.
type heldFile struct {
	f     *os.File
	data  string // its content, as merged
	base  string // what an editor that rewrites it most likely read: the base of the merge
	id    fileID
	since time.Time // last change seen, or when displaced
	// suspect: displaced while empty or shorter than what it replaced, as
	// an editor stalled between its truncate and its write leaves it; the
	// end of a campaign waits a moment for its write.
	suspect bool
}

const (
	heldFor = 10 * time.Second // a displaced file quiet this long is let go
	// heldMax bounds the displaced files held at once (each an open file
	// and a watch): a storm of saves on a busy machine displaces hundreds
	// in 10 s (200 in the storm test idle), and one let go early loses
	// what a writer stalled between its open and its write puts in it.
	heldMax  = 4096
	maxTries = 50
)

func (h heldFile) watchName() string { return fmt.Sprintf("/proc/self/fd/%d", h.f.Fd()) }

// lateWrites reports whether a displaced file changed since.
func (fl *fileState) lateWrites() bool {
	for _, h := range fl.held {
		if fi, err := h.f.Stat(); err == nil && idOf(fi) != h.id {
			return true
		}
	}
	return false
}

// isAppend tells text added at the end of a file (a shell's >>) from a
// rewrite of it: the old content whole at the start, and no block of ours
// in what was added.
func isAppend(old, now string) bool {
	return old != "" && strings.HasPrefix(now, old) && !strings.Contains(now[len(old):], "<!-- greenlight:")
}

// late collects what was written into displaced files since we took them
// in. Text appended to one is returned as appended. A rewrite of one is a
// version of the user's, returned among rewrites with what it was edited
// from, oldest first: each is merged (several displaced files rewritten
// between two writes of ours, on a busy machine, each hold a line of the
// user's; taking the newest alone lost the others'), unless it looks
// mid-save or unsettled: then wait says when to look again, and it is
// left for then.
func (fl *fileState) late() (appended string, rewrites []lateRewrite, wait time.Time) {
	keep := fl.held[:0]
	later := func(t time.Time) {
		if wait.IsZero() || t.Before(wait) {
			wait = t
		}
	}
	for i, h := range fl.held {
		fi, err := h.f.Stat()
		if err == nil && idOf(fi) != h.id {
			snap, stable, err := readOpen(h.f, fileID{})
			switch {
			case err != nil:
				keep = append(keep, h) // looked at again next time
				continue
			case !stable:
				later(snap.id.mtime.Add(settle))
				keep = append(keep, h)
				continue
			case isAppend(h.data, snap.data):
				appended += ensureNL(snap.data[len(h.data):])
				fl.versions.keep(snap.data, KeptLate)
			case looksMidSave(snap, h.data):
				later(snap.id.mtime.Add(quiet))
				keep = append(keep, h)
				continue
			default:
				rewrites = append(rewrites, lateRewrite{snap: snap, base: h.base})
				fl.versions.keep(snap.data, KeptLate)
			}
			h.data, h.base, h.id, h.since, h.suspect = snap.data, snap.data, snap.id, time.Now(), false
		}
		if time.Since(h.since) > heldFor || len(fl.held)-i > heldMax {
			fl.release(h)
			continue
		}
		keep = append(keep, h)
	}
	fl.held = keep
	if len(fl.held) == 0 && fl.watch != nil {
		fl.watch.Close()
		fl.watch = nil
	}
	slices.SortStableFunc(rewrites, func(a, b lateRewrite) int { return a.snap.id.mtime.Compare(b.snap.id.mtime) })
	return appended, rewrites, wait
}

// lateRewrite is a displaced file the user rewrote, and what the rewrite
// was most likely edited from: the base of its merge.
type lateRewrite struct {
	snap snapshot
	base string
}

// hold keeps a displaced file open and watches it.
func (fl *fileState) hold(f *os.File, snap snapshot, base string) {
	h := heldFile{f: f, data: snap.data, base: base, id: snap.id, since: time.Now(),
		suspect: snap.data == "" || len(snap.data) < len(fl.out)}
	fl.held = append(fl.held, h)
	if fl.watch == nil {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return // late writes are still merged at the next write
		}
		fl.watch = w
		if fl.changed == nil {
			fl.changed = make(chan struct{}, 1)
		}
		go fl.follow(w)
	}
	fl.watch.Add(h.watchName())
}

func (fl *fileState) release(h heldFile) {
	if fl.watch != nil {
		fl.watch.Remove(h.watchName())
	}
	h.f.Close()
}

// follow asks for a write whenever a held file changes.
func (fl *fileState) follow(w *fsnotify.Watcher) {
	for {
		select {
		case e, ok := <-w.Events:
			if !ok {
				return
			}
			if !e.Has(fsnotify.Write) && !e.Has(fsnotify.Chmod) {
				continue
			}
			select {
			case fl.changed <- struct{}{}:
			default:
			}
			fl.mu.Lock()
			kick := fl.kick
			fl.mu.Unlock()
			if kick != nil {
				kick()
			}
		case _, ok := <-w.Errors:
			if !ok {
				return
			}
		}
	}
}

// waitHeld waits for a held file to change, or until t; false past
// waitMax since start.
func (fl *fileState) waitHeld(t, start time.Time) bool {
	if time.Since(start) > waitMax {
		return false
	}
	timer := time.NewTimer(max(time.Until(t), time.Millisecond))
	defer timer.Stop()
	select {
	case <-fl.changed:
	case <-timer.C:
	}
	return true
}

// withRewrite is the user's text when a displaced file was rewritten (rw,
// edited from base) while the path has at: the two merged by lines against
// base; where they conflict, the newer, the other kept as a version.
func (fl *fileState) withRewrite(at, rw snapshot, base string) snapshot {
	if !at.exists {
		return rw
	}
	// Where both added lines at one place, the older save's come first;
	// on a tie (file times are coarse), the displaced file's: it was
	// opened before the swap that displaced it.
	older, newer := at.data, rw.data
	if !rw.id.mtime.After(at.id.mtime) {
		older, newer = rw.data, at.data
	}
	if m, ok := merge3(base, older, newer); ok {
		return snapshot{data: m, exists: true, id: at.id}
	}
	if rw.id.mtime.After(at.id.mtime) {
		fl.versions.keep(at.data, KeptOverrode)
		return rw
	}
	fl.versions.keep(rw.data, KeptOverrode)
	return at
}

// suspectUntil is when the last held file that may still get a stalled
// editor's write stops being waited for at the end of a campaign.
func (fl *fileState) suspectUntil() time.Time {
	var t time.Time
	for _, h := range fl.held {
		if h.suspect && h.since.Add(suspectFor).After(t) {
			t = h.since.Add(suspectFor)
		}
	}
	return t
}

// suspectFor is how long the end of a campaign waits for a write into a
// file displaced while it looked cut short.
const suspectFor = 3 * time.Second

// Lines that came late (appended to a displaced file) are in the file we
// put in place, but an editor may be in the middle of a save based on
// what it read before: it rewrites our file in place with its own text,
// which lacks them. So such lines are remembered for a while, and a
// version read from the path that lacks them gets them back (at its end),
// until one has been seen with them.

// injectedFor is how long late lines are watched for.
const injectedFor = heldFor

// remember notes the late lines of carried, put in place just now.
func (fl *fileState) remember(carried string) {
	for _, l := range strings.SplitAfter(carried, "\n") {
		if strings.TrimSpace(l) != "" {
			fl.injected = append(fl.injected, ensureNL(l))
		}
	}
	if carried != "" {
		fl.injectedAt = time.Now()
	}
}

// recall carries again the remembered late lines that a version read from
// the path lacks; once a version has them all, they are let go.
func (fl *fileState) recall(at snapshot) {
	if len(fl.injected) == 0 {
		return
	}
	if !at.exists || time.Since(fl.injectedAt) > injectedFor {
		fl.injected = nil
		return
	}
	var missing []string
	for _, l := range fl.injected {
		if !strings.HasPrefix(at.data, l) && !strings.Contains(at.data, "\n"+l) && !strings.Contains(fl.carried, l) {
			missing = append(missing, l)
		}
	}
	if len(missing) == 0 {
		fl.injected = nil
		return
	}
	fl.carried += strings.Join(missing, "")
}

// exposure is a moment our file stood at the path before we swapped a
// save back over it (a save landed between our read and our swap): an
// editor that read the file in that moment saves, later, our file with
// its line added, and without the line of the save we put back. The
// lines of that save are not to be lost for it.
type exposure struct {
	ours   string // our file, at the path for a moment
	theirs string // the save it displaced, put back
	at     time.Time
}

// exposedFor is how long a save built on our exposed file is looked for:
// an editor that read the file in that moment and keeps no swap file (one
// that does holds the file, and nothing is written under it).
const exposedFor = 2 * time.Minute

// exposedMax bounds the exposures looked for at once (each is set against
// every write's file): a busy machine's storm of saves may put back more
// than a few before an editor's stale save lands, and one dropped before
// then loses that save's line from the file.
const exposedMax = 32

func (fl *fileState) expose(ours, theirs string) {
	fl.exposed = append(fl.exposed, exposure{ours: ours, theirs: theirs, at: time.Now()})
	if len(fl.exposed) > exposedMax {
		// Those let go are kept as versions: a save built on their ours
		// may still land, and theirs is then recoverable at least.
		for _, e := range fl.exposed[:len(fl.exposed)-exposedMax] {
			fl.versions.keep(e.theirs, KeptOverrode)
		}
		fl.exposed = fl.exposed[len(fl.exposed)-exposedMax:]
	}
}

// unexposed is the user's file with the lines of a save we put back
// merged in again, where the file is a save built on our exposed file
// (our blocks as they stood in it, that save's lines missing): merged as
// the save's change to our file. A file that has the save's lines (built
// on the save) settles the exposure.
func (fl *fileState) unexposed(src snapshot) snapshot {
	if len(fl.exposed) == 0 || !src.exists {
		return src
	}
	keep := fl.exposed[:0]
	for _, e := range fl.exposed {
		if time.Since(e.at) > exposedFor {
			continue
		}
		added := addedLines(e.ours, e.theirs)
		if len(added) == 0 {
			continue // nothing of theirs to lose
		}
		if src.data == e.theirs {
			keep = append(keep, e) // the save put back, still there: what comes next says
			continue
		}
		if hasLines(src.data, added) {
			continue // a save built on theirs: settled
		}
		if blockText(src.data) != blockText(e.ours) {
			keep = append(keep, e) // not built on ours (yet)
			continue
		}
		if m, ok := merge3(e.ours, e.theirs, src.data); ok {
			src.data = m
			continue
		}
		fl.versions.keep(e.theirs, KeptOverrode) // recoverable, at least
	}
	fl.exposed = keep
	return src
}

// addedLines are the user's lines b has that a lacks (as many times).
func addedLines(a, b string) []string {
	have := map[string]int{}
	for _, l := range strings.Split(UserText(a), "\n") {
		have[l]++
	}
	var out []string
	for _, l := range strings.Split(UserText(b), "\n") {
		if have[l] > 0 {
			have[l]--
			continue
		}
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// hasLines says content's user text has every one of lines.
func hasLines(content string, lines []string) bool {
	have := map[string]int{}
	for _, l := range strings.Split(UserText(content), "\n") {
		have[l]++
	}
	for _, l := range lines {
		if have[l] == 0 {
			return false
		}
		have[l]--
	}
	return true
}

// blockText is content's blocks, markers included, in order: which of our
// writes a file was built on.
func blockText(content string) string {
	segs, _ := parse(content)
	var b strings.Builder
	for _, s := range segs {
		if s.id != "" {
			b.WriteString(s.text)
		}
	}
	return b.String()
}
