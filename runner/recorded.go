package runner

import (
	"bufio"
	"os"
	"strings"
	"time"
)

// A row's `recorded` is when the runner first read it, kept across
// restarts: a runner started again reads every step's results anew, and
// without this each row took the restart's time. The times sit beside the
// step's folder (STEP.recorded, one RFC 3339 time per row, in the order
// the rows were added), not in it: the runner watches the folder.

// recordedTimes are a step's rows' times, read back and still to write.
type recordedTimes struct {
	loaded  bool
	times   []time.Time
	pending []byte
}

func (sr *stepRun) recordedPath() string {
	return strings.TrimSuffix(sr.files.log, ".log") + ".recorded"
}

// rowTime is the time of the step's row number i: the one it was first
// recorded at, or now, which is then kept.
func (sr *stepRun) rowTime(i int, now time.Time) time.Time {
	rt := &sr.rec
	if !rt.loaded {
		rt.loaded = true
		if f, err := os.Open(sr.recordedPath()); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				t, err := time.Parse(time.RFC3339Nano, sc.Text())
				if err != nil {
					break
				}
				rt.times = append(rt.times, t)
			}
			f.Close()
		}
	}
	if i < len(rt.times) {
		return rt.times[i]
	}
	rt.times = append(rt.times, now)
	rt.pending = append(rt.pending, now.UTC().Format(time.RFC3339Nano)+"\n"...)
	return now
}

// flushTimes writes the times of rows added since the last flush: one
// write for what one read of the step's output brought.
func (sr *stepRun) flushTimes() {
	rt := &sr.rec
	if len(rt.pending) == 0 {
		return
	}
	f, err := os.OpenFile(sr.recordedPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return // the rows keep their times while this runner lives
	}
	f.Write(rt.pending)
	f.Close()
	rt.pending = rt.pending[:0]
}
