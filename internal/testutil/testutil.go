// Package testutil holds the helpers the tests of every package share:
// waiting on a condition instead of sleeping, and keeping a core per CPU
// busy.
package testutil

import (
	"flag"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// poll is how often Eventually looks: often enough that a test waits
// little past its condition, rarely enough to cost nothing.
const poll = 20 * time.Millisecond

// Eventually waits until cond holds, failing the test (Fatalf, with
// what) if it has not within timeout. A test that proves something does
// not happen waits on a later event that implies it, never on a sleep.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Within(timeout, cond) {
		t.Fatalf("%s did not happen within %v", what, timeout)
	}
}

// Within reports whether cond holds within timeout, looking every 20 ms.
func Within(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(poll)
	}
}

// Busy keeps every core spinning until the test ends: a race that never
// shows on an idle machine shows when every core is busy.
func Busy(t testing.TB) {
	var stop atomic.Bool
	for range runtime.NumCPU() {
		go func() {
			for !stop.Load() {
			}
		}()
	}
	t.Cleanup(func() { stop.Store(true) })
}

// WaitBoundParallel lets n tests marked t.Parallel run at once when the
// command line did not say -parallel: a package whose slow tests wait on
// processes, sleeps and Slurm (not on a CPU) is not held to one per
// core. Call it in TestMain, before m.Run.
func WaitBoundParallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(max(n, runtime.GOMAXPROCS(0))))
	}
}
