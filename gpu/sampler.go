package gpu

import (
	"slices"
	"sync"
	"time"
)

// Point is one device's reading kept in history: small, so hours fit.
type Point struct {
	T        time.Time
	Util     float32 // percent; <0 when n/a
	MemUsed  float32 // GiB; <0 when n/a
	Power    float32 // W; <0 when n/a
	Temp     float32 // °C; <0 when n/a
	SMClock  float32 // MHz; <0 when n/a
	Throttle uint16  // bits as in throttleNames
	XID      uint16  // the last XID error the device reported; 0 none
	ECC      int32   // uncorrected volatile ECC errors since the driver loaded; <0 when n/a
	Lost     bool
	Energy   float64 // the energy counter, mJ; <0 when n/a
}

// Seen is a process observed on a device.
type Seen struct {
	Device DeviceID
	First  time.Time
	Last   time.Time
	Proc   Process
	Peak   uint64 // the most memory it held on the device, bytes
}

// procKey is a process on a device.
type procKey struct {
	Device DeviceID
	PID    int
}

// Sampler polls a Source on its own goroutine and keeps, per device, a
// bounded history and the processes seen on it.
type Sampler struct {
	src      Source
	interval time.Duration
	now      func() time.Time
	keep     int

	mu       sync.Mutex
	latest   []Sample
	hosts    []HostState
	slot     map[DeviceID]int // a device's place in hist, for good
	hist     [][]Point        // ring per device
	head     []int
	fine     []fineRing // the driver's own samples, per device as hist
	sessions map[int]bool
	seen     map[procKey]*Seen
	procs    map[int]procEntry
	owner    func(pid int) string
	inv      Inventory
	desc     []Conditions // the Describer's last word, when the source is one
	descAt   time.Time

	out  chan []Sample
	stop chan struct{}
	done chan struct{}
}

// NewSampler polls src every interval (at least 100 ms), keeping history
// for keepFor (at least 10 minutes).
func NewSampler(src Source, interval, keepFor time.Duration) *Sampler {
	interval = max(interval, 100*time.Millisecond)
	keepFor = max(keepFor, 10*time.Minute)
	s := &Sampler{src: src, interval: interval, now: time.Now, keep: int(keepFor / interval),
		slot: map[DeviceID]int{}, sessions: map[int]bool{}, seen: map[procKey]*Seen{}, procs: map[int]procEntry{}, out: make(chan []Sample, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	s.inv = src.Inventory()
	return s
}

// Inventory is the source's fleet as of the last round: remote hosts add
// their GPUs when they first answer.
func (s *Sampler) Inventory() Inventory {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inv
}

// Hosts is the remote hosts' state as of the last round; nil when every
// GPU is local.
func (s *Sampler) Hosts() []HostState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hosts
}

// Interval is the polling period.
func (s *Sampler) Interval() time.Duration { return s.interval }

// Samples delivers each round; a slow reader gets the latest, not a queue.
func (s *Sampler) Samples() <-chan []Sample { return s.out }

// Start polls until Stop, at whole multiples of the interval by the
// clock (every second on the second), so the monitor's periodic work
// (this, the runner's poll, the screen's clock) wakes it once rather than
// at three moments of each second: a wakeup, not the work, is most of
// what an idle monitor costs.
func (s *Sampler) Start() {
	go func() {
		defer close(s.done)
		t := time.NewTimer(untilNext(time.Now(), s.interval))
		defer t.Stop()
		for {
			s.Round()
			select {
			case <-s.stop:
				return
			case <-t.C:
				t.Reset(untilNext(time.Now(), s.interval))
			}
		}
	}()
}

// untilNext is the time from now to the next whole multiple of every.
func untilNext(now time.Time, every time.Duration) time.Duration {
	return now.Truncate(every).Add(every).Sub(now)
}

// Stop ends polling and closes the source.
func (s *Sampler) Stop() {
	close(s.stop)
	<-s.done
	s.src.Close()
}

// Round takes one sample of every device now; Start calls it each tick.
func (s *Sampler) Round() []Sample {
	now := s.now()
	samples := s.src.Sample(now)
	inv := s.src.Inventory()
	var hosts []HostState
	if h, ok := s.src.(Hosts); ok {
		hosts = h.Hosts()
	}
	s.mu.Lock()
	s.inv, s.hosts = inv, hosts
	for i := range samples {
		sm := &samples[i]
		s.label(sm, now)
		s.record(sm)
	}
	s.latest = samples
	s.mu.Unlock()
	select {
	case <-s.out:
	default:
	}
	s.out <- samples
	return samples
}

func (s *Sampler) record(sm *Sample) {
	i, known := s.slot[sm.Device.ID()]
	if !known {
		i = len(s.hist)
		s.slot[sm.Device.ID()] = i
		s.hist = append(s.hist, make([]Point, 0, min(s.keep, 1024)))
		s.head = append(s.head, 0)
		s.fine = append(s.fine, fineRing{})
	}
	s.fine[i].add(sm.Fine)
	p := Point{T: sm.Time, Util: val(sm.Util, 1), MemUsed: val(sm.MemUsed, 1.0/(1<<30)), Power: val(sm.Power, 1), Temp: val(sm.Temp, 1), SMClock: val(sm.SMClock, 1), Lost: sm.Lost, ECC: -1, Energy: -1}
	if sm.Energy.OK {
		p.Energy = sm.Energy.V
	}
	if sm.ECCErrors.OK {
		p.ECC = int32(min(sm.ECCErrors.V, 1<<30))
	}
	if sm.XID.OK && sm.XID.V > 0 {
		p.XID = uint16(min(sm.XID.V, 65535))
	}
	for _, name := range sm.Throttle {
		for b, t := range throttleNames {
			if t.name == name {
				p.Throttle |= 1 << b
			}
		}
	}
	if len(s.hist[i]) < s.keep {
		s.hist[i] = append(s.hist[i], p)
		return
	}
	s.hist[i][s.head[i]] = p
	s.head[i] = (s.head[i] + 1) % s.keep
}

func val(m Metric, scale float64) float32 {
	if !m.OK {
		return -1
	}
	return float32(m.V * scale)
}

// Latest is the last round, or nil before the first.
func (s *Sampler) Latest() []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.latest
}

// History returns a device's points, oldest first, at most n of them.
func (s *Sampler) History(id DeviceID, n int) []Point {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, known := s.slot[id]
	if !known {
		return nil
	}
	h := s.hist[i]
	ordered := append(slices.Clone(h[s.head[i]:]), h[:s.head[i]]...)
	if len(ordered) > n {
		ordered = ordered[len(ordered)-n:]
	}
	return ordered
}

// Window is a device's points within [from, to], oldest first, at most
// max of them (every k-th, evenly, when there are more).
func (s *Sampler) Window(id DeviceID, from, to time.Time, max int) []Point {
	all := s.History(id, s.keep)
	var in []Point
	for _, p := range all {
		if !p.T.Before(from) && !p.T.After(to) {
			in = append(in, p)
		}
	}
	if max > 0 && len(in) > max {
		step := float64(len(in)) / float64(max)
		thin := make([]Point, 0, max)
		for i := 0; i < max; i++ {
			thin = append(thin, in[int(float64(i)*step)])
		}
		in = thin
	}
	return in
}

// Troubled says a point's clock-event reasons hold trouble, by
// ThrottleTrouble: thermal, HW slowdown, a power brake, and the SW power
// cap where capped (its device's power limit lowered).
func (p Point) Troubled(capped bool) bool {
	for b, t := range throttleNames {
		if p.Throttle&(1<<b) != 0 && ThrottleTrouble(t.name, capped) {
			return true
		}
	}
	return false
}

// Summary is one device over a time window.
type Summary struct {
	Device    Device
	Samples   int
	MeanUtil  float64 // percent; <0 when never read
	PeakUtil  float64
	PeakMem   float64 // GiB
	MeanPower float64 // W
	PeakPower float64
	// EnergyWh is what the device drew over the window: its energy
	// counter's difference, interpolated at the window's edges, where the
	// source has one (EnergyFrom "counter"); else the integral of its
	// power readings, each standing for one interval ("power"); <0 when
	// never read.
	EnergyWh   float64
	EnergyFrom string
	PeakTemp   float64 // °C
	// MeanSMMHz is the SM clock the work ran at, MHz: its mean over the
	// readings while the GPU was busy (utilization from busyUtil), else
	// over all that had it (a window spent idle); <0 when never read. A
	// step's window holds its process's start (imports, allocation) at
	// idle clocks, which are not the clock its kernels ran at. Where the
	// driver keeps its own samples (several a second), it is their mean
	// over the window's busy span, and ClockSamples how many it rests on;
	// 0 when it is the rounds' readings.
	MeanSMMHz    float64
	ClockSamples int
	Throttle     []string
	XIDs         []int // XID errors reported in the window
	ECCNew       int   // uncorrected ECC errors counted in the window (since the last reading before it)
	Lost         bool
	Foreign      []Process // processes not of the campaign seen in the window
	Ours         []Process // the campaign's processes seen in the window, with their peak memory
	// First is the time of the first reading in the window: later than
	// its start by more than an interval when the sampler began (or the
	// GPU answered) only part-way through it. Zero with no reading.
	First time.Time
}

// Summarize reports devices over [from, to]: this machine's GPUs listed in
// devices (nil: all of them) and every GPU of a remote host, since a phase
// names only local indices and runs on the others through srun or the like.
// busyUtil is the utilization (percent) from which a reading is of the
// GPU at work, for the clock its work ran at.
const busyUtil = 50

func (s *Sampler) Summarize(from, to time.Time, devices []int) []Summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Summary
	for _, d := range s.inv.Devices {
		if d.Host == "" && devices != nil && !slices.Contains(devices, d.Index) {
			continue
		}
		i, known := s.slot[d.ID()]
		sum := Summary{Device: d, MeanUtil: -1, MeanPower: -1, PeakUtil: -1, PeakMem: -1, PeakPower: -1, PeakTemp: -1, MeanSMMHz: -1}
		var uN, pN, cN, bN int
		var uS, pS, cS, bS float64
		var bits uint16
		eccBase, eccMax := int32(-1), int32(-1)
		var baseT time.Time
		if known {
			for _, p := range s.hist[i] {
				if p.T.Before(from) && p.ECC >= 0 && p.T.After(baseT) {
					eccBase, baseT = p.ECC, p.T // the last count before the window
				}
				if p.T.Before(from) || p.T.After(to) {
					continue
				}
				if p.ECC >= 0 {
					if eccBase < 0 && eccMax < 0 {
						eccBase = p.ECC // no reading before: counted from the first in it
					}
					eccMax = max(eccMax, p.ECC)
				}
				if sum.Samples == 0 || p.T.Before(sum.First) {
					sum.First = p.T
				}
				sum.Samples++
				sum.Lost = sum.Lost || p.Lost
				bits |= p.Throttle
				if p.XID != 0 && !slices.Contains(sum.XIDs, int(p.XID)) {
					sum.XIDs = append(sum.XIDs, int(p.XID))
				}
				if p.Util >= 0 {
					uS += float64(p.Util)
					uN++
					sum.PeakUtil = max(sum.PeakUtil, float64(p.Util))
				}
				if p.Power >= 0 {
					pS += float64(p.Power)
					pN++
					sum.PeakPower = max(sum.PeakPower, float64(p.Power))
				}
				if p.SMClock > 0 {
					cS += float64(p.SMClock)
					cN++
					if p.Util >= busyUtil {
						bS += float64(p.SMClock)
						bN++
					}
				}
				sum.PeakMem = max(sum.PeakMem, float64(p.MemUsed))
				sum.PeakTemp = max(sum.PeakTemp, float64(p.Temp))
			}
		}
		if uN > 0 {
			sum.MeanUtil = uS / float64(uN)
		}
		switch {
		case bN > 0:
			sum.MeanSMMHz = bS / float64(bN)
		case cN > 0:
			sum.MeanSMMHz = cS / float64(cN)
		}
		if eccBase >= 0 && eccMax > eccBase {
			sum.ECCNew = int(eccMax - eccBase)
		}
		if known {
			if mhz, n := s.fine[i].heldClock(from, to); n > 0 {
				sum.MeanSMMHz, sum.ClockSamples = mhz, n
			}
		}
		if pN > 0 {
			sum.MeanPower = pS / float64(pN)
			sum.EnergyWh, sum.EnergyFrom = pS*s.interval.Hours(), "power"
		} else {
			sum.EnergyWh = -1
		}
		if known {
			if mj, ok := counterSpan(s.hist[i], from, to, s.interval); ok {
				sum.EnergyWh, sum.EnergyFrom = mj/3.6e6, "counter"
			}
		}
		for b, t := range throttleNames {
			if bits&(1<<b) != 0 {
				sum.Throttle = append(sum.Throttle, t.name)
			}
		}
		for _, sn := range s.seen {
			if sn.Device != d.ID() || sn.Last.Before(from) || sn.First.After(to) {
				continue
			}
			if sn.Proc.Campaign {
				p := sn.Proc
				p.MemUsed = sn.Peak
				sum.Ours = append(sum.Ours, p)
			} else {
				sum.Foreign = append(sum.Foreign, sn.Proc)
			}
		}
		slices.SortFunc(sum.Foreign, func(a, b Process) int { return a.PID - b.PID })
		slices.SortFunc(sum.Ours, func(a, b Process) int { return a.PID - b.PID })
		out = append(out, sum)
	}
	return out
}
