package link

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/gpu"
)

// TestGPUWireRoundTrip: a round of samples (values, n/a with reasons,
// throttle, processes) comes out of the wire as it went in, and the
// history a client gets on attach is the runner's, point for point.
func TestGPUWireRoundTrip(t *testing.T) {
	src := gpu.NewFake(3, 1)
	s := gpu.NewSampler(src, time.Second, time.Hour)
	for i := 0; i < 30; i++ {
		s.Round()
	}
	inv := s.Inventory()
	samples := s.Latest()
	samples[1].Power = gpu.Metric{Why: "MIG slice"}
	samples[2].Procs = []gpu.Process{{PID: 42, Name: "python3", MemUsed: 1 << 30, Campaign: true}}
	samples[2].Throttle = []string{"power cap"}
	wire := func(r *GPURound) []byte { b, _ := json.Marshal(r); return b }
	var enc GPUEncoder
	raw := wire(enc.Round(inv, nil, samples))
	var w GPURound
	if err := json.Unmarshal(raw, &w); err != nil {
		t.Fatal(err)
	}
	if w.Inv == nil {
		t.Fatal("the first round lacks the inventory")
	}
	got := DecodeSamples(*w.Inv, w.Samples, nil)
	for i := range samples {
		want := samples[i]
		want.Time = time.UnixMilli(want.Time.UnixMilli())
		// The energy counter and the driver's fine samples are the
		// runner's own (a step's energy and clock): a window has no use
		// for them, and they are not sent.
		want.Energy, want.Fine = gpu.Metric{}, nil
		for _, m := range metrics(&want) {
			switch {
			case !m.OK:
			case math.Abs(m.V) >= 1e5:
				m.V = math.Round(m.V) // bytes: to the unit
			case m.V != math.Trunc(m.V):
				m.V, _ = strconv.ParseFloat(strconv.FormatFloat(m.V, 'g', -1, 32), 64) // float32's precision
			}
		}
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("sample %d:\n got %+v\nwant %+v", i, got[i], want)
		}
	}
	again := wire(enc.Round(inv, nil, samples))
	if len(again) >= len(raw) {
		t.Errorf("an unchanged inventory was sent again (%d >= %d bytes)", len(again), len(raw))
	}
	// Unchanged process lists are left out, and put back from the last round.
	var w2 GPURound
	json.Unmarshal(again, &w2)
	if w2.Samples[2].Procs != nil || !w2.Samples[2].Same {
		t.Errorf("an unchanged process list travelled again: %+v", w2.Samples[2])
	}
	if back := DecodeSamples(inv, w2.Samples, got); !reflect.DeepEqual(back[2].Procs, samples[2].Procs) {
		t.Errorf("the process list was not put back: %+v", back[2].Procs)
	}
	// Eight GPUs at 1 Hz: a few hundred bytes a round, not kilobytes.
	f8 := gpu.NewSampler(gpu.NewFake(8, 1), time.Second, time.Hour)
	f8.Round()
	var e8 GPUEncoder
	e8.Round(f8.Inventory(), nil, f8.Latest())
	if n := len(wire(e8.Round(f8.Inventory(), nil, f8.Round()))); n > 2000 {
		t.Errorf("a round of 8 GPUs is %d bytes on the wire", n)
	} else {
		t.Logf("a round of 8 GPUs: %d bytes", n)
	}

	// On attach: the history.
	var snap GPURound
	json.Unmarshal(wire(GPUSnapshot(s)), &snap)
	c := gpu.NewSampler(gpu.NewMirror(*snap.Inv), time.Second, time.Hour)
	for i, d := range snap.Inv.Devices {
		c.Seed(d, snap.History(i))
	}
	for _, d := range inv.Devices {
		want, have := s.History(d.ID(), 100), c.History(d.ID(), 100)
		if len(want) != 30 || len(have) != len(want) {
			t.Fatalf("history of %v: %d points on the client, %d on the runner", d.ID(), len(have), len(want))
		}
		for i := range want {
			w := want[i]
			w.T = time.UnixMilli(w.T.UnixMilli())
			w.Energy = -1 // the runner's own, not sent
			if !reflect.DeepEqual(have[i], w) {
				t.Fatalf("point %d: %+v, want %+v", i, have[i], w)
			}
		}
	}
}
