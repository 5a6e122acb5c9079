package trace

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// The exact summary the windows stand for: every interval kept, sorted,
// merged. The reference the windowed reader is held to.

// union sorts ivs and returns the earliest start and the length of their union.
func union(ivs []interval) (float64, float64) {
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].start < ivs[j].start })
	lo := ivs[0].start
	var busy float64
	cs, ce := ivs[0].start, ivs[0].end
	for _, iv := range ivs[1:] {
		if iv.start > ce {
			busy += ce - cs
			cs, ce = iv.start, iv.end
			continue
		}
		ce = max(ce, iv.end)
	}
	return lo, busy + ce - cs
}

func streamOf(id string, ivs []interval, origin float64) Stream {
	st := Stream{ID: id, Events: len(ivs)}
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].start < ivs[j].start })
	cs, ce := ivs[0].start, ivs[0].end
	for _, iv := range ivs[1:] {
		if iv.start > ce {
			st.BusyUS += ce - cs
			g := Gap{AtUS: ce - origin, DurUS: iv.start - ce}
			st.GapUS += g.DurUS
			st.Gaps = keepLargest(st.Gaps, g)
			cs, ce = iv.start, iv.end
			continue
		}
		ce = max(ce, iv.end)
	}
	st.BusyUS += ce - cs
	return st
}

// TestWindowMatchesExact: a stream of 200,000 activities on 3 streams,
// each shuffled within 1,000 places of its time order (as a trace's events
// come nearly sorted), read through windows of 4,096: busy time, the
// window, each stream's busy and gap time and largest gaps equal the
// exact ones (every interval kept and sorted), with nothing late.
func TestWindowMatchesExact(t *testing.T) {
	defer func(n int) { windowMax = n }(windowMax)
	windowMax = 4096
	rng := rand.New(rand.NewPCG(1, 2))
	a := newAgg()
	exact := map[string][]interval{}
	var every []interval
	type ev struct {
		key string
		iv  interval
	}
	var evs []ev
	for s, key := range []string{"0/7", "0/13", "1/7"} {
		ts := float64(s) * 3
		for range 200000 / 3 {
			ts += rng.Float64() * 10
			if rng.IntN(500) == 0 {
				ts += 5000 + rng.Float64()*1e4 // a host-bound gap
			}
			d := 1 + rng.Float64()*8
			evs = append(evs, ev{key, interval{ts, ts + d}})
		}
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].iv.start < evs[j].iv.start })
	// Nearly sorted: each moved by up to 1,000 places.
	keys := make([]float64, len(evs))
	for i := range keys {
		keys[i] = float64(i) + rng.Float64()*1000
	}
	sort.Sort(byKey{evs: func(i, j int) { evs[i], evs[j] = evs[j], evs[i] }, keys: keys})
	for _, e := range evs {
		w := a.streams[e.key]
		if w == nil {
			w = newWindow(true)
			a.streams[e.key] = w
		}
		w.add(e.iv)
		a.all.add(e.iv)
		exact[e.key] = append(exact[e.key], e.iv)
		every = append(every, e.iv)
	}
	s := a.summary(DefaultRules(), 10)
	lo, busy := union(every)
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }
	if !near(s.BusyUS, busy) || s.Late != 0 {
		t.Errorf("busy %v (late %d), exact %v", s.BusyUS, s.Late, busy)
	}
	for _, st := range s.Streams {
		want := streamOf(st.ID, exact[st.ID], lo)
		if !near(st.BusyUS, want.BusyUS) || !near(st.GapUS, want.GapUS) || st.Events != want.Events || len(st.Gaps) != len(want.Gaps) {
			t.Errorf("stream %s: %+v\nexact %+v", st.ID, st, want)
			continue
		}
		for i := range st.Gaps {
			if !near(st.Gaps[i].AtUS, want.Gaps[i].AtUS) || !near(st.Gaps[i].DurUS, want.Gaps[i].DurUS) {
				t.Errorf("stream %s gap %d: %+v, exact %+v", st.ID, i, st.Gaps[i], want.Gaps[i])
			}
		}
	}
}

// byKey sorts events by keys, moving both.
type byKey struct {
	evs  func(i, j int)
	keys []float64
}

func (b byKey) Len() int           { return len(b.keys) }
func (b byKey) Less(i, j int) bool { return b.keys[i] < b.keys[j] }
func (b byKey) Swap(i, j int)      { b.evs(i, j); b.keys[i], b.keys[j] = b.keys[j], b.keys[i] }

// TestWindowSaysLate: an activity far out of order (before everything
// merged) is counted as late, so the summary can say it is approximate.
func TestWindowSaysLate(t *testing.T) {
	defer func(n int) { windowMax = n }(windowMax)
	windowMax = 8
	w := newWindow(true)
	for i := range 40 {
		w.add(interval{float64(100 + i*10), float64(105 + i*10)})
	}
	w.add(interval{1, 2})
	w.close()
	if w.late != 1 {
		t.Errorf("late %d, want 1", w.late)
	}
}

// TestHugeStringsCostNoMemory: a 50 MB string the reader skips and a
// 50 MB kernel name are read through the reader's buffer: the summary
// costs a few MB of allocation, not the strings (216 MB before), and the
// name is kept through its first 4 KiB.
func TestHugeStringsCostNoMemory(t *testing.T) {
	huge := strings.Repeat("a", 50<<20)
	in := `{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"x","ts":0,"dur":1,"args":{"blob":"` + huge + `"}},` +
		`{"ph":"X","cat":"kernel","name":"` + huge + `","pid":0,"tid":7,"ts":0,"dur":10}]}`
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := Chrome(strings.NewReader(in), Options{})
	runtime.ReadMemStats(&after)
	if err != nil || s.Kernels != 1 {
		t.Fatalf("summary %+v, %v", s, err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 24<<20 {
		t.Errorf("reading two 50 MB strings allocated %d MB", got>>20)
	}
	if n := len(s.Top[0].Name); n != maxName {
		t.Errorf("the name kept is %d bytes, want %d", n, maxName)
	}
}

// TestEscapesAcrossTheBuffer: strings whose escaped quotes and
// backslashes fall across the reader's buffer are skipped and read whole;
// a name cut inside an escape keeps what comes before it.
func TestEscapesAcrossTheBuffer(t *testing.T) {
	for _, n := range []int{4095, 4096, 4097, 1<<20 - 1, 1 << 20, 1<<20 + 1} {
		tricky := strings.Repeat(`\\`, n/2) + `\"` + strings.Repeat("b", n%7) + `\\`
		in := `{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"x","ts":0,"dur":1,"args":{"s":"` + tricky + `"}},` +
			`{"ph":"X","cat":"kernel","name":"k\"1\\","pid":0,"tid":7,"ts":0,"dur":10},` +
			`{"ph":"X","cat":"kernel","name":"` + strings.Repeat("c", maxName-1) + `\u00e9tail","pid":0,"tid":7,"ts":20,"dur":10}]}`
		s, err := Chrome(strings.NewReader(in), Options{Top: 5})
		if err != nil || s.Kernels != 2 {
			t.Fatalf("n %d: %+v, %v", n, s, err)
		}
		names := map[string]bool{}
		for _, k := range s.Top {
			names[k.Name] = true
		}
		if !names[`k"1\`] || !names[strings.Repeat("c", maxName-1)] {
			t.Errorf("n %d: names %v", n, names)
		}
	}
}
