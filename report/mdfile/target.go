package mdfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// target is the file a write goes to: the results file, or, where that is
// a symlink (into the user's notes repository, say), the file it points
// to, so that the link stays a link.
type target struct {
	path  string
	links uint64 // hard links to the file; over 1, it is written in place
}

// Unwritable is a results file that cannot be written now: a directory
// stands at its path, it is read-only, or its folder is gone. Results go
// on to the CSV tables and the state dir meanwhile, and the file is
// written whole again once it can be.
type Unwritable struct {
	Path string
	Why  string // what is wrong
	Fix  string // what to do
}

func (u *Unwritable) Error() string {
	return fmt.Sprintf("%s %s: results go on to the CSV tables and the state dir, and the file is written whole again once %s", u.Path, u.Why, u.Fix)
}

// resolve finds the target of path, following symlinks (a dangling one
// included: the file it names is made), and refuses what cannot be
// written. first allows a missing folder to be made (the first write).
func resolve(path string, first bool) (target, error) {
	p := path
	for hops := 0; ; hops++ {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			dir := filepath.Dir(p)
			if _, derr := os.Stat(dir); derr != nil && !first {
				return target{}, folderGone(path, dir)
			}
			return target{path: p, links: 1}, nil
		}
		if err != nil {
			return target{}, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if hops >= 40 {
				return target{}, &Unwritable{Path: path, Why: "is a loop of symlinks", Fix: "it names a file"}
			}
			to, err := os.Readlink(p)
			if err != nil {
				return target{}, err
			}
			if !filepath.IsAbs(to) {
				to = filepath.Join(filepath.Dir(p), to)
			}
			p = to
			continue
		}
		switch {
		case fi.IsDir():
			return target{}, &Unwritable{Path: path, Why: "is a directory now", Fix: "it is moved away"}
		case !fi.Mode().IsRegular():
			return target{}, &Unwritable{Path: path, Why: "is not a regular file (" + fi.Mode().Type().String() + ")", Fix: "it is moved away"}
		case fi.Mode().Perm()&0o222 == 0:
			return target{}, &Unwritable{Path: path, Why: fmt.Sprintf("is read-only (mode %04o): not written", fi.Mode().Perm()), Fix: "it is writable again (chmod u+w " + path + ")"}
		}
		links := uint64(1)
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			links = uint64(st.Nlink)
		}
		return target{path: p, links: links}, nil
	}
}

// Restored says that a results file that could not be written is
// written whole again.
type Restored struct{ Path string }

func (r *Restored) Error() string { return r.Path + " is written whole again" }

func folderGone(path, dir string) *Unwritable {
	return &Unwritable{Path: path, Why: "cannot be written: its folder " + dir + " is gone", Fix: "the folder is there again (mkdir -p " + dir + ")"}
}
