package mdfile

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// An editor that leaves no swap or lock file (vim with noswapfile or -n,
// micro, Helix, an IDE's remote editing) is known only as a process with
// the file among its arguments, and a look through the processes costs:
// made on a timer, it missed the first saves of such an editor, and
// Emacs, whose lock file comes only with the first change, saw the file
// written under it for seconds after it had opened it. So the file's
// folder is watched for opens of the file (inotify's IN_OPEN), and each
// open is answered at once by a look for an editor: found within moments
// of opening the file, at no polling cost while nobody opens it. A write
// about to land takes the opens the kernel holds (drainOpens) and looks
// again if the file was opened since the last look (save.go, before the
// swap), so a hold known a moment late still stops it.

// openWatch counts the opens of one file, by its name (and, for a
// symlink, its target's), and looks for an editor at each.
type openWatch struct {
	opens atomic.Int64  // opens of the file seen (inotify folds opens in a row into one)
	look  chan struct{} // an open to answer; one pending is enough
}

// inotify is the process's one inotify instance for the files' opens
// (instances are few: 128 a user by default), read through the runtime's
// poller.
var inotify struct {
	once sync.Once
	fd   int // -1 where inotify cannot
	f    *os.File
	mu   sync.Mutex // the watches; one handler at a time (the reader, or a write's drain)
	by   map[int32][]watched
}

type watched struct {
	name string
	w    *openWatch
}

// openWatches are the files watched, by path: scannedEditor trusts a
// look that no open has followed, however old.
var openWatches sync.Map // path -> *openWatch

// watchOpens starts watching path's opens; nil where inotify cannot.
func watchOpens(path string, found func()) *openWatch {
	inotify.once.Do(func() {
		inotify.fd = -1
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
		if err != nil {
			return
		}
		inotify.fd, inotify.f, inotify.by = fd, os.NewFile(uintptr(fd), "inotify"), map[int32][]watched{}
		go readOpens()
	})
	if inotify.fd < 0 {
		return nil
	}
	w := &openWatch{look: make(chan struct{}, 1)}
	n := 0
	add := func(p string) {
		dir, name := filepath.Split(p)
		if dir == "" {
			dir = "."
		}
		inotify.mu.Lock()
		defer inotify.mu.Unlock()
		wd, err := unix.InotifyAddWatch(inotify.fd, dir, unix.IN_OPEN)
		if err != nil {
			return
		}
		inotify.by[int32(wd)] = append(inotify.by[int32(wd)], watched{name, w})
		openWatches.Store(p, w) // a write opens the file by the name it resolved
		n++
	}
	add(path)
	if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
		add(real)
	}
	if n == 0 {
		return nil
	}
	openWatches.Store(path, w)
	go func() {
		for range w.look {
			if scannedEditor(path) != nil {
				found()
			}
		}
	}()
	return w
}

// readOpens takes the events as they come, for the process's life.
func readOpens() {
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := inotify.f.Read(buf)
		if err != nil {
			return
		}
		inotify.mu.Lock()
		handleOpens(buf[:n])
		inotify.mu.Unlock()
	}
}

// drainOpens takes what the kernel holds now, without waiting: a write
// about to land hears of an open that came just before it.
func drainOpens() {
	if inotify.fd < 0 || inotify.f == nil {
		return
	}
	buf := make([]byte, 16*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	inotify.mu.Lock()
	defer inotify.mu.Unlock()
	for {
		n, err := unix.Read(inotify.fd, buf)
		if n <= 0 || err != nil {
			return
		}
		handleOpens(buf[:n])
	}
}

func handleOpens(b []byte) {
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(b) {
			return
		}
		name := string(b[unix.SizeofInotifyEvent:end])
		if i := strings.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		b = b[end:]
		if ev.Mask&unix.IN_OPEN == 0 {
			continue
		}
		for _, x := range inotify.by[ev.Wd] {
			if x.name == name {
				x.w.opened()
			}
		}
	}
}

// opened is an open of the file: a look is asked. The owner's own reads
// ask one too: an open does not say who made it, and a look that finds no
// new process costs a read of /proc's list (see editorProcess).
func (w *openWatch) opened() {
	w.opens.Add(1)
	select {
	case w.look <- struct{}{}:
	default:
	}
}

// openCount is the opens of path seen so far; ok is false where path's
// opens are not watched.
func openCount(path string) (n int64, ok bool) {
	v, ok := openWatches.Load(path)
	if !ok {
		return 0, false
	}
	drainOpens()
	return v.(*openWatch).opens.Load(), true
}
