package gpu

// The driver's own samples (its SM clock and utilization, several a
// second), kept a while per device, and what a window's figures read
// from them and from the energy counter: the clock a run held over the
// span its kernels ran, and the energy it drew as the counter's
// difference.

import (
	"slices"
	"time"
)

// fineKeep is how many driver samples a device keeps: at the H100's rate
// of about six of each kind a second, some twenty minutes; a window
// older than that reads its clock from the rounds' means instead.
const fineKeep = 16384

// fineRing is one device's driver samples, oldest overwritten first.
type fineRing struct {
	buf  []FineSample
	head int // the oldest, once full
}

func (r *fineRing) add(ss []FineSample) {
	for _, f := range ss {
		if len(r.buf) < fineKeep {
			r.buf = append(r.buf, f)
			continue
		}
		r.buf[r.head] = f
		r.head = (r.head + 1) % fineKeep
	}
}

// each calls fn on the samples in [from, to] (µs), oldest first.
func (r *fineRing) each(from, to int64, fn func(FineSample)) {
	n := len(r.buf)
	for k := range n {
		f := r.buf[(r.head+k)%n]
		if f.T >= from && f.T <= to {
			fn(f)
		}
	}
}

// oldest is the first sample's time (µs); 0 with none.
func (r *fineRing) oldest() int64 {
	if len(r.buf) == 0 {
		return 0
	}
	return r.buf[r.head%len(r.buf)].T
}

// heldClock is the SM clock a device held over [from, to] from the
// driver's samples: their mean over the busy span (from the first to the
// last utilization sample at or above busyUtil), where the kernels ran;
// over the whole window where it was never busy or the driver keeps no
// utilization samples. n is how many clock samples it rests on; 0 when
// the window holds none, or begins before the samples kept.
func (r *fineRing) heldClock(from, to time.Time) (mhz float64, n int) {
	lo, hi := from.UnixMicro(), to.UnixMicro()
	if old := r.oldest(); old == 0 || old > lo {
		return 0, 0
	}
	var busyFrom, busyTo int64
	utils := 0
	r.each(lo, hi, func(f FineSample) {
		if f.Clock {
			return
		}
		utils++
		if f.V >= busyUtil {
			if busyFrom == 0 {
				busyFrom = f.T
			}
			busyTo = f.T
		}
	})
	if busyFrom != 0 {
		lo, hi = busyFrom, busyTo
	}
	var sum float64
	r.each(lo, hi, func(f FineSample) {
		if f.Clock {
			sum += float64(f.V)
			n++
		}
	})
	if n == 0 {
		return 0, 0
	}
	return sum / float64(n), n
}

// counterSpan is what a device's energy counter moved over [from, to]
// (mJ), each edge interpolated between the readings on either side of
// it; where the history begins inside the window, from its first
// reading. False when no reading with a counter lies within two
// intervals of an edge, or the counter went back in between (the
// driver reloaded): then it is no basis.
func counterSpan(pts []Point, from, to time.Time, interval time.Duration) (float64, bool) {
	var in []Point
	for _, p := range pts {
		if p.Energy >= 0 && !p.T.Before(from.Add(-2*interval)) && !p.T.After(to.Add(2*interval)) {
			in = append(in, p)
		}
	}
	slices.SortFunc(in, func(a, b Point) int { return a.T.Compare(b.T) })
	for k := 1; k < len(in); k++ {
		if in[k].Energy < in[k-1].Energy {
			return 0, false
		}
	}
	if len(in) == 0 {
		return 0, false
	}
	if in[0].T.After(from) {
		from = in[0].T // the history begins inside the window
	}
	a, ok1 := interpolate(in, from)
	b, ok2 := interpolate(in, to)
	if !ok2 && !in[len(in)-1].T.After(to) && to.Sub(in[len(in)-1].T) <= 2*interval {
		b, ok2 = in[len(in)-1].Energy, true // the window ends after the last reading
	}
	if !ok1 || !ok2 {
		return 0, false
	}
	return b - a, true
}

// interpolate is the counter at t between the sorted readings on either
// side of it.
func interpolate(in []Point, t time.Time) (float64, bool) {
	k, _ := slices.BinarySearchFunc(in, t, func(p Point, t time.Time) int { return p.T.Compare(t) })
	switch {
	case k < len(in) && in[k].T.Equal(t):
		return in[k].Energy, true
	case k == 0 || k == len(in):
		return 0, false
	}
	a, b := in[k-1], in[k]
	frac := float64(t.Sub(a.T)) / float64(b.T.Sub(a.T))
	return a.Energy + frac*(b.Energy-a.Energy), true
}

// EnergyNow reads the devices' energy counters now where the source can
// (EnergyMeter: NVML, the fake fleet): mJ by device, and false where it
// cannot (a remote exporter, read only at each round).
func (s *Sampler) EnergyNow() (map[DeviceID]float64, bool) {
	m, ok := s.src.(EnergyMeter)
	if !ok {
		return nil, false
	}
	e := m.EnergyNow()
	return e, len(e) > 0
}
