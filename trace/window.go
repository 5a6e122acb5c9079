package trace

import (
	"slices"
	"sort"
)

// A stream's activity taken in as it is read, in bounded memory: intervals
// wait in a window of at most windowMax; when it is full it is sorted and
// its older half is merged into the running union (its busy time, the
// gaps between, the largest of them), the newer half waiting for events
// that come a little out of order. A trace of any length costs a window
// per stream and one for the whole device set, not 16 bytes a kernel.
// An interval that comes after the union has passed its start (out of
// order by more than half a window) is merged as far as it can be and
// counted (Late): busy and gaps are then approximate, and said so.

// windowMax bounds the intervals a window holds before it merges.
var windowMax = 1 << 16

type window struct {
	buf        []interval
	started    bool
	cs, ce     float64 // the union's segment not closed yet
	busy, gap  float64
	gaps       []Gap // the largest, AtUS absolute until the summary
	lo, hi     float64
	events     int
	late       int
	keepGaps   bool
	firstStart float64
}

func newWindow(keepGaps bool) *window { return &window{keepGaps: keepGaps} }

func (w *window) add(iv interval) {
	if w.events == 0 || iv.start < w.lo {
		w.lo = iv.start
	}
	if w.events == 0 || iv.end > w.hi {
		w.hi = iv.end
	}
	w.events++
	w.buf = append(w.buf, iv)
	if len(w.buf) >= windowMax {
		w.merge(len(w.buf) / 2)
	}
}

// merge sorts the window and takes its oldest n intervals into the union.
func (w *window) merge(n int) {
	slices.SortFunc(w.buf, func(a, b interval) int {
		switch {
		case a.start < b.start:
			return -1
		case a.start > b.start:
			return 1
		}
		return 0
	})
	for _, iv := range w.buf[:n] {
		w.take(iv)
	}
	w.buf = w.buf[:copy(w.buf, w.buf[n:])]
}

func (w *window) take(iv interval) {
	switch {
	case !w.started:
		w.started, w.cs, w.ce, w.firstStart = true, iv.start, iv.end, iv.start
	case iv.start > w.ce:
		w.busy += w.ce - w.cs
		g := Gap{AtUS: w.ce, DurUS: iv.start - w.ce}
		w.gap += g.DurUS
		if w.keepGaps {
			w.gaps = keepLargest(w.gaps, g)
		}
		w.cs, w.ce = iv.start, iv.end
	case iv.start < w.cs:
		// Before the open segment: what it covers past the segment's end
		// is counted; what it covered before, already closed, is not.
		w.late++
		w.ce = max(w.ce, iv.end)
	default:
		w.ce = max(w.ce, iv.end)
	}
}

// close merges what waits and ends the union.
func (w *window) close() {
	w.merge(len(w.buf))
	if w.started {
		w.busy += w.ce - w.cs
		w.started = false
	}
}

// stream is the summary of one stream's window; gaps measured from origin.
func (w *window) stream(id string, origin float64) Stream {
	st := Stream{ID: id, Events: w.events, BusyUS: w.busy, GapUS: w.gap}
	for _, g := range w.gaps {
		st.Gaps = append(st.Gaps, Gap{AtUS: g.AtUS - origin, DurUS: g.DurUS})
	}
	sort.SliceStable(st.Gaps, func(i, j int) bool { return st.Gaps[i].DurUS > st.Gaps[j].DurUS })
	return st
}
