package gpu

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Load is what one fake device is doing.
type Load struct {
	Loading   float64 // 0..1 while a service loads its weights; <0 when none loads
	ServiceUp bool    // a service holds its memory
	Busy      bool    // a benchmark step runs
	PIDs      []int   // processes to list on the device
}

// Activity tells the fake fleet what the campaign is doing, device by
// device, so the demo's gauges follow it: memory fills while a server
// loads, utilization rises while benchmarks run.
type Activity struct {
	Devices map[int]Load
}

// Fake is a deterministic fleet: the same seed gives the same readings.
type Fake struct {
	model    FakeModel
	n        int
	seed     uint64
	tick     uint64
	activity atomic.Pointer[Activity]
	temp     []float64
	mem      []float64
	lost     map[int]bool

	mu    sync.Mutex // what a test or the demo sets from another goroutine
	set   map[int]Trouble
	limit map[int]float64

	// The energy counters: each device's mJ up to at, and the power it
	// draws since (EnergyNow reads them from any goroutine).
	emu    sync.Mutex
	at     time.Time
	energy []float64
	drawW  []float64
}

// Trouble is what a test or the demo makes a fake device report: a
// throttle reason, an XID error, a process that is not the campaign's.
type Trouble struct {
	Throttle []string
	XID      int
	ECC      int // uncorrected ECC errors counted since the driver loaded
	Foreign  []Process
}

// NewFake makes n H200-like devices.
func NewFake(n int, seed uint64) *Fake { return NewFakeOf(FakeModels[0], n, seed) }

// NewFakeOf makes n devices of model m.
func NewFakeOf(m FakeModel, n int, seed uint64) *Fake {
	f := &Fake{model: m, n: n, seed: seed, temp: make([]float64, n), mem: make([]float64, n), lost: map[int]bool{},
		energy: make([]float64, n), drawW: make([]float64, n)}
	for i := range f.energy {
		f.energy[i] = 5e9 + 1e8*float64(i) // a counter that has run a while, as a real one has
	}
	for i := range f.temp {
		f.temp[i] = 31 + float64(i%3)
	}
	return f
}

// SetActivity may be called from any goroutine.
func (f *Fake) SetActivity(a Activity) { f.activity.Store(&a) }

// Lose marks a device as fallen off the bus, for tests and the demo.
func (f *Fake) Lose(i int) { f.lost[i] = true }

// SetTrouble makes device i report t from the next sample on (the zero
// Trouble ends it); any goroutine may call it.
func (f *Fake) SetTrouble(i int, t Trouble) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.set == nil {
		f.set = map[int]Trouble{}
	}
	f.set[i] = t
}

// SetPowerLimit sets device i's enforced power limit (its model's by
// default: 700 W for an H200),
// as nvidia-smi -pl would; any goroutine may call it.
func (f *Fake) SetPowerLimit(i int, w float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.limit == nil {
		f.limit = map[int]float64{}
	}
	f.limit[i] = w
}

func (f *Fake) powerLimit(i int) float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if w, ok := f.limit[i]; ok {
		return w
	}
	return f.model.PowerW
}

func (f *Fake) trouble(i int) Trouble {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.set[i]
}

// Inventory lists the fake devices.
func (f *Fake) Inventory() Inventory {
	inv := Inventory{Source: "fake", Driver: "580.00 (fake)", CUDA: "13.0"}
	for i := range f.n {
		inv.Devices = append(inv.Devices, f.device(i))
	}
	if f.n == 0 {
		inv.Why = "fake fleet of 0 GPUs"
	}
	return inv
}

func (f *Fake) device(i int) Device {
	return Device{Index: i, Name: f.model.Name, UUID: fmt.Sprintf("GPU-fake-%04x-%02d", f.seed&0xffff, i), MemTotal: uint64(f.model.Mem)}
}

// Close does nothing.
func (f *Fake) Close() error { return nil }

// noise is a deterministic value in [0,1) for a device and tick.
func (f *Fake) noise(i int, salt uint64) float64 {
	x := f.seed*0x9e3779b97f4a7c15 + uint64(i)*0xbf58476d1ce4e5b9 + f.tick*0x94d049bb133111eb + salt
	x ^= x >> 31
	x *= 0xd6e8feb96aa8c8b5
	x ^= x >> 29
	return float64(x>>11) / float64(1<<53)
}

// EnergyNow is each device's energy counter now (EnergyMeter): what it
// drew up to the last round, and since then at that round's power.
func (f *Fake) EnergyNow() map[DeviceID]float64 {
	return f.energyAt(time.Now())
}

func (f *Fake) energyAt(now time.Time) map[DeviceID]float64 {
	f.emu.Lock()
	defer f.emu.Unlock()
	out := map[DeviceID]float64{}
	for i := range f.n {
		if f.lost[i] {
			continue
		}
		e := f.energy[i]
		if !f.at.IsZero() && now.After(f.at) {
			e += f.drawW[i] * now.Sub(f.at).Seconds() * 1e3
		}
		out[f.device(i).ID()] = e
	}
	return out
}

// Sample advances the fleet one tick.
func (f *Fake) Sample(now time.Time) []Sample {
	f.tick++
	f.emu.Lock()
	prev := f.at
	if !prev.IsZero() && now.After(prev) {
		for i := range f.energy {
			f.energy[i] += f.drawW[i] * now.Sub(prev).Seconds() * 1e3
		}
	}
	if now.After(f.at) {
		f.at = now
	}
	f.emu.Unlock()
	var act Activity
	if p := f.activity.Load(); p != nil {
		act = *p
	}
	out := make([]Sample, f.n)
	for i := range f.n {
		s := Sample{Time: now, Device: f.device(i), MIG: "off"}
		if f.lost[i] {
			s.Lost, s.LostWhy = true, "GPU is lost (fell off the bus?)"
			out[i] = s
			continue
		}
		a, mine := act.Devices[i]
		if !mine {
			a.Loading = -1
		}
		// Powers are an H200's at 700 W, scaled to the model's limit.
		fakeMem, scale := f.model.Mem, f.model.PowerW/700
		target := 0.6 * (1 << 30) // driver context
		util := 0.0
		power := (76 + 8*f.noise(i, 1)) * scale
		switch {
		case mine && a.Loading >= 0:
			target = 0.85 * fakeMem * a.Loading
			util = 3 + 10*f.noise(i, 2)
			power = (110 + 30*f.noise(i, 3)) * scale
		case mine && a.ServiceUp && !a.Busy:
			target = 0.9 * fakeMem
			power = (120 + 20*f.noise(i, 3)) * scale
		}
		if mine && a.Busy {
			util = 86 + 13*f.noise(i, 2)
			power = (560 + 130*f.noise(i, 3)) * scale
			if !a.ServiceUp {
				target = math.Max(target, math.Min(38*(1<<30), 0.4*fakeMem))
			} else {
				target = 0.9 * fakeMem
			}
		}
		f.mem[i] += (target - f.mem[i]) * 0.5
		heat := 32 + (power/scale-76)/15 // about 72 °C at full power, as an H200 in a cooled chassis
		f.temp[i] += (heat - f.temp[i]) * 0.15
		s.Util, s.MemUtil = ok(math.Round(util)), ok(math.Round(util*0.6))
		s.MemUsed = ok(f.mem[i])
		s.Temp = ok(math.Round(f.temp[i]))
		limit := f.powerLimit(i)
		power = math.Min(power, limit)
		s.Power, s.PowerLimit = ok(math.Round(power)), ok(limit)
		clock := f.model.SMMHz
		if util < 5 {
			clock = f.model.IdleSMHz
		}
		s.SMClock, s.MemClock = ok(clock), ok(f.model.MemMHz)
		f.emu.Lock()
		f.drawW[i] = math.Round(power)
		s.Energy = ok(f.energy[i])
		f.emu.Unlock()
		if !prev.IsZero() && now.After(prev) {
			// The driver's own samples, four a round, as a real one keeps.
			span := now.Sub(prev)
			for k := 1; k <= 4; k++ {
				t := prev.Add(span * time.Duration(k) / 4).UnixMicro()
				s.Fine = append(s.Fine, FineSample{T: t, Clock: true, V: float32(clock)}, FineSample{T: t, V: float32(math.Round(util))})
			}
		}
		s.PCIeRx, s.PCIeTx = ok(util*1e8*f.noise(i, 4)), ok(util*4e7*f.noise(i, 5))
		tr := f.trouble(i)
		s.Throttle = tr.Throttle
		if power >= limit && util > 50 {
			s.Throttle = append(s.Throttle, "SW power cap")
		}
		s.XID = ok(float64(tr.XID))
		s.ECCErrors = ok(float64(tr.ECC))
		s.Procs = append(s.Procs, tr.Foreign...)
		if mine && (a.Busy || a.ServiceUp || a.Loading >= 0) {
			for _, pid := range a.PIDs {
				s.Procs = append(s.Procs, Process{PID: pid, MemUsed: uint64(f.mem[i]) / uint64(max(1, len(a.PIDs)))})
			}
		}
		out[i] = s
	}
	return out
}
