package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/greenlight-run/greenlight/runner/supervise"
)

// SetAsideTo moves a campaign's state dir to dest (which must not exist),
// refusing (ErrLocked) while a greenlight runs the campaign. false when
// there was no state dir. What the old run left running (a service whose
// runner was killed) is stopped first and named in stopped: nothing
// would ever stop it once its state dir is gone, and it would hold its
// port and GPUs against the fresh run.
func SetAsideTo(stateDir, dest string) (moved bool, stopped []string, err error) {
	if _, err := os.Stat(stateDir); errors.Is(err, fs.ErrNotExist) {
		return false, nil, nil
	}
	lock := stateDir + "/lock"
	if f, err := os.OpenFile(lock, os.O_RDWR, 0); err == nil {
		defer f.Close()
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			b, _ := os.ReadFile(lock)
			return false, nil, fmt.Errorf("%w (pid %s); stop it before starting over", ErrLocked, string(b))
		}
		defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	stopped = supervise.StopMarked(supervise.EnvState+"="+stateDir, 2*time.Second)
	if err := os.Rename(stateDir, dest); err != nil {
		return false, stopped, fmt.Errorf("setting the old state aside: %w", err)
	}
	return true, stopped, nil
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
