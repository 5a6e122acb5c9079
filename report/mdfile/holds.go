package mdfile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// A person with the file open in an editor holds the owner's writes: vim
// and Neovim check the file's time at each :w and refuse ("WARNING: The
// file has been changed since reading it!!!", then E949) a file written
// under them, and an editor that reads the file once saves its stale copy
// of the blocks over the owner's. So while an editor holds the file, Save
// writes nothing to it (the owner's other files go on), and the file is
// written within a second of the editor letting go, merged with what the
// person saved.
//
// An editor holds the file by what it leaves beside it, each naming a
// live process: vim's and nano's swap file (.NAME.swp, .swo, ...), Neovim's
// in its own swap folder (%path%to%NAME.swp), Emacs's lock (.#NAME, a
// symlink to user@host.PID). A swap file whose process is gone (a crashed
// editor) holds nothing.

// Holder is an editor that has the file open.
type Holder struct {
	Editor string // "vim", "nvim", "nano", "emacs"
	PID    int
	Since  time.Time // when the owner first saw it hold the file
}

func (h Holder) String() string { return fmt.Sprintf("%s (pid %d)", h.Editor, h.PID) }

// Held is Save's word while an editor holds the file: nothing was written
// to it, and it will be once the editor lets go.
type Held struct {
	Path string
	By   Holder
}

func (h *Held) Error() string {
	if !h.By.Since.IsZero() && time.Since(h.By.Since) >= HoldSaid {
		return fmt.Sprintf("%s has been open in %s for over %s: it lags the results (the CSV tables and the record beside it are current); written when you leave it", filepath.Base(h.Path), h.By, HoldSaid)
	}
	return fmt.Sprintf("%s is open in %s: written when you leave it", filepath.Base(h.Path), h.By)
}

// HoldSaid is how long a hold lasts before the owner says it plainly, as
// more than a person editing a note: the file lags the results by that
// much (the CSV tables and the record beside it do not).
const HoldSaid = 10 * time.Minute

// holder is the editor that holds the file at path now, or nil: the file
// by its own name, or, for a symlink, by the name of the file it points to
// (an editor opened on either leaves its files beside the one it opened).
func holder(path string) *Holder {
	if h := holderBy(path); h != nil {
		return h
	}
	if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
		if h := holderBy(real); h != nil {
			return h
		}
	}
	return scannedEditor(path)
}

// scans remembers, for each file, when a look through the processes last
// found no editor holding it, and how many opens of the file by others
// had been seen then. Reading /proc at each write (every 5 s) was two
// fifths of an idle runner's CPU on a 16-core H200 machine: where the
// file's opens are watched (opens.go), "no editor" stands until another
// process opens it; elsewhere, for scanEvery.
var scans struct {
	mu   sync.Mutex
	none map[string]noEditor
}

type noEditor struct {
	at    time.Time
	opens int64
}

// scanEvery is how long "no editor has it" stands for an editor that
// leaves no swap file, where the file's opens are not watched; a save it
// makes meanwhile is repaired as stale.
const scanEvery = 15 * time.Second

func scannedEditor(path string) *Holder {
	opens, watched := openCount(path)
	scans.mu.Lock()
	last, ok := scans.none[path]
	scans.mu.Unlock()
	if ok && (watched && last.opens == opens || !watched && time.Since(last.at) < scanEvery) {
		return nil
	}
	// Opened since the last look: a process read as no editor a moment
	// ago may have become one (`env vim FILE`, a shell's exec).
	h := editorProcess(path, watched && ok)
	scans.mu.Lock()
	defer scans.mu.Unlock()
	if scans.none == nil {
		scans.none = map[string]noEditor{}
	}
	if h == nil {
		scans.none[path] = noEditor{at: time.Now(), opens: opens}
	} else {
		delete(scans.none, path)
	}
	return h
}

// holderBy is the editor whose swap or lock file stands beside path.
func holderBy(path string) *Holder {
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	// vim and nano: .NAME.swp, and .swo, .swn when one is taken (vim goes
	// on to .swm ... .swa; three cover a person's editors). Looked up by
	// name, not by listing the folder: a results folder of hundreds of
	// charts made that a tenth of an idle runner's CPU.
	for _, ext := range []string{".swp", ".swo", ".swn"} {
		if h := swapHolder(filepath.Join(dir, "."+name+ext)); h != nil {
			return h
		}
	}
	// Neovim keeps its swap files in a folder of its own, named by the
	// file's full path.
	if abs, err := filepath.Abs(path); err == nil {
		home, _ := os.UserHomeDir()
		enc := strings.ReplaceAll(abs, string(filepath.Separator), "%") + ".swp"
		for _, d := range []string{os.Getenv("XDG_STATE_HOME"), filepath.Join(home, ".local", "state"), os.Getenv("XDG_DATA_HOME"), filepath.Join(home, ".local", "share")} {
			if d == "" {
				continue
			}
			if h := swapHolder(filepath.Join(d, "nvim", "swap", enc)); h != nil {
				return h
			}
		}
	}
	// Emacs: .#NAME, a symlink to user@host.PID[:boot].
	if to, err := os.Readlink(filepath.Join(dir, ".#"+name)); err == nil {
		at := strings.LastIndexByte(to, '.')
		if at >= 0 {
			pidText, _, _ := strings.Cut(to[at+1:], ":")
			if pid, err := strconv.Atoi(pidText); err == nil && alive(pid) {
				return &Holder{Editor: "emacs", PID: pid}
			}
		}
	}
	return nil
}

// swapHolder reads a vim-format swap file (vim, Neovim and nano write
// one): "b0" and the editor's name at its start, its pid at byte 24.
func swapHolder(path string) *Holder {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var head [28]byte
	if n, _ := f.Read(head[:]); n < len(head) || head[0] != 'b' || head[1] != '0' {
		return nil
	}
	pid := int(binary.LittleEndian.Uint32(head[24:28]))
	if pid <= 0 || !alive(pid) {
		return nil // left by an editor that is gone
	}
	editor := string(bytes.TrimRight(head[2:12], "\x00"))
	switch {
	case strings.HasPrefix(editor, "VIM"):
		editor = "vim"
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.HasPrefix(string(comm), "nvim") {
			editor = "nvim"
		}
	case strings.HasPrefix(editor, "nano"):
		editor = "nano"
	case editor == "":
		editor = "an editor"
	default:
		editor = strings.Fields(editor)[0]
	}
	return &Holder{Editor: editor, PID: pid}
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil && !os.IsPermission(syscall.Kill(pid, 0)) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc: the signal said it is there
	}
	// The state is the field after the command's closing parenthesis.
	if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z' && b[i+2] != 'X'
	}
	return true
}

// hold is what the File knows of the editor holding it.
type hold struct {
	by       *Holder
	watching bool // a goroutine looks for its end
}

// held is *Held while an editor holds the file, nil otherwise; the first
// time, it starts a look every quarter second for the editor's end, which
// asks for a write (OnChange's kick).
func (f *File) held() *Held {
	h := holder(f.path)
	f.st.mu.Lock()
	defer f.st.mu.Unlock()
	if h == nil {
		f.hold.by = nil
		return nil
	}
	if f.hold.by == nil || f.hold.by.PID != h.PID {
		h.Since = time.Now()
		f.hold.by = h
	}
	if !f.hold.watching && f.st.kick != nil {
		f.hold.watching = true
		go f.watchHold()
	}
	return &Held{Path: f.path, By: *f.hold.by}
}

// watchHold looks for the holding editor's end, then asks for a write.
func (f *File) watchHold() {
	for {
		time.Sleep(holdLook)
		if holder(f.path) == nil {
			break
		}
	}
	f.st.mu.Lock()
	f.hold.watching = false
	kick := f.st.kick
	f.st.mu.Unlock()
	if kick != nil {
		kick()
	}
}

// holdLook is how often a held file is looked at for its editor's end.
const holdLook = 250 * time.Millisecond

// HolderOf is the editor that has the file at path open now, or nil: for
// a status asked from outside the runner.
func HolderOf(path string) *Holder { return holder(path) }

// PreviewOf is where the file as it would be written is kept while an
// editor holds it: beside it, hidden; a window's preview shows it when it
// is there.
func PreviewOf(path string) string {
	dir, name := filepath.Split(path)
	return filepath.Join(dir, "."+name+".greenlight-preview")
}

// writePreview writes the file as it would be, merged with what is there
// now, to its preview. Best effort: the preview is a view.
func (f *File) writePreview() {
	b, err := os.ReadFile(f.path)
	if err != nil && !os.IsNotExist(err) {
		return
	}
	out := f.compose(snapshot{data: string(b), exists: err == nil}, "")
	if tmp, err := writeTemp(PreviewOf(f.path), []byte(out), 0o644, false); err == nil {
		if os.Rename(tmp, PreviewOf(f.path)) != nil {
			os.Remove(tmp)
		}
	}
}

// watchSaves asks for a write when the file is saved by someone else (a
// stale copy of the blocks saved over ours is repaired within moments,
// not at the next result) or an editor lets go of it: the file's folder,
// watched for its name and its editors' swap and lock files. A change
// that is the file we put in place asks nothing. It runs for the
// process's life; without inotify, the next Save repairs it.
func (f *File) watchSaves(kick func()) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return
	}
	dir, name := filepath.Split(f.path)
	if dir == "" {
		dir = "."
	}
	if w.Add(dir) != nil {
		w.Close()
		return
	}
	defer w.Close()
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			base := filepath.Base(ev.Name)
			ours := base == name
			editor := strings.HasPrefix(base, "."+name+".sw") || base == ".#"+name
			if !ours && !editor {
				continue
			}
			if ours {
				fi, err := os.Stat(f.path)
				if last := f.mine.Load(); err == nil && last != nil && idOf(fi) == *last {
					continue
				}
			}
			kick()
		case _, ok := <-w.Errors:
			if !ok {
				return
			}
		}
	}
}

// editors are the programs that hold a file they were started on.
var editors = map[string]string{"vim": "vim", "vi": "vim", "view": "vim", "vim.basic": "vim", "vim.tiny": "vim", "gvim": "vim",
	"nvim": "nvim", "nano": "nano", "emacs": "emacs", "emacs-nox": "emacs", "hx": "helix", "micro": "micro", "kak": "kakoune", "joe": "joe", "mcedit": "mcedit"}

// notEditors are the processes seen before that are no editor: each
// look reads only the new ones (on a 16-core machine, reading every
// process's name at each write was a fifth of an idle runner's CPU). A pid
// gone from /proc is forgotten, so one used again is read again.
var notEditors struct {
	mu    sync.Mutex
	pids  map[int]time.Time // when first read as no editor
	fresh time.Time         // when every process was last read
}

// notEditorsFor is how long a process read as no editor is not read
// again (the swap and lock files, looked at every time, find the usual
// editors at once).
const notEditorsFor = 30 * time.Second

// youngFor is how recently a process first read as no editor is read
// again when the file was opened since: a process that execs an editor
// (`env vim FILE`) keeps its pid, and opens the file moments after.
const youngFor = 5 * time.Second

// editorProcess is an editor process of this user with the file at path
// among its arguments (resolved from its working folder), or nil: one
// that keeps its swap file elsewhere or none, or has not made it yet (it
// reads the file first). opened: the file was opened since the last look,
// and the processes first read as no editor lately are read again.
func editorProcess(path string, opened bool) *Holder {
	want, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	if r, err := filepath.EvalSymlinks(want); err == nil {
		want = r
	}
	procs, _ := os.ReadDir("/proc")
	notEditors.mu.Lock()
	defer notEditors.mu.Unlock()
	if time.Since(notEditors.fresh) > notEditorsFor {
		// A process may have become an editor since (a shell that exec'd
		// vim keeps its pid): every one is read again now and then.
		notEditors.pids, notEditors.fresh = nil, time.Now()
	}
	still := make(map[int]time.Time, len(notEditors.pids))
	defer func() { notEditors.pids = still }()
	now := time.Now()
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		if seen, ok := notEditors.pids[pid]; ok && !(opened && now.Sub(seen) < youngFor) {
			still[pid] = seen // seen before, no editor: not read again
			continue
		}
		comm, err := os.ReadFile("/proc/" + p.Name() + "/comm")
		if err != nil {
			continue
		}
		editor, ok := editors[strings.TrimSpace(string(comm))]
		if !ok {
			if seen, ok := notEditors.pids[pid]; ok {
				still[pid] = seen
			} else {
				still[pid] = now
			}
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + p.Name() + "/cmdline")
		if err != nil {
			continue
		}
		cwd, _ := os.Readlink("/proc/" + p.Name() + "/cwd")
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		for _, a := range args[1:] {
			if a == "" || strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+") {
				continue
			}
			if !filepath.IsAbs(a) {
				a = filepath.Join(cwd, a)
			}
			if r, err := filepath.EvalSymlinks(a); err == nil {
				a = r
			}
			if a == want && alive(pid) {
				return &Holder{Editor: editor, PID: pid}
			}
		}
	}
	return nil
}
