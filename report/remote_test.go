package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/gpu"
)

// liveGPUs is a fleet whose remote host answered after the writer was made,
// as a Sampler with dcgm-exporter sources is.
type liveGPUs struct{}

var remoteGPU = gpu.Device{Host: "gpu-node-08", Index: 3, Name: "NVIDIA H200", UUID: "GPU-0803", MemTotal: 143771 << 20}

func (liveGPUs) Summarize(from, to time.Time, devices []int) []gpu.Summary {
	out := fakeGPUs{}.Summarize(from, to, devices)
	return append(out, gpu.Summary{Device: remoteGPU, Samples: 60, MeanUtil: 88, PeakUtil: 100, PeakMem: 131.2,
		MeanPower: 640, PeakPower: 701, EnergyWh: 85.3, PeakTemp: 66, XIDs: []int{79}})
}

func (liveGPUs) Inventory() gpu.Inventory {
	inv := testEnv().Inventory
	inv.Source = "nvml+dcgm"
	inv.Devices = append(inv.Devices, remoteGPU)
	return inv
}

func (liveGPUs) Hosts() []gpu.HostState {
	return []gpu.HostState{
		{URL: "http://gpu-node-08:9400/metrics", Name: "gpu-node-08", Driver: "550.90.07", GPUs: 1, Up: true, LastSeen: t0},
		{URL: "http://gpu-node-09:9400/metrics", Name: "gpu-node-09", Err: "dial: connect: no route to host", LastSeen: t0.Add(-time.Minute)},
	}
}

func TestRemoteGPUsInReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "remote.md")
	w := NewWriter(path, testPlan(t), testEnv(), liveGPUs{}, "")
	if err := w.Write(fullState(w.plan)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	md := string(b)
	for _, want := range []string{
		"**GPUs:** 3 · driver 580.159.04 · CUDA 13.0 · source nvml+dcgm",
		"| gpu-node-08:3 | NVIDIA H200 | 140 GiB | GPU-0803 |",
		"- gpu-node-08 (`http://gpu-node-08:9400/metrics`): 1 GPU, driver 550.90.07, answering",
		"- gpu-node-09 (`http://gpu-node-09:9400/metrics`): not answering: dial: connect: no route to host, last seen 08:59:00",
		"| gpu-node-08:3 | 88 % | 100 % | 131.2 GiB | 640 W | 701 W | 85 Wh | 66 °C |  |",
		"GPU gpu-node-08:3 reported XID error(s) 79 during the phase (see `dmesg` on gpu-node-08)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	tableRowsValid(t, md)
}
