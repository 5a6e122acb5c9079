package tui

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/greenlight-run/greenlight/gpu"
)

// withRemoteHosts adds two dcgm-exporter hosts: gpu-node-08 answering with
// 8 GPUs, gpu-node-09 not answering since a minute before the screen's now.
func withRemoteHosts(f *fakeGPUs) {
	m := func(v float64) gpu.Metric { return gpu.Metric{V: v, OK: true} }
	for i := 0; i < 8; i++ {
		f.remote = append(f.remote, gpu.Sample{Device: gpu.Device{Host: "gpu-node-08", Index: i, Name: "NVIDIA H200", MemTotal: 143771 << 20},
			Util: m(90), MemUsed: m(100 << 30), Temp: m(float64(60 + i)), Power: m(625), PowerLimit: gpu.Metric{Why: "not exported"}, XID: m(0)})
	}
	f.remote[3].XID = m(79)
	f.hosts = []gpu.HostState{
		{URL: "http://gpu-node-08:9400/metrics", Name: "gpu-node-08", Driver: "550.90.07", GPUs: 8, Up: true, LastSeen: t0.Add(20 * time.Minute)},
		{URL: "http://gpu-node-09:9400/metrics", Name: "gpu-node-09", Err: "dial: connect: connection refused", LastSeen: t0.Add(19 * time.Minute)},
	}
}

func TestRemoteHostsGroupedAt200x60(t *testing.T) {
	s := newScreenTest(t, 200, 60, 8, withRemoteHosts)
	got := s.screen(t, "gpu-node-09 not answering")
	for _, want := range []string{
		"this machine 8 GPUs",
		"gpu-node-08 8 GPUs · driver 550.90.07",
		"gpu-node-09 not answering: dial: connect: connection refused · last seen 1m00s ago · http://gpu-node-09:9400/metrics",
		"7  H200  ", // a remote GPU's own row
		"625W",      // no limit exported: no "/n/a"
		"XID 79",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("200x60 screen lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\n0  H200"); n != 2 {
		t.Errorf("GPU 0 rows: %d; want this machine's and gpu-node-08's", n)
	}
}

func TestRemoteHostsAsTotalsAt80x24(t *testing.T) {
	s := newScreenTest(t, 80, 24, 8, withRemoteHosts)
	got := s.screen(t, "gpu-node-09")
	for _, want := range []string{"this machine 8 GPUs", "gpu-node-08 8 GPUs · XID 79 on GPU 3 · util 90% · mem 800/1123 GiB · 5.00 kW"} {
		if !strings.Contains(got, want) {
			t.Errorf("80x24 screen lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\n7  H200") {
		t.Errorf("80x24 screen lists GPUs one by one though they do not fit:\n%s", got)
	}
}

func TestHostWaitingForFirstAnswer(t *testing.T) {
	m := newModel(Options{Runner: &fakeRunner{}, Sampler: newFakeGPUs(0), Now: func() time.Time { return t0 }, Output: io.Discard})
	m.hosts = []gpu.HostState{{URL: "http://n:9400/metrics", Name: "n", Err: "not scraped yet", Scraping: 3 * time.Second}}
	got := strings.Join(m.gpusView(120, 5), "\n")
	if !strings.Contains(got, "waiting for its exporter's first answer (3s)") {
		t.Errorf("gpus pane: %q", got)
	}
}

func TestOneGPUHostSaysGPU(t *testing.T) {
	m := newModel(Options{Runner: &fakeRunner{}, Sampler: newFakeGPUs(0), Now: func() time.Time { return t0 }, Output: io.Discard})
	line := ansi.Strip(m.hostLine(hostGroup{name: "this machine", samples: make([]gpu.Sample, 1)}, 120, false))
	if !strings.Contains(line, "this machine 1 GPU") || strings.Contains(line, "1 GPUs") {
		t.Errorf("host line %q", line)
	}
}
