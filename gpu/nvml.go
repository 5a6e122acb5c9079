package gpu

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// NVML reads devices through the driver's NVML library, loaded at run time.
type NVML struct {
	lib  nvml.Interface
	inv  Inventory
	devs []nvml.Device
	lost map[int]string
	// pcie is each device's last PCIe reading and when it was taken: the
	// driver's throughput call samples the link for 20 ms and was over half
	// of an idle runner's CPU on an H200 when made every second.
	pcie map[int]pcieReading
	// still is each device's settings that change only when a person
	// changes them (MIG mode, the enforced power limit), read once per
	// stillEvery: the MIG query alone was a third of an idle runner's CPU
	// on an H200 when made every second.
	still map[int]stillReading
	// clkSeen is each device's last SM clock sample taken (the driver's
	// timestamp, µs), where the next round's samples start.
	clkSeen map[int]uint64
	// utilSeen is the same for the utilization samples.
	utilSeen map[int]uint64
	// tsBase maps the driver's sample timestamps onto the wall clock,
	// µs to add: NVML says "CPU timestamp in microseconds", which some
	// drivers count from boot, not the epoch. The least lag seen between
	// a read and its newest sample is the best estimate (that sample is
	// at most one sampling period old).
	tsBase map[int]int64
	// poll reads the SM clock ten times a second, while a device is
	// busy, where the driver keeps no clock samples of its own (an H100
	// on driver 580 answers "not found"): a step of a few seconds then has
	// dozens, not the rounds' one a second. nil until needed.
	poll *clockPoll
}

// clockPollEvery is how often clockPoll reads a busy device's clock.
const clockPollEvery = 100 * time.Millisecond

// clockPoll reads the SM clock of the devices last seen busy, on a
// goroutine of its own, into a buffer each round drains.
type clockPoll struct {
	mu   sync.Mutex
	busy map[int]bool
	got  map[int][]FineSample
	stop chan struct{}
	done chan struct{}
}

func (n *NVML) startPoll() *clockPoll {
	p := &clockPoll{busy: map[int]bool{}, got: map[int][]FineSample{}, stop: make(chan struct{}), done: make(chan struct{})}
	devs := n.devs
	go func() {
		defer close(p.done)
		t := time.NewTicker(clockPollEvery)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case now := <-t.C:
				p.mu.Lock()
				for i, d := range devs {
					if d == nil || !p.busy[i] || len(p.got[i]) > 4096 {
						continue
					}
					if c, ret := clockOf(d); ret == nvml.SUCCESS {
						p.got[i] = append(p.got[i], FineSample{T: now.UnixMicro(), Clock: true, V: float32(c)})
					}
				}
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// take is device i's clock readings since the last take; busy says
// whether to read it until the next.
func (p *clockPoll) take(i int, busy bool) []FineSample {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.got[i]
	p.got[i], p.busy[i] = nil, busy
	return out
}

// clockOf reads a device's SM clock, a mock's missing call taken as none.
func clockOf(d nvml.Device) (c uint32, ret nvml.Return) {
	defer func() {
		if recover() != nil {
			c, ret = 0, nvml.ERROR_NOT_SUPPORTED
		}
	}()
	return d.GetClockInfo(nvml.CLOCK_SM)
}

// stillEvery is how often a device's settings are read again.
const stillEvery = 30 * time.Second

type stillReading struct {
	at         time.Time
	migCur     int
	migRet     nvml.Return
	powerLimit Metric
	ecc        Metric // uncorrected volatile ECC errors: read with PCIe, every pcieEvery
	eccAt      time.Time
}

// pcieEvery is how often a device's PCIe throughput is read; between two
// readings a sample carries the last.
const pcieEvery = 5 * time.Second

type pcieReading struct {
	at     time.Time
	rx, tx Metric
}

// OpenNVML initialises NVML through lib (nvml.New() for the real driver,
// a mock in tests). The error says why in words: no driver, no library,
// no permission.
func OpenNVML(lib nvml.Interface) (src *NVML, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("NVML failed to load: %v", p)
		}
	}()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML did not start: %s", explain(ret))
	}
	n := &NVML{lib: lib, lost: map[int]string{}, clkSeen: map[int]uint64{}, utilSeen: map[int]uint64{}}
	n.inv.Source = "nvml"
	if v, ret := lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		n.inv.Driver = v
	}
	if v, ret := lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		n.inv.CUDA = fmt.Sprintf("%d.%d", v/1000, v%1000/10)
	}
	count, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		lib.Shutdown()
		return nil, fmt.Errorf("NVML cannot count devices: %s", explain(ret))
	}
	for i := range count {
		d, ret := lib.DeviceGetHandleByIndex(i)
		dev := Device{Index: i}
		if ret != nvml.SUCCESS {
			n.lost[i] = explain(ret)
			n.devs = append(n.devs, nil)
			n.inv.Devices = append(n.inv.Devices, dev)
			continue
		}
		dev.Name, _ = d.GetName()
		dev.UUID, _ = d.GetUUID()
		if m, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
			dev.MemTotal = m.Total
		}
		n.devs = append(n.devs, d)
		n.inv.Devices = append(n.inv.Devices, dev)
	}
	if count == 0 {
		n.inv.Why = "NVML sees no GPU"
	}
	return n, nil
}

func explain(ret nvml.Return) string {
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return "libnvidia-ml.so not found (no NVIDIA driver here)"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return "the NVIDIA driver is not loaded"
	case nvml.ERROR_NO_PERMISSION:
		return "no permission to use the GPU"
	case nvml.ERROR_NOT_SUPPORTED:
		return "not supported"
	case nvml.ERROR_GPU_IS_LOST:
		return "GPU is lost (fell off the bus?)"
	case nvml.ERROR_NOT_FOUND:
		return "not found"
	}
	return nvml.ErrorString(ret)
}

// Inventory returns the devices found at start.
func (n *NVML) Inventory() Inventory { return n.inv }

// Close shuts NVML down.
func (n *NVML) Close() error {
	if n.poll != nil {
		close(n.poll.stop)
		<-n.poll.done
		n.poll = nil
	}
	if ret := n.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("NVML shutdown: %s", explain(ret))
	}
	return nil
}

// Sample reads every device; one that fails is Lost, the rest go on.
func (n *NVML) Sample(now time.Time) []Sample {
	out := make([]Sample, len(n.devs))
	for i, d := range n.devs {
		out[i] = n.sampleOne(now, i, d)
	}
	return out
}

func memoryInfo(d nvml.Device) (used, total uint64, ret nvml.Return) {
	if m, ret := memoryInfoV2(d); ret == nvml.SUCCESS {
		return m.Used, m.Total, ret
	}
	m, ret := d.GetMemoryInfo()
	return m.Used, m.Total, ret
}

// memoryInfoV2 calls the v2 query, which an old driver or a mock may lack.
func memoryInfoV2(d nvml.Device) (m nvml.Memory_v2, ret nvml.Return) {
	defer func() {
		if recover() != nil {
			ret = nvml.ERROR_NOT_SUPPORTED
		}
	}()
	return d.GetMemoryInfo_v2()
}

// driverSamples are the samples of kind the driver took on device i
// since the last round (nvmlDeviceGetSamples: several a second), not the
// value at the instant of the read: under a power cap the clock moves
// within the second, and a run's roofline is taken at the clock it ran
// at, over the span its kernels ran. nil where the driver keeps none.
func (n *NVML) driverSamples(i int, d nvml.Device, kind nvml.SamplingType, seen map[int]uint64) (out []FineSample) {
	defer func() {
		if recover() != nil { // a mock, or a library without the call
			out = nil
		}
	}()
	vt, samples, ret := d.GetSamples(kind, seen[i])
	if ret != nvml.SUCCESS || len(samples) == 0 {
		return nil
	}
	var newest uint64
	for _, sm := range samples {
		v, ok := sampleValue(vt, sm.SampleValue)
		if !ok || sm.TimeStamp == 0 || sm.TimeStamp <= seen[i] && seen[i] != 0 {
			continue
		}
		out = append(out, FineSample{T: int64(sm.TimeStamp), Clock: kind == nvml.PROCESSOR_CLK_SAMPLES, V: float32(v)})
		seen[i] = max(seen[i], sm.TimeStamp)
		newest = max(newest, sm.TimeStamp)
	}
	base := n.wallBase(i, newest, time.Now().UnixMicro())
	for k := range out {
		out[k].T += base
	}
	slices.SortFunc(out, func(a, b FineSample) int { return cmp.Compare(a.T, b.T) })
	return out
}

// wallBase is what to add to device i's sample timestamps to read them
// on the wall clock: 0 where they are already the epoch's (within a
// minute of now), else the least lag seen between now and the newest.
func (n *NVML) wallBase(i int, newest uint64, now int64) int64 {
	if newest == 0 {
		return n.tsBase[i]
	}
	if d := now - int64(newest); d > -60e6 && d < 60e6 {
		return 0
	}
	if n.tsBase == nil {
		n.tsBase = map[int]int64{}
	}
	lag := now - int64(newest)
	if b, ok := n.tsBase[i]; !ok || lag < b {
		n.tsBase[i] = lag
	}
	return n.tsBase[i]
}

// EnergyNow reads every device's total energy counter now (EnergyMeter).
// NVML's calls are thread-safe, and this touches nothing Sample keeps.
func (n *NVML) EnergyNow() map[DeviceID]float64 {
	out := map[DeviceID]float64{}
	for i, d := range n.devs {
		if d == nil {
			continue
		}
		if mj, ok := energyOf(d); ok {
			out[n.inv.Devices[i].ID()] = mj
		}
	}
	return out
}

// energyOf reads a device's energy counter, mJ.
func energyOf(d nvml.Device) (mj float64, ok bool) {
	defer func() {
		if recover() != nil {
			mj, ok = 0, false
		}
	}()
	e, ret := d.GetTotalEnergyConsumption()
	return float64(e), ret == nvml.SUCCESS
}

// sampleValue reads one of NVML's sample values as its type says.
func sampleValue(vt nvml.ValueType, b [8]byte) (float64, bool) {
	switch vt {
	case nvml.VALUE_TYPE_UNSIGNED_INT:
		return float64(binary.LittleEndian.Uint32(b[:4])), true
	case nvml.VALUE_TYPE_UNSIGNED_LONG, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		return float64(binary.LittleEndian.Uint64(b[:])), true
	case nvml.VALUE_TYPE_DOUBLE:
		return math.Float64frombits(binary.LittleEndian.Uint64(b[:])), true
	}
	return 0, false
}

func metricOf[T uint32 | uint64](v T, ret nvml.Return, scale float64) Metric {
	if ret != nvml.SUCCESS {
		return na(explain(ret))
	}
	return ok(float64(v) * scale)
}

func (n *NVML) sampleOne(now time.Time, i int, d nvml.Device) (s Sample) {
	s = Sample{Time: now, Device: n.inv.Devices[i], MIG: "n/a"}
	if d == nil {
		s.Lost, s.LostWhy = true, n.lost[i]
		return s
	}
	defer func() {
		if p := recover(); p != nil {
			s = Sample{Time: now, Device: n.inv.Devices[i], Lost: true, LostWhy: fmt.Sprintf("reading it failed: %v", p)}
		}
	}()
	// v2 counts driver-reserved memory apart from used, as nvidia-smi
	// does; v1's used includes it (about 600 MiB on an H200).
	used, total, ret := memoryInfo(d)
	if ret == nvml.ERROR_GPU_IS_LOST || ret == nvml.ERROR_UNKNOWN {
		s.Lost, s.LostWhy = true, explain(ret)
		return s
	}
	if ret == nvml.SUCCESS {
		s.MemUsed = ok(float64(used))
		s.Device.MemTotal = total
	} else {
		s.MemUsed = na(explain(ret))
	}
	still := n.stillOf(now, i, d)
	migCur, migRet := still.migCur, still.migRet
	mig := migRet == nvml.SUCCESS && migCur == nvml.DEVICE_MIG_ENABLE
	switch {
	case mig:
		s.MIG = "on"
	case migRet == nvml.SUCCESS:
		s.MIG = "off"
	}
	if u, ret := d.GetUtilizationRates(); ret == nvml.SUCCESS {
		s.Util, s.MemUtil = ok(float64(u.Gpu)), ok(float64(u.Memory))
	} else {
		why := explain(ret)
		if mig {
			why = "MIG mode: per-slice utilization is not reported"
		}
		s.Util, s.MemUtil = na(why), na(why)
	}
	t, ret := d.GetTemperature(nvml.TEMPERATURE_GPU)
	s.Temp = metricOf(t, ret, 1)
	p, ret := d.GetPowerUsage()
	s.Power = metricOf(p, ret, 1e-3)
	s.PowerLimit = still.powerLimit
	if mj, ok := energyOf(d); ok {
		s.Energy = Metric{V: mj, OK: true}
	} else {
		s.Energy = na("no energy counter (before Volta, or not supported)")
	}
	clocks := n.driverSamples(i, d, nvml.PROCESSOR_CLK_SAMPLES, n.clkSeen)
	utils := n.driverSamples(i, d, nvml.GPU_UTILIZATION_SAMPLES, n.utilSeen)
	if len(clocks) == 0 && len(utils) > 0 {
		// The driver keeps utilization samples but no clock samples: the
		// clock is read here, ten times a second, while the device works.
		if n.poll == nil {
			n.poll = n.startPoll()
		}
		busy := false
		for _, u := range utils {
			busy = busy || u.V > 0
		}
		clocks = n.poll.take(i, busy || s.Util.OK && s.Util.V > 0)
	}
	s.Fine = mergeFine(clocks, utils)
	if len(clocks) > 0 {
		var sum float64
		for _, c := range clocks {
			sum += float64(c.V)
		}
		s.SMClock = Metric{V: sum / float64(len(clocks)), OK: true}
	} else {
		c, ret := d.GetClockInfo(nvml.CLOCK_SM)
		s.SMClock = metricOf(c, ret, 1)
	}
	c, ret := d.GetClockInfo(nvml.CLOCK_MEM)
	s.MemClock = metricOf(c, ret, 1)
	if last, ok := n.pcie[i]; ok && now.Sub(last.at) < pcieEvery {
		s.PCIeRx, s.PCIeTx = last.rx, last.tx
	} else {
		c, ret = d.GetPcieThroughput(nvml.PCIE_UTIL_RX_BYTES)
		s.PCIeRx = metricOf(c, ret, 1024)
		c, ret = d.GetPcieThroughput(nvml.PCIE_UTIL_TX_BYTES)
		s.PCIeTx = metricOf(c, ret, 1024)
		if n.pcie == nil {
			n.pcie = map[int]pcieReading{}
		}
		n.pcie[i] = pcieReading{at: now, rx: s.PCIeRx, tx: s.PCIeTx}
	}
	s.ECCErrors = still.ecc
	if bits, ret := d.GetCurrentClocksEventReasons(); ret == nvml.SUCCESS {
		s.Throttle = DecodeThrottle(bits)
	}
	procs, ret := d.GetComputeRunningProcesses()
	if ret != nvml.SUCCESS {
		s.ProcsWhy = explain(ret)
	}
	for _, pi := range procs {
		pr := Process{PID: int(pi.Pid), MemUsed: pi.UsedGpuMemory}
		if pi.UsedGpuMemory == ^uint64(0) { // NVML_VALUE_NOT_AVAILABLE
			pr.MemUsed = 0
		}
		if pi := procInfo(pr.PID); pi.ok {
			pr.Name = pi.name
		} else {
			s.ProcsWhy = "some pids are not visible here (container without the host pid namespace)"
		}
		s.Procs = append(s.Procs, pr)
	}
	return s
}

// stillOf is device i's settings, read again when stillEvery has passed
// (its ECC count when pcieEvery has).
func (n *NVML) stillOf(now time.Time, i int, d nvml.Device) stillReading {
	if n.still == nil {
		n.still = map[int]stillReading{}
	}
	r, seen := n.still[i]
	if !seen || now.Sub(r.at) >= stillEvery || now.Before(r.at) {
		r.at = now
		r.migCur, _, r.migRet = d.GetMigMode()
		pl, ret := d.GetEnforcedPowerLimit()
		r.powerLimit = metricOf(pl, ret, 1e-3)
	}
	if !seen || now.Sub(r.eccAt) >= pcieEvery || now.Before(r.eccAt) {
		r.eccAt = now
		e, ret := d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)
		r.ecc = metricOf(e, ret, 1)
	}
	n.still[i] = r
	return r
}

// mergeFine is two runs of driver samples as one, oldest first.
func mergeFine(a, b []FineSample) []FineSample {
	if len(b) == 0 {
		return a
	}
	out := append(append(make([]FineSample, 0, len(a)+len(b)), a...), b...)
	slices.SortStableFunc(out, func(x, y FineSample) int { return cmp.Compare(x.T, y.T) })
	return out
}
