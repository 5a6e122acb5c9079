package gpu

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// Rounds fall on whole multiples of the interval by the clock, where the
// runner's poll and the screen's clock fall too.
func TestRoundsFallOnTheInterval(t *testing.T) {
	at := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	for _, c := range []struct{ now, every, want time.Duration }{
		{300 * time.Millisecond, time.Second, 700 * time.Millisecond},
		{0, time.Second, time.Second},
		{1300 * time.Millisecond, 500 * time.Millisecond, 200 * time.Millisecond},
	} {
		if got := untilNext(at.Add(c.now), c.every); got != c.want {
			t.Errorf("at +%s every %s: next round in %s; want %s", c.now, c.every, got, c.want)
		}
	}
}

// steady is a source of one GPU drawing a set power.
type steady struct{ watts float64 }

func (s steady) Inventory() Inventory {
	return Inventory{Source: "test", Devices: []Device{{Index: 0}}}
}
func (s steady) Close() error { return nil }
func (s steady) Sample(now time.Time) []Sample {
	return []Sample{{Time: now, Device: Device{Index: 0}, Power: ok(s.watts), Util: ok(50)}}
}

// TestEnergyIsPowerOverTime: each reading stands for one interval, so 36
// readings of 500 W a second apart are 500 W for 36 s: 5 Wh; a window
// with no reading has no energy to say.
func TestEnergyIsPowerOverTime(t *testing.T) {
	s := NewSampler(steady{500}, time.Second, time.Hour)
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	for i := range 36 {
		s.now = func() time.Time { return t0.Add(time.Duration(i) * time.Second) }
		s.Round()
	}
	sum := s.Summarize(t0, t0.Add(time.Hour), nil)[0]
	if math.Abs(sum.EnergyWh-5) > 1e-9 || sum.MeanPower != 500 {
		t.Errorf("energy %v Wh at %v W; want 5 Wh at 500 W", sum.EnergyWh, sum.MeanPower)
	}
	if half := s.Summarize(t0, t0.Add(17*time.Second), nil)[0]; math.Abs(half.EnergyWh-2.5) > 1e-9 {
		t.Errorf("the first 18 readings: %v Wh, want 2.5", half.EnergyWh)
	}
	if none := s.Summarize(t0.Add(-time.Hour), t0.Add(-time.Minute), nil)[0]; none.EnergyWh >= 0 {
		t.Errorf("a window without readings says %v Wh", none.EnergyWh)
	}
}

// holding is a source of one GPU on which processes hold memory.
type holding struct{ procs *[]Process }

func (h holding) Inventory() Inventory { return steady{}.Inventory() }
func (h holding) Close() error         { return nil }
func (h holding) Sample(now time.Time) []Sample {
	return []Sample{{Time: now, Device: Device{Index: 0}, Procs: append([]Process(nil), *h.procs...)}}
}

// TestOwnerMakesAProcessTheCampaigns: a process in no session of the
// campaign (a setsid'd helper) that its owner says a step of phase
// "leak" started is the campaign's, with its phase, and the summary
// lists it among the campaign's with its peak memory, never as foreign.
func TestOwnerMakesAProcessTheCampaigns(t *testing.T) {
	self := os.Getpid() // a pid /proc knows
	procs := []Process{{PID: self, MemUsed: 2 << 30}}
	s := NewSampler(holding{&procs}, time.Second, time.Hour)
	s.SetOwner(func(pid int) string {
		if pid == self {
			return "leak"
		}
		return ""
	})
	t0 := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return t0 }
	got := s.Round()[0].Procs[0]
	if !got.Campaign || got.Phase != "leak" {
		t.Errorf("process %+v: want the campaign's, of phase leak", got)
	}
	procs[0].MemUsed = 1 << 30
	s.now = func() time.Time { return t0.Add(time.Second) }
	s.Round()
	sum := s.Summarize(t0, t0.Add(time.Minute), nil)[0]
	if len(sum.Foreign) != 0 || len(sum.Ours) != 1 || sum.Ours[0].Phase != "leak" || sum.Ours[0].MemUsed != 2<<30 {
		t.Errorf("foreign %+v, ours %+v: want it the campaign's, at its 2 GiB peak", sum.Foreign, sum.Ours)
	}
}

// TestOwnerByAncestry: a process whose own environment says nothing (one
// tearing down, its environment gone) is its nearest saying ancestor's:
// the step's supervisor.
func TestOwnerByAncestry(t *testing.T) {
	self, parent := os.Getpid(), os.Getppid()
	procs := []Process{{PID: self, MemUsed: 1 << 30}}
	s := NewSampler(holding{&procs}, time.Second, time.Hour)
	s.SetOwner(func(pid int) string {
		if pid == parent {
			return "leak"
		}
		return ""
	})
	if got := s.Round()[0].Procs[0]; !got.Campaign || got.Phase != "leak" {
		t.Errorf("process %+v: want the campaign's, of its parent's phase leak", got)
	}
}

// TestFakeBoards: a fake fleet of another board says its name, memory,
// power limit and clocks; under load it draws near its own limit, never
// an H200's.
func TestFakeBoards(t *testing.T) {
	m, ok := FakeModelOf("rtx-pro-6000")
	if !ok {
		t.Fatal("no rtx-pro-6000")
	}
	f := NewFakeOf(m, 2, 1)
	f.SetActivity(Activity{Devices: map[int]Load{0: {Busy: true, Loading: -1}}})
	var s []Sample
	for range 20 {
		s = f.Sample(time.Now())
	}
	d := s[0].Device
	if d.Name != "NVIDIA RTX PRO 6000 Blackwell Workstation Edition" || d.MemTotal != 97887<<20 {
		t.Errorf("device %+v", d)
	}
	if s[0].PowerLimit.V != 600 || s[0].Power.V > 600 || s[0].Power.V < 450 || s[0].SMClock.V != 2617 || s[0].MemClock.V != 14001 {
		t.Errorf("busy: power %v of %v W, clocks %v/%v MHz", s[0].Power.V, s[0].PowerLimit.V, s[0].SMClock.V, s[0].MemClock.V)
	}
	if s[1].Power.V > 80 {
		t.Errorf("idle: %v W", s[1].Power.V)
	}
	if h, _ := FakeModelOf(""); NewFakeOf(h, 1, 1).Inventory().Devices[0].Name != "NVIDIA H200" {
		t.Error("the default board is not the H200")
	}
	_, _, _, err := Open([]Spec{{Kind: "fake", N: 8, Model: "rtx6000"}}, time.Second)
	if err == nil || !strings.Contains(err.Error(), "no such board") || !strings.Contains(err.Error(), "rtx-pro-6000") {
		t.Errorf("an unknown board: %v", err)
	}
}

// startThenWork is one GPU idle at a low clock for its first readings (a
// step's process starting), then busy at a lower-than-boost clock.
type startThenWork struct{ n *int }

func (s startThenWork) Inventory() Inventory { return steady{}.Inventory() }
func (s startThenWork) Close() error         { return nil }
func (s startThenWork) Sample(now time.Time) []Sample {
	*s.n++
	if *s.n <= 6 {
		return []Sample{{Time: now, Device: Device{Index: 0}, Util: ok(0), SMClock: ok(345)}}
	}
	return []Sample{{Time: now, Device: Device{Index: 0}, Util: ok(100), SMClock: ok(1400)}}
}

// TestClockIsTheWorksClock: a step's SM clock is the one its work ran at
// (the busy readings'), not its mean with the idle start; a window with
// no busy reading says the clock it had.
func TestClockIsTheWorksClock(t *testing.T) {
	n := 0
	s := NewSampler(startThenWork{&n}, time.Second, time.Hour)
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	for i := range 10 {
		s.now = func() time.Time { return t0.Add(time.Duration(i) * time.Second) }
		s.Round()
	}
	if got := s.Summarize(t0, t0.Add(time.Hour), nil)[0].MeanSMMHz; got != 1400 {
		t.Errorf("the step's clock %v MHz; want 1400, its work's (the idle start left out)", got)
	}
	if got := s.Summarize(t0, t0.Add(5*time.Second), nil)[0].MeanSMMHz; got != 345 {
		t.Errorf("an idle window's clock %v MHz; want 345", got)
	}
}

// scripted is a source of one GPU whose sample at each round a test
// writes: power, energy counter and the driver's own samples.
type scripted struct{ next func(now time.Time) Sample }

func (s scripted) Inventory() Inventory {
	return Inventory{Source: "test", Devices: []Device{{Index: 0}}}
}
func (s scripted) Close() error                  { return nil }
func (s scripted) Sample(now time.Time) []Sample { return []Sample{s.next(now)} }

// TestEnergyFromTheCounter: a GPU that idles at 100 W and works at 700 W
// from 2.5 s to 8.5 s, sampled each second: its power readings integrated
// over [2.5 s, 8.5 s] give the readings at the window's edges to the
// wrong side (what the issue measured as ±13% on 6 s steps), the counter's
// difference, interpolated at the edges, does not.
func TestEnergyFromTheCounter(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	watts := func(at float64) float64 {
		if at >= 2.5 && at < 8.5 {
			return 700
		}
		return 100
	}
	counter := func(at float64) float64 { // mJ: the exact integral
		e := 0.0
		for x := 0.0; x < at-1e-9; x += 0.001 {
			e += watts(x) // 1 ms at W = W mJ
		}
		return e
	}
	s := NewSampler(scripted{func(now time.Time) Sample {
		at := now.Sub(t0).Seconds()
		return Sample{Time: now, Device: Device{Index: 0}, Power: ok(watts(at)), Energy: ok(counter(at)), Util: ok(50)}
	}}, time.Second, time.Hour)
	for i := range 12 {
		s.now = func() time.Time { return t0.Add(time.Duration(i) * time.Second) }
		s.Round()
	}
	from, to := t0.Add(2500*time.Millisecond), t0.Add(8500*time.Millisecond)
	sum := s.Summarize(from, to, nil)[0]
	truth := 6 * 700 / 3600.0
	if sum.EnergyFrom != "counter" {
		t.Fatalf("energy from %q; want the counter", sum.EnergyFrom)
	}
	// Interpolated within the second at each edge: at most half a
	// second of the 600 W step off, at each end, of 4,200 J.
	if math.Abs(sum.EnergyWh-truth)/truth > 0.08 {
		t.Errorf("energy %v Wh; want about %v", sum.EnergyWh, truth)
	}
	// The same GPU without a counter falls back to its power readings.
	bare := NewSampler(scripted{func(now time.Time) Sample {
		return Sample{Time: now, Device: Device{Index: 0}, Power: ok(watts(now.Sub(t0).Seconds())), Energy: na("not supported")}
	}}, time.Second, time.Hour)
	for i := range 12 {
		bare.now = func() time.Time { return t0.Add(time.Duration(i) * time.Second) }
		bare.Round()
	}
	if b := bare.Summarize(from, to, nil)[0]; b.EnergyFrom != "power" || b.EnergyWh <= 0 {
		t.Errorf("no counter: %v Wh from %q; want power readings", b.EnergyWh, b.EnergyFrom)
	}
	// A counter that went back (a driver reload) is no basis.
	back := NewSampler(scripted{func(now time.Time) Sample {
		at := now.Sub(t0).Seconds()
		e := counter(at)
		if at < 5 {
			e += 1e9 // counted since a load before the one at 5 s
		}
		return Sample{Time: now, Device: Device{Index: 0}, Power: ok(watts(at)), Energy: ok(e)}
	}}, time.Second, time.Hour)
	for i := range 12 {
		back.now = func() time.Time { return t0.Add(time.Duration(i) * time.Second) }
		back.Round()
	}
	if b := back.Summarize(from, to, nil)[0]; b.EnergyFrom != "power" {
		t.Errorf("a counter that went back: energy from %q; want power readings", b.EnergyFrom)
	}
}

// TestHeldClockFromTheDriversSamples: a step whose process imports for
// 2 s at the idle clock, then runs its kernels at 1,755 MHz (a power cap
// moving it between 1,710 and 1,800 within each second), then idles: the
// clock held is the mean of the driver's samples over the busy span,
// every one of them, not the rounds' means (which mix idle and busy
// within a second); a window older than the samples kept says none.
func TestHeldClockFromTheDriversSamples(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	const perRound = 6
	s := NewSampler(scripted{func(now time.Time) Sample {
		sm := Sample{Time: now, Device: Device{Index: 0}, Util: ok(0), SMClock: ok(345)}
		for k := range perRound {
			at := now.Add(-time.Second + time.Duration(k+1)*time.Second/perRound)
			x := at.Sub(t0).Seconds()
			clock, util := float32(345), float32(0)
			if x > 2 && x <= 7 {
				clock, util = 1710, 100
				if k%2 == 1 {
					clock = 1800
				}
			}
			sm.Fine = append(sm.Fine, FineSample{T: at.UnixMicro(), Clock: true, V: clock}, FineSample{T: at.UnixMicro(), V: util})
		}
		return sm
	}}, time.Second, time.Hour)
	for i := 1; i <= 10; i++ {
		s.now = func() time.Time { return t0.Add(time.Duration(i) * time.Second) }
		s.Round()
	}
	sum := s.Summarize(t0.Add(500*time.Millisecond), t0.Add(8*time.Second), nil)[0]
	if math.Abs(sum.MeanSMMHz-1755) > 1e-3 || sum.ClockSamples != 5*perRound {
		t.Errorf("clock held %v MHz over %d samples; want 1755 over %d", sum.MeanSMMHz, sum.ClockSamples, 5*perRound)
	}
	if old := s.Summarize(t0.Add(-time.Minute), t0.Add(8*time.Second), nil)[0]; old.ClockSamples != 0 {
		t.Errorf("a window begun before the samples kept: %d samples; want none (the rounds' means)", old.ClockSamples)
	}
}

// TestFakeCounterIsItsPower: the fake fleet's counter is the integral of
// the power it reports, and EnergyNow reads it between rounds.
func TestFakeCounterIsItsPower(t *testing.T) {
	f := NewFake(1, 7)
	f.SetActivity(Activity{Devices: map[int]Load{0: {Busy: true}}})
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	var want float64
	var last Sample
	for i := range 5 {
		s := f.Sample(t0.Add(time.Duration(i) * time.Second))[0]
		if i > 0 {
			want += last.Power.V * 1e3
			if math.Abs(s.Energy.V-last.Energy.V-last.Power.V*1e3) > 1e-6 {
				t.Errorf("round %d: counter moved %v mJ; want %v W over 1 s", i, s.Energy.V-last.Energy.V, last.Power.V)
			}
		}
		last = s
	}
	now := f.energyAt(t0.Add(4500 * time.Millisecond))[DeviceID{Index: 0}]
	if math.Abs(now-last.Energy.V-last.Power.V*500) > 1e-6 {
		t.Errorf("half a second after the last round: %v mJ past it; want %v", now-last.Energy.V, last.Power.V*500)
	}
}
