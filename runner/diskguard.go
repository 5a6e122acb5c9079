package runner

import (
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	"github.com/greenlight-run/greenlight/internal/format"
)

// diskGuard watches free space where the results, logs and artifacts
// live. It pauses the queue before the disk is full (the running steps go
// on; nothing is frozen) and lets it go on by itself once space is back.
type diskGuard struct {
	free, limit uint64
	low         bool      // under the limit at the last look
	last        time.Time // the last look
}

// diskMargin is how far above its limit free space must climb before the
// queue goes on: a disk hovering at the limit must not pause and resume
// every second.
func diskMargin(limit uint64) uint64 { return limit/10 + 1<<20 }

// checkDisk looks at free space at most once a second, or now when force
// (something is about to start). Under the limit it pauses the queue and
// says why; back above the limit plus a margin it resumes a queue it had
// paused itself.
func (r *Runner) checkDisk(now time.Time, force bool) {
	g := &r.disk
	if !force && !g.last.IsZero() && now.Sub(g.last) < time.Second {
		return
	}
	g.last = now
	free, total, err := r.freeSpace()
	if err != nil {
		return
	}
	g.free, g.limit = free, r.plan.Preflight.DiskFree
	if g.limit == 0 {
		g.limit = total / 20
	}
	switch {
	case free < g.limit && !g.low:
		g.low = true
		for _, pr := range r.phases {
			if pr.cur != nil && !pr.cur.proc.exitedSeen {
				pr.cur.diskFilled = true
			}
		}
		if !r.q.paused {
			r.setPaused(true, fmt.Sprintf("disk nearly full: %s free, under the %s limit; the queue goes on by itself once %s are free",
				format.Bytes(free), format.Bytes(g.limit), format.Bytes(g.limit+diskMargin(g.limit))))
		}
	case free < g.limit:
		for _, pr := range r.phases {
			if pr.cur != nil && !pr.cur.proc.exitedSeen {
				pr.cur.diskFilled = true
			}
		}
	case g.low && free >= g.limit+diskMargin(g.limit):
		g.low = false
		if r.q.paused && r.q.pauseWhy != "user" {
			r.setPaused(false, "")
			r.warn(fmt.Sprintf("disk space is back (%s free): the queue goes on", format.Bytes(free)))
		}
	}
}

// freeSpace is the lower of the free space where the results file and
// where the state dir (logs, artifacts) live, and that filesystem's size.
func (r *Runner) freeSpace() (free, total uint64, err error) {
	free, total, err = diskFree(filepath.Dir(r.plan.Report))
	if err != nil {
		return 0, 0, err
	}
	if f2, t2, err2 := diskFree(r.dirs.Root()); err2 == nil && f2 < free {
		free, total = f2, t2
	}
	return free, total, nil
}

func diskFree(dir string) (free, total uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), nil
}

// spaceNote says how much room is left where path lives, for a message
// about a write that failed.
func spaceNote(path string) string {
	free, _, err := diskFree(filepath.Dir(path))
	if err != nil {
		return "its folder is gone: " + err.Error()
	}
	return format.Bytes(free) + " free on its filesystem"
}
