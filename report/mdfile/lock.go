package mdfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/greenlight-run/greenlight/internal/files"
)

// One runner writes a results file: a second one for the same file (from
// another --state-dir, or through another path or a symlink to it) would
// run the campaign twice at once and mix both runs' rows in one record.
// The lock is a hidden file beside the file its path resolves to, held
// (flock) for the runner's life, naming the runner.

// resultsLock is the lock file of the results file at path.
func resultsLock(path string) string {
	real := path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		real = r
	} else if d, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		real = filepath.Join(d, filepath.Base(path))
	}
	return filepath.Join(filepath.Dir(real), "."+filepath.Base(real)+".greenlight-lock")
}

// LockResults takes the results file's lock for this process, which runs
// the campaign from stateDir. It fails with files.ErrLocked, naming the
// holder, when another runner has it; release lets it go.
func LockResults(path, stateDir string) (release func(), err error) {
	lock := resultsLock(path)
	if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		who, _ := os.ReadFile(lock)
		f.Close()
		return nil, fmt.Errorf("%w: its results file %s is written by another runner (%s); one runner per results file", files.ErrLocked, path, strings.TrimSpace(string(who)))
	}
	f.Truncate(0)
	fmt.Fprintf(f, "pid %d, state dir %s\n", os.Getpid(), stateDir)
	return func() {
		os.Remove(lock)
		f.Close()
	}, nil
}

// ResultsHolder names the runner that holds the results file's lock, ""
// when none does.
func ResultsHolder(path string) string {
	lock := resultsLock(path)
	f, err := os.Open(lock)
	if err != nil {
		return ""
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return ""
	}
	who, _ := os.ReadFile(lock)
	return strings.TrimSpace(string(who))
}
