package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// SetAsideTo moves a campaign's state dir to dest (which must not exist),
// refusing (ErrLocked) while a greenlight runs the campaign. false when
// there was no state dir.
func SetAsideTo(stateDir, dest string) (bool, error) {
	if _, err := os.Stat(stateDir); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	lock := stateDir + "/lock"
	if f, err := os.OpenFile(lock, os.O_RDWR, 0); err == nil {
		defer f.Close()
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			b, _ := os.ReadFile(lock)
			return false, fmt.Errorf("%w (pid %s); stop it before starting over", ErrLocked, string(b))
		}
		defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	if err := os.Rename(stateDir, dest); err != nil {
		return false, fmt.Errorf("setting the old state aside: %w", err)
	}
	return true, nil
}

// AsideName is path with a timestamp put before its extension ext:
// results.md -> results.20261203-070102.md.
func AsideName(path, ext string, now time.Time) string {
	base := path[:len(path)-len(ext)]
	dest := base + "." + now.Format("20060102-150405") + ext
	for n := 2; ; n++ {
		if _, err := os.Lstat(dest); errors.Is(err, fs.ErrNotExist) {
			return dest
		}
		dest = fmt.Sprintf("%s.%s-%d%s", base, now.Format("20060102-150405"), n, ext)
	}
}
