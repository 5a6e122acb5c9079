package daemon

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/greenlight-run/greenlight/conditions"
	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

type limits struct {
	mu sync.Mutex
	w  float64
}

func (l *limits) Inventory() gpu.Inventory { return gpu.Inventory{Driver: "580.95"} }
func (l *limits) Conditions() []gpu.Conditions {
	l.mu.Lock()
	defer l.mu.Unlock()
	return []gpu.Conditions{{Index: 0, Name: "NVIDIA H200", PowerLimitW: l.w}}
}

// TestConditionsWatched: the first reading is kept (commands too), a
// power limit lowered between two phases is said at the second's start
// and kept in the book, and a runner started again reads the book and
// says what changed since.
func TestConditionsWatched(t *testing.T) {
	dir := t.TempDir()
	plan := &campaign.Plan{Name: "c", Dir: t.TempDir(), Conditions: campaign.Conditions{Commands: []string{"echo v1"}}}
	src := &limits{w: 700}
	kept := make(chan struct{}, 10) // each reading kept
	watch := func(events chan runner.Event) (*[]string, *conditions.Book, chan struct{}) {
		var said []string
		var book conditions.Book
		first, done := make(chan struct{}), make(chan struct{})
		c := openConditions(plan, dir, src, func() bool { return true },
			func(b conditions.Book) { book = b; kept <- struct{}{} }, func(s string) { said = append(said, s) })
		go func() {
			defer close(done)
			c.watch(context.Background(), events, first)
		}()
		<-first
		for len(kept) > 0 {
			<-kept
		}
		return &said, &book, done
	}
	events := make(chan runner.Event)
	said, book, done := watch(events)
	events <- runner.Event{Kind: runner.PhaseStarted, Phase: "gemm"}
	events <- runner.Event{Kind: runner.Progress} // taken once gemm's check is done
	src.mu.Lock()
	src.w = 450
	src.mu.Unlock()
	events <- runner.Event{Kind: runner.PhaseStarted, Phase: "decode"}
	close(events)
	<-done
	if len(*said) != 1 || !strings.Contains((*said)[0], "at the start of phase decode: GPU 0 power limit 700 W → 450 W") {
		t.Errorf("said %q", *said)
	}
	if book.First.Commands[0].Output != "v1" || len(book.Changes) != 1 {
		t.Errorf("book: %+v", book)
	}

	src.mu.Lock()
	src.w = 300
	src.mu.Unlock()
	events = make(chan runner.Event)
	said, book, done = watch(events)
	close(events)
	<-done
	if len(*said) != 1 || !strings.Contains((*said)[0], "since the campaign's last runner: GPU 0 power limit 450 W → 300 W") {
		t.Errorf("a runner started again said %q", *said)
	}
	if book.First.GPUs[0].PowerLimitW != 700 || len(book.Changes) != 2 {
		t.Errorf("the book lost its first reading or a change: %+v", book)
	}
}

// TestConditionsKeptOnARestart: a runner started again with nothing
// changed gives the record the book all the same (a kill -9 and a resume
// left a record with no Conditions).
func TestConditionsKeptOnARestart(t *testing.T) {
	dir := t.TempDir()
	plan := &campaign.Plan{Name: "c", Dir: t.TempDir()}
	src := &limits{w: 700}
	var got *conditions.Book
	openConditions(plan, dir, src, func() bool { return true }, func(b conditions.Book) { got = &b }, func(string) {})
	got = nil
	openConditions(plan, dir, src, func() bool { return true }, func(b conditions.Book) { got = &b }, func(s string) { t.Errorf("said %q: nothing changed", s) })
	if got == nil || len(got.First.GPUs) != 1 || got.First.GPUs[0].PowerLimitW != 700 {
		t.Errorf("a runner started again gave the record %+v; want the book read back", got)
	}
}
