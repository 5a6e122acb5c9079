// Package files writes files so that a crash leaves the old content or
// the new, never a torn one. It imports nothing of ours.
package files

import (
	"errors"
	"os"
	"path/filepath"
)

// WriteAtomic replaces path with data so that a crash or a full disk
// leaves the old file or the new one, never a part: temp file, fsync,
// rename, fsync of the folder.
func WriteAtomic(path string, data []byte) error { return Replace(path, data, true) }

// Replace writes through a temp file in the same folder and renames it
// over path, so a reader sees the old file or the new one, never half of
// one. With sync it fsyncs the file before the rename and the folder after.
func Replace(path string, data []byte, sync bool) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644) // CreateTemp's 0600 would hide it from a colleague
	}
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if !sync {
		return nil
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// ErrLocked means another greenlight holds a campaign's lock (its runner,
// or its results file's writer): one runner per campaign and per results
// file.
var ErrLocked = errors.New("another greenlight is already running this campaign")
