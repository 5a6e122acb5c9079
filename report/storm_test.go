package report

import (
	"context"
	"errors"
	"github.com/greenlight-run/greenlight/report/mdfile"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/runner"
)

// busy keeps every core spinning until the returned stop is called: a
// race that never shows on an idle machine shows when the writer and the
// editor fight for the CPU with other work (a build, a benchmark).
func busy(t testing.TB) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := 0
			for ctx.Err() == nil {
				for i := range 100000 {
					x += i
				}
			}
			_ = x
		}()
	}
	stop = func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	return stop
}

// runStorm has the editor save saves times, in styles in turn at random
// moments, while results results are written, one every 0 to resultGap;
// it returns the last state written, after the last write and the flush.
func runStorm(t *testing.T, w *Writer, ed *editor, saves, results int, resultGap time.Duration, styles []saveStyle) *runner.State {
	base := fullState(w.plan)
	var wg sync.WaitGroup
	wg.Add(2)
	var last *runner.State
	go func() {
		defer wg.Done()
		for i := 1; i <= results; i++ {
			last = stateWithRows(base, i)
			w.Write(last) // "keeps changing" under a storm is allowed: the next write retries
			time.Sleep(time.Duration(rand.Int64N(int64(resultGap))))
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < saves; i++ {
			ed.save(styles[i%len(styles)])
			time.Sleep(time.Duration(rand.IntN(1500)) * time.Microsecond)
		}
	}()
	wg.Wait()
	if err := w.Write(last); err != nil && !errors.Is(err, mdfile.ErrNoSwap) {
		t.Fatal(err)
	}
	w.Flush()
	return last
}

// storm runs an editor's saves against a stream of results and checks
// that every line the user saved is in the file at the end, once.
func storm(t *testing.T, saves, results int, stall func() time.Duration, styles []saveStyle) {
	w, ed, _ := newEditedFile(t)
	ed.stall, ed.anyOrder = stall, true
	ed.check(t, runStorm(t, w, ed, saves, results, 2*time.Millisecond, styles))
}

// TestEditorsOnABusyMachine: the storm with every core kept busy.
func TestEditorsOnABusyMachine(t *testing.T) {
	busy(t)
	storm(t, 400, 200, nil, []saveStyle{renameTop, inPlaceTop, appendEnd, renameEnd, inPlaceEnd})
}

// TestStallingEditor: an editor that saves in place and stalls between
// the truncate and the write, as a loaded machine stalls it (50 ms to
// 1 s), while results arrive.
func TestStallingEditor(t *testing.T) {
	busy(t)
	stall := func() time.Duration { return 50*time.Millisecond + time.Duration(rand.IntN(950))*time.Millisecond }
	storm(t, 24, 300, stall, []saveStyle{inPlaceTop, inPlaceEnd, appendEnd})
}
