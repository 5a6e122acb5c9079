package mdfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The results file is shared with the user, whose editor may save it at
// any instant: renaming a new file over it after checking it is unchanged
// leaves a window in which a save is overwritten. Swapping instead
// (renameat2 RENAME_EXCHANGE) puts our file in place and hands back, under
// the temporary name, whatever was there at that instant: if it is not what
// we merged from, the user saved meanwhile and we merge again from it.

// snapshot is a file's content as read, and what identified it.
type snapshot struct {
	data   string
	exists bool
	id     fileID
}

// fileID tells whether a file changed since it was read.
type fileID struct {
	dev, ino uint64
	size     int64
	mtime    time.Time
}

func idOf(fi fs.FileInfo) fileID {
	id := fileID{size: fi.Size(), mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(st.Dev), st.Ino
	}
	return id
}

// settle is how long a file must be left alone before its content is
// taken as a whole: an editor that truncates and rewrites in place leaves
// a partial file for the moments in between.
const settle = 25 * time.Millisecond

// readOpen reads an open file and says whether it looked settled.
func readOpen(f *os.File, ours fileID) (snapshot, bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return snapshot{}, false, err
	}
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<62))
	if err != nil {
		return snapshot{}, false, err
	}
	after, err := f.Stat()
	if err != nil {
		return snapshot{}, false, err
	}
	snap := snapshot{data: string(b), exists: true, id: idOf(after)}
	stable := idOf(fi) == snap.id && int64(len(b)) == snap.id.size &&
		(snap.id == ours || time.Since(snap.id.mtime) >= settle)
	return snap, stable, nil
}

// ErrNoSwap means the filesystem cannot exchange two names atomically.
var ErrNoSwap = errors.New("this filesystem cannot swap two files atomically (renameat2 RENAME_EXCHANGE)")

// writeTemp writes data to a new file beside path, fsynced, with mode.
// mkdir makes the folder first (the first write: a folder that went away
// later is not made again behind the user's back).
func writeTemp(path string, data []byte, mode fs.FileMode, mkdir bool) (string, error) {
	dir := filepath.Dir(path)
	if mkdir {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".greenlight-*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// exchange swaps tmp and path. Afterwards path holds what tmp held, and
// tmp names what path held at that instant. With nothing at path, it
// renames tmp there unless something appeared meanwhile (fs.ErrExist).
func exchange(tmp, path string) error {
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOENT):
		err = unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EEXIST) {
			return fs.ErrExist
		}
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
			if _, serr := os.Lstat(path); serr == nil {
				return fs.ErrExist
			}
			return os.Rename(tmp, path)
		}
		return err
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP):
		return fmt.Errorf("%w: %v", ErrNoSwap, err)
	}
	return err
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
