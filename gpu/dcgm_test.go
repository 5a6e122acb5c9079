package gpu

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// fixture is dcgm-exporter's output for an 8-GPU H200 node, in the
// exporter's own format (HELP/TYPE lines, its labels, the default counters
// plus profiling ones), with DCGM's "no value" sentinels on some fields:
// GPU 4-7 memory temperature (int32 not supported), GPU 5 power (fp64
// blank), GPU 6 PCIe TX (int64 blank). PCIe RX is not exported at all.
func fixture(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/dcgm-exporter-h200x8.prom")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseDCGMFixture(t *testing.T) {
	got, err := ParseDCGM(bytes.NewReader(fixture(t)), "10.0.0.7")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 8 {
		t.Fatalf("%d GPUs; want 8", len(got))
	}
	for i, s := range got {
		d := s.Device
		if d.Index != i || d.Host != "gpu-node-07" || d.Name != "NVIDIA H200" || !strings.HasPrefix(d.UUID, "GPU-") {
			t.Errorf("GPU %d device = %+v", i, d)
		}
		if d.MemTotal != 143771<<20 {
			t.Errorf("GPU %d memory total %d MiB; want 143771 (used+free+reserved)", i, d.MemTotal>>20)
		}
		if s.driver != "550.90.07" {
			t.Errorf("driver %q", s.driver)
		}
		if !s.SMClock.OK || s.SMClock.V != 1980 || !s.MemClock.OK || s.MemClock.V != 3201 {
			t.Errorf("GPU %d clocks %+v %+v", i, s.SMClock, s.MemClock)
		}
		if s.PCIeRx.OK || s.PCIeRx.Why != "not exported" {
			t.Errorf("GPU %d PCIe RX = %+v; want n/a, not exported", i, s.PCIeRx)
		}
		if s.PowerLimit.OK {
			t.Errorf("GPU %d power limit %+v; the fixture does not export it", i, s.PowerLimit)
		}
	}
	want := []struct {
		name string
		m    Metric
		v    float64
	}{
		{"GPU 0 util", got[0].Util, 97},
		{"GPU 7 util", got[7].Util, 12},
		{"GPU 3 temp", got[3].Temp, 58},
		{"GPU 1 power", got[1].Power, 611.125},
		{"GPU 0 mem used", got[0].MemUsed, 100876 << 20},
		{"GPU 4 mem used", got[4].MemUsed, 1139 << 20},
		{"GPU 2 mem util", got[2].MemUtil, 42},
		{"GPU 0 PCIe TX", got[0].PCIeTx, 1024 * 1024},
		{"GPU 3 XID", got[3].XID, 79},
		{"GPU 0 XID", got[0].XID, 0},
	}
	for _, w := range want {
		if !w.m.OK || w.m.V != w.v {
			t.Errorf("%s = %+v; want %v", w.name, w.m, w.v)
		}
	}
	for _, c := range []struct {
		name string
		m    Metric
		why  string
	}{
		{"GPU 5 power (fp64 blank)", got[5].Power, "blank (DCGM)"},
		{"GPU 6 PCIe TX (int64 blank)", got[6].PCIeTx, "blank (DCGM)"},
		{"GPU 0 ECC (not exported)", got[0].ECCErrors, "not exported"},
	} {
		if c.m.OK || c.m.Why != c.why {
			t.Errorf("%s = %+v; want n/a, %s", c.name, c.m, c.why)
		}
	}
	if !slices.Equal(got[2].Throttle, []string{"SW power cap"}) || got[0].Throttle != nil {
		t.Errorf("throttle: GPU 2 %v, GPU 0 %v", got[2].Throttle, got[0].Throttle)
	}
}

func TestDCGMSentinels(t *testing.T) {
	for _, c := range []struct {
		v   float64
		ok  bool
		why string
	}{
		{0, true, ""},
		{2147483647 - 16, true, ""},
		{0x7ffffff0, false, "blank (DCGM)"},
		{0x7ffffff2, false, "not supported (DCGM)"},
		{0x7ffffff3, false, "not permitted (DCGM)"},
		{140737488355328, false, "blank (DCGM)"},
		{140737488355329, false, "not found (DCGM)"},
		{140737488355330, false, "not supported (DCGM)"},
		{9223372036854775792, false, "blank (DCGM)"},
		{9223372036854775794, false, "blank (DCGM)"},
	} {
		m := dcgmValue(c.v, 1)
		if m.OK != c.ok || m.Why != c.why {
			t.Errorf("dcgmValue(%.0f) = %+v; want ok=%v %q", c.v, m, c.ok, c.why)
		}
	}
}

// deadURL is an address nothing listens on.
func deadURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/metrics"
}

func TestDCGMHostsGoodSlowDeadMalformed(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	body := fixture(t)
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer good.Close()
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // answers only when the test lets it, or the client gives up
		case <-release:
			w.Write(bytes.ReplaceAll(body, []byte("gpu-node-07"), []byte("gpu-node-08")))
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	malformed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\" 97\n")
	}))
	defer malformed.Close()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "DCGM is not running", http.StatusInternalServerError)
	}))
	defer broken.Close()
	dead := deadURL(t)

	d, err := OpenDCGM([]string{good.URL, slow.URL, dead, malformed.URL, broken.URL}, DCGMOptions{Wait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The slow host holds its request until released: if Sample waited
	// for it, this would not return. A loaded machine may answer the
	// good host's first rounds after a round's wait: a few rounds, then.
	var samples []Sample
	for range 50 {
		if samples = d.Sample(time.Now()); len(samples) == 8 {
			break
		}
	}
	if len(samples) != 8 {
		t.Fatalf("%d samples; want the good host's 8", len(samples))
	}
	for _, s := range samples {
		if s.Lost || s.Device.Host != "gpu-node-07" {
			t.Errorf("sample %+v", s)
		}
	}
	hosts := d.Hosts()
	if len(hosts) != 5 {
		t.Fatalf("hosts %+v", hosts)
	}
	if h := hosts[0]; !h.Up || h.Name != "gpu-node-07" || h.GPUs != 8 || h.Driver != "550.90.07" || h.LastSeen.IsZero() {
		t.Errorf("good host %+v", h)
	}
	if h := hosts[1]; h.Up || h.Scraping <= 0 || h.Err != "not scraped yet" {
		t.Errorf("slow host %+v; want a request open, not up", h)
	}
	if h := hosts[2]; h.Up || !strings.Contains(h.Err, "connection refused") {
		t.Errorf("dead host %+v; want connection refused", h)
	}
	if h := hosts[3]; h.Up || !strings.Contains(h.Err, "malformed metrics") || !strings.Contains(h.Err, "line 2") {
		t.Errorf("malformed host %+v; want malformed metrics at line 2", h)
	}
	if h := hosts[4]; h.Up || !strings.Contains(h.Err, "HTTP 500") {
		t.Errorf("broken host %+v; want HTTP 500", h)
	}
	if inv := d.Inventory(); len(inv.Devices) != 8 || inv.Driver != "550.90.07" {
		t.Errorf("inventory %+v", inv)
	}

	// The slow host answers; the next rounds show its 8 GPUs after the
	// first host's, and no second request was opened meanwhile.
	d.Sample(time.Now())
	close(release)
	var n int
	for range 50 {
		n = len(d.Sample(time.Now()))
		if n == 16 {
			break
		}
	}
	if n != 16 {
		t.Fatalf("%d samples after the slow host answered; want 16", n)
	}
	if hosts := d.Hosts(); !hosts[1].Up || hosts[1].Name != "gpu-node-08" {
		t.Errorf("slow host after answering %+v", hosts[1])
	}

	// The first host goes away: its GPUs stay, lost, saying why and when.
	good.Close()
	for range 50 {
		if samples = d.Sample(time.Now()); len(samples) > 0 && samples[0].Lost {
			break
		}
	}
	if len(samples) != 16 || !samples[0].Lost || !strings.Contains(samples[0].LostWhy, "gpu-node-07: ") ||
		!strings.Contains(samples[0].LostWhy, "last seen") || samples[0].Util.OK {
		t.Errorf("gone host's GPU 0 = %+v; want lost with the error and last seen, no old reading", samples[0])
	}
	if samples[8].Lost {
		t.Errorf("the other host's GPU is lost too: %+v", samples[8])
	}
	d.Close()
}

func TestDCGMCloseEndsOpenRequests(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hang.Close()
	d, err := OpenDCGM([]string{hang.URL}, DCGMOptions{Wait: 10 * time.Millisecond, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	d.Sample(time.Now())
	d.Close() // returns only once the scrape's goroutine is gone
	hang.CloseClientConnections()
}

func TestSamplerLocalAndRemote(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	body := fixture(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer srv.Close()
	remote, err := OpenDCGM([]string{srv.URL}, DCGMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := NewSampler(Multi{open(t, h200s(t)), remote}, time.Second, 0)
	now := time.Unix(1000, 0)
	s.now = func() time.Time { now = now.Add(time.Second); return now }
	for range 3 {
		s.Round()
	}
	inv := s.Inventory()
	if inv.Source != "nvml+dcgm" || len(inv.Devices) != 16 || inv.Devices[8].Host != "gpu-node-07" {
		t.Fatalf("inventory %s with %d devices", inv.Source, len(inv.Devices))
	}
	if hosts := s.Hosts(); len(hosts) != 1 || !hosts[0].Up {
		t.Errorf("hosts %+v", hosts)
	}
	local, far := s.History(DeviceID{Index: 0}, 10), s.History(DeviceID{Host: "gpu-node-07", Index: 7}, 10)
	if len(local) != 3 || local[0].Util != 97 || len(far) != 3 || far[0].Util != 12 {
		t.Errorf("history: local GPU 0 %+v, remote GPU 7 %+v", local, far)
	}
	sum := s.Summarize(time.Unix(0, 0), now, []int{0})
	if len(sum) != 9 || sum[0].Device.Host != "" || sum[1].Device.Host != "gpu-node-07" {
		t.Fatalf("summary of local GPU 0: %d devices; want it and the remote host's 8", len(sum))
	}
	if x := sum[4].XIDs; !slices.Equal(x, []int{79}) {
		t.Errorf("remote GPU 3 XIDs %v; want [79]", x)
	}
	if sum[6].MeanPower != -1 || sum[6].Samples != 3 {
		t.Errorf("remote GPU 5 (power blank) summary %+v; want power never read", sum[6])
	}
	s.src.Close()
}

// BenchmarkScrape16Hosts scrapes 16 exporters of 8 H200s each, as one
// sampler round does: wall time per round, and the CPU this process spent
// (client and the in-process servers, which only write a fixed body).
func BenchmarkScrape16Hosts(b *testing.B) {
	body := fixture(b)
	var urls []string
	var served atomic.Int64
	for h := range 16 {
		page := bytes.ReplaceAll(body, []byte("gpu-node-07"), fmt.Appendf(nil, "gpu-node-%02d", h))
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			served.Add(1)
			w.Write(page)
		}))
		defer srv.Close()
		urls = append(urls, srv.URL)
	}
	d, err := OpenDCGM(urls, DCGMOptions{Wait: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	if n := len(d.Sample(time.Now())); n != 128 {
		b.Fatalf("%d GPUs; want 128", n)
	}
	cpu0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		if n := len(d.Sample(time.Now())); n != 128 {
			b.Fatalf("%d GPUs", n)
		}
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/round")
	b.ReportMetric(float64(cpu.Microseconds())/1e4/float64(b.N), "%core@1Hz")
	b.ReportMetric(float64(len(body))/1024, "KiB/host")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkParseDCGM is one exporter's page (8 H200s): the parsing part of
// a scrape, without the HTTP.
func BenchmarkParseDCGM(b *testing.B) {
	body := fixture(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for range b.N {
		if _, err := ParseDCGM(bytes.NewReader(onlyWanted(body)), "h"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDCGMFollowsSlurmNodes: dcgm:slurm-nodes:PORT scrapes the exporter
// of each node a Slurm job runs on, for as long as it runs; the GPUs stay
// in the fleet (for the phase's summary) once the job ends, read as not
// current.
func TestDCGMFollowsSlurmNodes(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	body := fixture(t)
	exp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer exp.Close()
	port := exp.Listener.Addr().(*net.TCPAddr).Port
	d, err := OpenDCGM([]string{fmt.Sprintf("http://%s:%d/metrics", SlurmNodes, port)}, DCGMOptions{Wait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if !FollowsSlurm(Multi{None{}, d}) {
		t.Fatal("FollowsSlurm is false for a slurm-nodes exporter")
	}
	if s := d.Sample(time.Now()); len(s) != 0 || len(d.Hosts()) != 0 {
		t.Fatalf("before any job: %d samples, %d hosts; want none (slurm-nodes itself is never scraped)", len(s), len(d.Hosts()))
	}
	if why := d.Inventory().Why; !strings.Contains(why, "Slurm job") {
		t.Errorf("inventory says %q before any job", why)
	}
	FollowNodes(Multi{None{}, d}, []string{"127.0.0.1"})
	samples := d.Sample(time.Now())
	if len(samples) != 8 || samples[0].Lost {
		t.Fatalf("with the job's node: %d samples (lost %v); want its 8 GPUs", len(samples), len(samples) > 0 && samples[0].Lost)
	}
	FollowNodes(d, nil)
	samples = d.Sample(time.Now())
	if len(samples) != 8 || !samples[0].Lost || !strings.Contains(samples[0].LostWhy, "Slurm job ended") {
		t.Fatalf("after the job: %d samples, %+v; want its 8 GPUs, not current", len(samples), samples[0])
	}
	if n := len(d.Inventory().Devices); n != 8 {
		t.Errorf("the ended job's GPUs left the inventory (%d devices): the phase's summary needs them", n)
	}
	FollowNodes(d, []string{"127.0.0.1"})
	if s := d.Sample(time.Now()); len(s) != 8 || s[0].Lost {
		t.Error("a node given again is not scraped again")
	}
}
