package gpu

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// h200s is go-nvml's 8-GPU H200 server mock with every reading greenlight
// asks for set to busy-GPU values; tests change what they need.
func h200s(t testing.TB) *server.Server {
	t.Helper()
	foreign := foreignProcess(t)
	s := dgxh200.New()
	for i, d := range s.Devices {
		dev := d.(*server.Device)
		dev.MemoryInfo = nvml.Memory{Total: 143771 << 20, Used: 100 << 30, Free: 43 << 30}
		dev.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) {
			return nvml.Memory_v2{Total: 143771 << 20, Used: 99 << 30, Reserved: 615 << 20}, nvml.SUCCESS
		}
		dev.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{Gpu: 97, Memory: 41}, nvml.SUCCESS }
		dev.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 61, nvml.SUCCESS }
		dev.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 612345, nvml.SUCCESS }
		dev.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 700000, nvml.SUCCESS }
		dev.GetClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
			if c == nvml.CLOCK_SM {
				return 1980, nvml.SUCCESS
			}
			return 3201, nvml.SUCCESS
		}
		dev.GetPcieThroughputFunc = func(nvml.PcieUtilCounter) (uint32, nvml.Return) { return 1000, nvml.SUCCESS }
		dev.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) { return 0, nvml.SUCCESS }
		dev.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return 0, nvml.SUCCESS }
		idx := i
		dev.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
			if idx == 0 {
				return []nvml.ProcessInfo{{Pid: uint32(os.Getpid()), UsedGpuMemory: 80 << 30}, {Pid: uint32(foreign), UsedGpuMemory: 2 << 30}}, nvml.SUCCESS
			}
			return nil, nvml.SUCCESS
		}
	}
	return s
}

// foreignProcess starts a process in a session of its own, so that it is
// never the campaign's whatever session the test runs in (in a container the
// test can share pid 1's session), and returns its pid.
func foreignProcess(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

func open(t testing.TB, s *server.Server) *NVML {
	t.Helper()
	n, err := OpenNVML(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestNVMLReadsEveryDevice(t *testing.T) {
	n := open(t, h200s(t))
	inv := n.Inventory()
	if len(inv.Devices) != 8 || inv.Driver != "550.54.15" || inv.CUDA != "12.4" {
		t.Fatalf("inventory %d devices, driver %q, CUDA %q", len(inv.Devices), inv.Driver, inv.CUDA)
	}
	s := n.Sample(time.Now())[3]
	if s.Lost || !s.Util.OK || s.Util.V != 97 || s.Power.V != 612.345 || s.PowerLimit.V != 700 || s.SMClock.V != 1980 || s.Temp.V != 61 {
		t.Errorf("sample = %+v", s)
	}
	if s.MemUsed.V != 99<<30 {
		t.Errorf("memory used %v; want the v2 figure without reserved memory, %v", s.MemUsed.V, 99<<30)
	}
	if !strings.Contains(s.Device.Name, "H200") || s.MIG != "off" {
		t.Errorf("name %q, MIG %q", s.Device.Name, s.MIG)
	}
}

func TestUnsupportedMetricsAreNAWithReason(t *testing.T) {
	srv := h200s(t)
	d := srv.Devices[2].(*server.Device)
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
		return 0, nvml.ERROR_NOT_SUPPORTED
	}
	d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.ERROR_NO_PERMISSION }
	m := srv.Devices[5].(*server.Device)
	m.MigMode = nvml.DEVICE_MIG_ENABLE
	m.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED }
	samples := open(t, srv).Sample(time.Now())
	s := samples[2]
	if s.Power.OK || s.Power.V != 0 || s.Power.Why != "not supported" || s.ECCErrors.OK {
		t.Errorf("power %+v, ECC %+v; want n/a: not supported", s.Power, s.ECCErrors)
	}
	if !strings.Contains(s.ProcsWhy, "permission") {
		t.Errorf("ProcsWhy = %q", s.ProcsWhy)
	}
	if mig := samples[5]; mig.Util.OK || !strings.Contains(mig.Util.Why, "MIG") || mig.MIG != "on" {
		t.Errorf("MIG device util %+v, MIG %q", mig.Util, mig.MIG)
	}
	if !samples[3].Power.OK {
		t.Error("the other devices lost their power reading")
	}
}

func TestLostDeviceOthersGoOn(t *testing.T) {
	srv := h200s(t)
	d := srv.Devices[4].(*server.Device)
	d.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) { return nvml.Memory_v2{}, nvml.ERROR_GPU_IS_LOST }
	d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_GPU_IS_LOST }
	// A device whose reading panics (a mock with a method unset) is lost too.
	srv.Devices[6].(*server.Device).GetUtilizationRatesFunc = nil
	samples := open(t, srv).Sample(time.Now())
	if !samples[4].Lost || !strings.Contains(samples[4].LostWhy, "lost") {
		t.Errorf("device 4: lost %v (%s)", samples[4].Lost, samples[4].LostWhy)
	}
	if !samples[6].Lost {
		t.Error("device 6 whose reading panicked is not marked lost")
	}
	for _, i := range []int{0, 1, 2, 3, 5, 7} {
		if samples[i].Lost || !samples[i].Util.OK {
			t.Errorf("device %d: %+v", i, samples[i])
		}
	}
}

func TestThrottleDecoding(t *testing.T) {
	tests := []struct {
		bits uint64
		want []string
	}{
		{0, nil},
		{nvml.ClocksEventReasonGpuIdle, nil},
		{nvml.ClocksEventReasonSwPowerCap | nvml.ClocksThrottleReasonHwThermalSlowdown, []string{"SW power cap", "HW thermal"}},
		{nvml.ClocksEventReasonSwThermalSlowdown | nvml.ClocksThrottleReasonHwPowerBrakeSlowdown | nvml.ClocksEventReasonSyncBoost, []string{"sync boost", "SW thermal", "power brake"}},
	}
	for _, tt := range tests {
		if got := DecodeThrottle(tt.bits); !slices.Equal(got, tt.want) {
			t.Errorf("DecodeThrottle(%#x) = %v; want %v", tt.bits, got, tt.want)
		}
	}
	srv := h200s(t)
	srv.Devices[1].(*server.Device).GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) {
		return nvml.ClocksEventReasonSwPowerCap, nvml.SUCCESS
	}
	if got := open(t, srv).Sample(time.Now())[1].Throttle; !slices.Equal(got, []string{"SW power cap"}) {
		t.Errorf("device 1 throttle %v", got)
	}
}

func TestProcessLabelling(t *testing.T) {
	sid, _, err := syscall.Syscall(syscall.SYS_GETSID, 0, 0, 0)
	if err != 0 {
		t.Fatal(err)
	}
	srv := h200s(t)
	listed, _ := srv.Devices[0].GetComputeRunningProcesses()
	foreign := int(listed[1].Pid)
	s := NewSampler(open(t, srv), time.Second, 0)
	s.SetSessions([]int{int(sid)})
	procs := s.Round()[0].Procs
	if len(procs) != 2 {
		t.Fatalf("procs = %+v", procs)
	}
	for _, p := range procs {
		switch p.PID {
		case os.Getpid():
			if !p.Campaign || p.Name == "" {
				t.Errorf("our own process %+v: want the campaign's, with a name", p)
			}
		case foreign:
			if p.Campaign {
				t.Errorf("foreign pid %d labelled the campaign's", foreign)
			}
		}
	}
	sum := s.Summarize(time.Now().Add(-time.Minute), time.Now().Add(time.Minute), []int{0})
	if len(sum) != 1 || len(sum[0].Foreign) != 1 || sum[0].Foreign[0].PID != foreign {
		t.Errorf("summary foreign processes = %+v; want pid %d", sum, foreign)
	}
}

func TestSamplerHistoryIsBounded(t *testing.T) {
	f := NewFake(2, 7)
	s := NewSampler(f, 100*time.Millisecond, time.Minute) // at least 10 minutes are kept
	now := time.Unix(0, 0)
	s.now = func() time.Time { now = now.Add(100 * time.Millisecond); return now }
	for i := 0; i < 7000; i++ {
		s.Round()
	}
	h := s.History(DeviceID{Index: 0}, 1<<20)
	if len(h) != 6000 {
		t.Fatalf("history holds %d points; want 6000 (10 minutes at 100 ms)", len(h))
	}
	if !h[0].T.Before(h[len(h)-1].T) {
		t.Error("history not oldest first")
	}
	sum := s.Summarize(h[0].T, h[len(h)-1].T, nil)
	if len(sum) != 2 || sum[0].Samples != 6000 || sum[0].PeakTemp <= 0 || !sum[0].First.Equal(h[0].T) {
		t.Errorf("summary %+v", sum)
	}
	// A window that began before the history: its first reading is the
	// history's, past its start.
	if sum := s.Summarize(h[0].T.Add(-time.Hour), h[10].T, nil); !sum[0].First.Equal(h[0].T) || sum[0].Samples != 11 {
		t.Errorf("a window from before the history: first %v, %d readings; want %v, 11", sum[0].First, sum[0].Samples, h[0].T)
	}
}

func TestFakeIsDeterministicAndFollowsActivity(t *testing.T) {
	a, b := NewFake(8, 3), NewFake(8, 3)
	now := time.Unix(0, 0)
	for i := 0; i < 5; i++ {
		if x, y := a.Sample(now), b.Sample(now); x[2].Power != y[2].Power || x[2].Temp != y[2].Temp {
			t.Fatalf("same seed, different readings: %+v vs %+v", x[2], y[2])
		}
	}
	a.SetActivity(Activity{Devices: map[int]Load{0: {Loading: -1, Busy: true}, 1: {Loading: 0.5}}})
	var s []Sample
	for i := 0; i < 10; i++ {
		s = a.Sample(now)
	}
	if s[0].Util.V < 80 || s[1].MemUsed.V < 50<<30 || s[2].Util.V != 0 {
		t.Errorf("busy %v%%, loading %.0f GiB, idle %v%%", s[0].Util.V, s[1].MemUsed.V/(1<<30), s[2].Util.V)
	}
}

func BenchmarkSampleRound(b *testing.B) {
	for _, tc := range []struct {
		name string
		src  func() Source
	}{
		{"fake8", func() Source { return NewFake(8, 1) }},
		{"nvmlmock8", func() Source { return open(b, h200s(b)) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := NewSampler(tc.src(), time.Second, 0)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				s.Round()
			}
		})
	}
}

// TestProcessOfAStepGroup: a process in a step's process group is the
// campaign's though its session is another's, as for a step that Slurm's
// slurmd started on this machine (in Slurm's session, not greenlight's).
func TestProcessOfAStepGroup(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & echo $!; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its own group, our session
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
	var worker int
	if _, err := fmt.Fscan(out, &worker); err != nil {
		t.Fatal(err)
	}
	srv := h200s(t)
	srv.Devices[0].(*server.Device).GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		return []nvml.ProcessInfo{{Pid: uint32(worker), UsedGpuMemory: 1 << 30}}, nvml.SUCCESS
	}
	s := NewSampler(open(t, srv), time.Second, 0)
	s.SetSessions([]int{cmd.Process.Pid}) // the step's group, as the runner hands it on
	if procs := s.Round()[0].Procs; len(procs) != 1 || !procs[0].Campaign {
		t.Errorf("a process of the step's group (pid %d, group %d): %+v; want the campaign's", worker, cmd.Process.Pid, procs)
	}
	s2 := NewSampler(open(t, srv), time.Second, 0)
	s2.SetSessions([]int{cmd.Process.Pid + 1000000})
	if procs := s2.Round()[0].Procs; len(procs) != 1 || procs[0].Campaign {
		t.Errorf("labelled the campaign's with no group or session of its: %+v", procs)
	}
}

// TestPCIeReadEveryFewSeconds: the driver's PCIe throughput call (it
// samples the link for 20 ms) is made once per pcieEvery, a sample between
// two carrying the last reading.
func TestPCIeReadEveryFewSeconds(t *testing.T) {
	srv := h200s(t)
	calls := 0
	dev := srv.Devices[0].(*server.Device)
	dev.GetPcieThroughputFunc = func(nvml.PcieUtilCounter) (uint32, nvml.Return) { calls++; return uint32(1000 * calls), nvml.SUCCESS }
	n := open(t, srv)
	t0 := time.Now()
	for i := range 5 {
		s := n.Sample(t0.Add(time.Duration(i) * time.Second))[0]
		if !s.PCIeRx.OK || s.PCIeRx.V == 0 {
			t.Fatalf("second %d: no PCIe reading carried: %+v", i, s.PCIeRx)
		}
	}
	if calls != 2 {
		t.Errorf("%d PCIe calls over 5 s of samples; want 2 (rx and tx, once)", calls)
	}
	n.Sample(t0.Add(pcieEvery))
	if calls != 4 {
		t.Errorf("%d PCIe calls after %s; want 4", calls, pcieEvery)
	}
}

// TestSettingsReadEveryHalfMinute: MIG mode and the power limit, which
// change only when a person changes them, are read once per stillEvery;
// the ECC count once per pcieEvery; every sample carries the last.
func TestSettingsReadEveryHalfMinute(t *testing.T) {
	srv := h200s(t)
	mig, limit, ecc := 0, 0, 0
	dev := srv.Devices[0].(*server.Device)
	dev.GetMigModeFunc = func() (int, int, nvml.Return) { mig++; return nvml.DEVICE_MIG_DISABLE, 0, nvml.SUCCESS }
	dev.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { limit++; return 700000, nvml.SUCCESS }
	dev.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) { ecc++; return 0, nvml.SUCCESS }
	n := open(t, srv)
	t0 := time.Now()
	for i := range 30 {
		s := n.Sample(t0.Add(time.Duration(i) * time.Second))[0]
		if s.MIG != "off" || !s.PowerLimit.OK || s.PowerLimit.V != 700 || !s.ECCErrors.OK {
			t.Fatalf("second %d: settings not carried: MIG %q, limit %+v, ECC %+v", i, s.MIG, s.PowerLimit, s.ECCErrors)
		}
	}
	if mig != 1 || limit != 1 || ecc != 6 {
		t.Errorf("over 30 s of samples: %d MIG, %d power limit, %d ECC reads; want 1, 1 and 6", mig, limit, ecc)
	}
	n.Sample(t0.Add(stillEvery))
	if mig != 2 || limit != 2 {
		t.Errorf("after %s: %d MIG, %d power limit reads; want 2 each", stillEvery, mig, limit)
	}
}

// TestSMClockIsTheMeanOfTheDriversSamples: where the driver keeps SM clock
// samples, a round's clock is their mean since the last round (the clock
// moves within a second under a power cap), each sample counted once;
// where it keeps none, the clock at the read.
func TestSMClockIsTheMeanOfTheDriversSamples(t *testing.T) {
	srv := h200s(t)
	dev := srv.Devices[0].(*server.Device)
	clk := func(ts uint64, mhz uint32) nvml.Sample {
		var v [8]byte
		binary.LittleEndian.PutUint32(v[:], mhz)
		return nvml.Sample{TimeStamp: ts, SampleValue: v}
	}
	buffer := []nvml.Sample{clk(100, 1400), clk(200, 1500), clk(300, 1600)}
	var asked []uint64
	dev.GetSamplesFunc = func(st nvml.SamplingType, since uint64) (nvml.ValueType, []nvml.Sample, nvml.Return) {
		if st != nvml.PROCESSOR_CLK_SAMPLES {
			return 0, nil, nvml.ERROR_NOT_SUPPORTED
		}
		asked = append(asked, since)
		var out []nvml.Sample
		for _, s := range buffer {
			if s.TimeStamp > since {
				out = append(out, s)
			}
		}
		return nvml.VALUE_TYPE_UNSIGNED_INT, out, nvml.SUCCESS
	}
	n := open(t, srv)
	now := time.Now()
	if s := n.Sample(now)[0]; s.SMClock.V != 1500 {
		t.Errorf("the first round's clock %v MHz; want 1500, the samples' mean", s.SMClock.V)
	}
	buffer = append(buffer, clk(400, 1200))
	if s := n.Sample(now.Add(time.Second))[0]; s.SMClock.V != 1200 || asked[len(asked)-1] != 300 {
		t.Errorf("the next round's clock %v MHz (asked since %d); want 1200, only the new sample", s.SMClock.V, asked[len(asked)-1])
	}
	if s := n.Sample(now.Add(2 * time.Second))[1]; s.SMClock.V != 1980 {
		t.Errorf("a device without samples: %v MHz; want the clock at the read, 1980", s.SMClock.V)
	}
}

// TestTopologyAndP2PAreDescribed: each GPU's links to the others (NVML's
// common ancestor) and its P2P read and write status are in its
// conditions, in words; BAR1 too.
func TestTopologyAndP2PAreDescribed(t *testing.T) {
	srv := h200s(t)
	for i, d := range srv.Devices {
		dev := d.(*server.Device)
		me := i
		dev.GetTopologyCommonAncestorFunc = func(o nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
			if me < 4 == (o.(*server.Device).Minor < 4) {
				return nvml.TOPOLOGY_SINGLE, nvml.SUCCESS
			}
			return nvml.TOPOLOGY_SYSTEM, nvml.SUCCESS
		}
		dev.GetP2PStatusFunc = func(o nvml.Device, idx nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
			switch {
			case idx == nvml.P2P_CAPS_INDEX_NVLINK:
				return nvml.P2P_STATUS_NOT_SUPPORTED, nvml.SUCCESS
			case idx == nvml.P2P_CAPS_INDEX_WRITE && me < 4 != (o.(*server.Device).Minor < 4):
				return nvml.P2P_STATUS_CHIPSET_NOT_SUPPORED, nvml.SUCCESS
			}
			return nvml.P2P_STATUS_OK, nvml.SUCCESS
		}
		dev.GetBAR1MemoryInfoFunc = func() (nvml.BAR1Memory, nvml.Return) { return nvml.BAR1Memory{Bar1Total: 128 << 30}, nvml.SUCCESS }
	}
	cs := open(t, srv).Describe()
	if len(cs[0].Peers) != len(cs)-1 || cs[0].BAR1MiB != 128<<10 {
		t.Fatalf("GPU 0: %d peers, BAR1 %d MiB; want %d, 131072", len(cs[0].Peers), cs[0].BAR1MiB, len(cs)-1)
	}
	near, far := cs[0].Peers[0], cs[0].Peers[len(cs[0].Peers)-1]
	if near.Index != 1 || near.Link != "one PCIe switch" || near.Read != "ok" || near.Write != "ok" {
		t.Errorf("GPU 0 to 1: %+v", near)
	}
	if far.Link != "across CPU sockets" || far.Read != "ok" || far.Write != "the chipset does not support it" {
		t.Errorf("GPU 0 to %d: %+v", far.Index, far)
	}
}

// TestDriverSamplesOnTheWallClock: the driver's sample timestamps are the
// epoch's on some drivers and counted from boot on others; either way a
// round's fine samples land on the wall clock, the newest no later than
// the read and within a sampling period of it, so a step's busy span
// finds them (on an H100 every step read none: its samples were never in
// any step's span).
func TestDriverSamplesOnTheWallClock(t *testing.T) {
	for _, boot := range []bool{true, false} {
		srv := h200s(t)
		dev := srv.Devices[0].(*server.Device)
		now := time.Now()
		base := uint64(now.UnixMicro())
		if boot {
			base = 3_600_000_000 // an hour after boot
		}
		sample := func(ts uint64, v uint32) nvml.Sample {
			var b [8]byte
			binary.LittleEndian.PutUint32(b[:], v)
			return nvml.Sample{TimeStamp: ts, SampleValue: b}
		}
		dev.GetSamplesFunc = func(st nvml.SamplingType, since uint64) (nvml.ValueType, []nvml.Sample, nvml.Return) {
			v := uint32(1755)
			if st == nvml.GPU_UTILIZATION_SAMPLES {
				v = 100
			}
			var out []nvml.Sample
			for k := range 6 { // six a second, the newest 100 ms before the read
				out = append(out, sample(base-uint64(600_000-k*100_000), v))
			}
			return nvml.VALUE_TYPE_UNSIGNED_INT, out, nvml.SUCCESS
		}
		n := open(t, srv)
		s := n.Sample(now)[0]
		if len(s.Fine) != 12 {
			t.Fatalf("boot %v: %d fine samples; want 6 clock and 6 utilization", boot, len(s.Fine))
		}
		newest := time.UnixMicro(s.Fine[len(s.Fine)-1].T)
		if lag := time.Now().Sub(newest); lag < 0 || lag > time.Second {
			t.Errorf("boot %v: the newest sample lands %s before now; want within a second, never after", boot, lag)
		}
	}
}

// TestClockPolledWhereTheDriverKeepsNone: a driver that keeps
// utilization samples but no clock samples (an H100 on driver 580
// answers "not found") has the clock read ten times a second while the
// device works, so a step's busy span holds several a second.
func TestClockPolledWhereTheDriverKeepsNone(t *testing.T) {
	srv := h200s(t)
	dev := srv.Devices[0].(*server.Device)
	dev.GetSamplesFunc = func(st nvml.SamplingType, since uint64) (nvml.ValueType, []nvml.Sample, nvml.Return) {
		if st != nvml.GPU_UTILIZATION_SAMPLES {
			return 0, nil, nvml.ERROR_NOT_FOUND
		}
		var b [8]byte
		binary.LittleEndian.PutUint32(b[:], 100)
		return nvml.VALUE_TYPE_UNSIGNED_INT, []nvml.Sample{{TimeStamp: uint64(time.Now().UnixMicro()), SampleValue: b}}, nvml.SUCCESS
	}
	dev.GetClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 1755, nvml.SUCCESS }
	n := open(t, srv)
	defer n.Close()
	n.Sample(time.Now())
	time.Sleep(5 * clockPollEvery) // the poll's window: what the test is about
	s := n.Sample(time.Now())[0]
	clocks := 0
	for _, f := range s.Fine {
		if f.Clock && f.V == 1755 {
			clocks++
		}
	}
	if clocks < 2 || s.SMClock.V != 1755 {
		t.Errorf("%d clock readings polled, clock %v; want several at 1755", clocks, s.SMClock.V)
	}
}
