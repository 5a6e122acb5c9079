package conditions

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

type fleet struct{ gpus []gpu.Conditions }

func (f *fleet) Inventory() gpu.Inventory {
	return gpu.Inventory{Source: "fake", Driver: "580.95", CUDA: "13.0"}
}
func (f *fleet) Conditions() []gpu.Conditions { return append([]gpu.Conditions(nil), f.gpus...) }

func h200(i int) gpu.Conditions {
	return gpu.Conditions{Index: i, Name: "NVIDIA H200", VBIOS: "96.00", PowerLimitW: 700, AppClockSM: 1980, AppClockMem: 3201,
		ECC: "on", Persistence: "on", MIG: "off", PCIeGen: 5, PCIeWidth: 16}
}

// TestEachChangeSaid: each condition a phase's start reads again, changed,
// is said in words, once.
func TestEachChangeSaid(t *testing.T) {
	plan := &campaign.Plan{Name: "c", File: "/c.yaml", Dir: t.TempDir(), Hash: strings.Repeat("ab", 32)}
	f := &fleet{gpus: []gpu.Conditions{h200(0), h200(1)}}
	book := NewBook(Machine(plan, f))
	if got := book.Check(Machine(plan, f), "gemm"); len(got) != 0 {
		t.Fatalf("nothing changed, yet: %v", got)
	}
	for _, c := range []struct {
		change func()
		want   string
	}{
		{func() { f.gpus[1].PowerLimitW = 450 }, "GPU 1 power limit 700 W → 450 W"},
		{func() { f.gpus[0].AppClockSM = 1500 }, "GPU 0 application clocks 1980/3201 MHz → 1500/3201 MHz"},
		{func() { f.gpus[0].ECC = "off" }, "GPU 0 ECC on → off"},
		{func() { f.gpus[1].Persistence = "off" }, "GPU 1 persistence mode on → off"},
		{func() { f.gpus[1].MIG = "on" }, "GPU 1 MIG off → on"},
		{func() { f.gpus[0].PCIeWidth = 8 }, "GPU 0 PCIe link gen 5 x16 → gen 5 x8"},
		{func() { f.gpus[0].VBIOS = "97.00" }, "GPU 0 VBIOS 96.00 → 97.00"},
		{func() { plan.Hash = strings.Repeat("cd", 32) }, "campaign file abababababab → cdcdcdcdcdcd"},
		{func() { f.gpus = f.gpus[:1] }, "GPU count 2 → 1"},
	} {
		c.change()
		got := book.Check(Machine(plan, f), "decode")
		if len(got) != 1 || got[0].String() != c.want || got[0].Phase != "decode" {
			t.Errorf("said %v, want [%s] once", got, c.want)
		}
		if again := book.Check(Machine(plan, f), "next"); len(again) != 0 {
			t.Errorf("said again at the next phase: %v", again)
		}
	}
	if len(book.Changes) != 9 {
		t.Errorf("the book keeps %d changes, want 9", len(book.Changes))
	}
}

// TestGatherCommandsAndPackages: each command's output kept, a failing
// one with its error, a hanging one given up; packages from pip's list.
func TestGatherCommandsAndPackages(t *testing.T) {
	plan := &campaign.Plan{Name: "c", Dir: t.TempDir(), Conditions: campaign.Conditions{
		Commands: []string{"echo vllm 0.13.0", "echo oops >&2; exit 3", "sleep 30"},
	}}
	start := time.Now()
	c := Gather(context.Background(), plan, nil, 500*time.Millisecond)
	if time.Since(start) > 20*time.Second {
		t.Errorf("a hanging command held the gathering %v", time.Since(start))
	}
	if len(c.Commands) != 3 || c.Commands[0].Output != "vllm 0.13.0" || c.Commands[0].Error != "" {
		t.Fatalf("commands: %+v", c.Commands)
	}
	if c.Commands[1].Output != "oops" || !strings.Contains(c.Commands[1].Error, "exit status 3") {
		t.Errorf("failing command: %+v", c.Commands[1])
	}
	if !strings.Contains(c.Commands[2].Error, "gave no answer") {
		t.Errorf("hanging command: %+v", c.Commands[2])
	}
	old := c
	c.Commands[0].Output = "vllm 0.14.1"
	old.Commands = append([]Command(nil), old.Commands...)
	old.Commands[0].Output = "vllm 0.13.0"
	if d := Diff(old, c); len(d) != 1 || d[0].String() != "output of `echo vllm 0.13.0` vllm 0.13.0 → vllm 0.14.1" {
		t.Errorf("diff %v", d)
	}
	a := Conditions{Packages: map[string]string{"vllm": "0.13.0", "torch": "2.9.0"}}
	b := Conditions{Packages: map[string]string{"vllm": "0.14.1", "torch": "2.9.0"}}
	if d := Diff(a, b); len(d) != 1 || d[0].String() != "vllm 0.13.0 → 0.14.1" {
		t.Errorf("packages diff %v", d)
	}
}

// TestAHungCommandIsKilledWholeAndALoudOneBounded: a conditions command
// that hangs is killed with its children at the timeout (the timeout
// killed only sh -c, and its children ran on); one that prints 100 MB is
// kept to its first 16 KiB, the rest counted, without holding it all.
func TestAHungCommandIsKilledWholeAndALoudOneBounded(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child")
	out, err := shell(context.Background(), dir, "sleep 300 & echo $! > "+pidFile+"; wait", 300*time.Millisecond, maxOutput)
	if err == nil || !strings.Contains(err.Error(), "gave no answer") {
		t.Errorf("a hung command: %q, %v", out, err)
	}
	b, _ := os.ReadFile(pidFile)
	if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 {
		testutil.Eventually(t, 5*time.Second, "the hung command's child gone", func() bool {
			st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			return len(st) == 0 || strings.Contains(string(st), ") Z ")
		})
	} else {
		t.Fatalf("no child pid written: %q", b)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out, err = shell(context.Background(), dir, "head -c 100000000 /dev/zero | tr '\\0' x", time.Minute, maxOutput)
	runtime.ReadMemStats(&after)
	if err != nil || len(out) > maxOutput+100 || !strings.Contains(out, "[cut: 99983616 more bytes]") {
		t.Errorf("100 MB of output: %d bytes kept, %v, tail %q", len(out), err, out[max(0, len(out)-60):])
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Errorf("reading 100 MB of output allocated %d MB; want it bounded", grew>>20)
	}
}

// TestSlurmNodesComeAndGo: the GPUs of a Slurm job's nodes are read only
// while the job runs there; their coming and going is no change of
// conditions, but a GPU gone from a node still read is.
func TestSlurmNodesComeAndGo(t *testing.T) {
	plan := &campaign.Plan{Name: "c", File: "/c.yaml", Dir: t.TempDir(), Hash: strings.Repeat("ab", 32)}
	on := func(host string, i int) gpu.Conditions { g := h200(i); g.Host = host; return g }
	f := &fleet{}
	book := NewBook(Machine(plan, f))
	f.gpus = []gpu.Conditions{on("n1", 0), on("n1", 1), on("n2", 0), on("n2", 1)}
	if got := book.Check(Machine(plan, f), "serve"); len(got) != 0 {
		t.Errorf("a job's nodes read for the first time: %v; want no change", got)
	}
	f.gpus = f.gpus[2:]
	if got := book.Check(Machine(plan, f), "decode"); len(got) != 0 {
		t.Errorf("a job's node no longer read: %v; want no change", got)
	}
	f.gpus = f.gpus[:1]
	if got := book.Check(Machine(plan, f), "gemm"); len(got) != 1 || got[0].String() != "GPU count 2 → 1" {
		t.Errorf("a GPU gone from a node still read: %v; want GPU count 2 → 1", got)
	}
}

// TestInterconnectConditions: the IOMMU as the command line sets it, the
// NCCL_* variables of the process and the campaign file; a change of
// either is said between campaigns.
func TestInterconnectConditions(t *testing.T) {
	if got := iommuMode("BOOT_IMAGE=/vmlinuz root=/dev/sda1 intel_iommu=on iommu=pt quiet"); !strings.HasPrefix(got, "intel_iommu=on; iommu=pt") && !strings.HasPrefix(got, "intel_iommu=on, iommu=pt") {
		t.Errorf("iommu %q; want the command line's iommu settings first", got)
	}
	t.Setenv("NCCL_P2P_DISABLE", "1")
	env := ncclEnv(&campaign.Plan{Env: map[string]string{"NCCL_IB_DISABLE": "1", "OTHER": "x"}})
	if env["NCCL_P2P_DISABLE"] != "1" || env["NCCL_IB_DISABLE"] != "1" || len(env) != 2 {
		t.Errorf("NCCL env %v", env)
	}
	var said []string
	for _, c := range Diff(Conditions{NCCLEnv: map[string]string{"NCCL_P2P_DISABLE": "1"}, IOMMU: "iommu=pt"}, Conditions{IOMMU: "iommu=on"}) {
		said = append(said, c.String())
	}
	all := strings.Join(said, "|")
	if !strings.Contains(all, "NCCL_P2P_DISABLE") || !strings.Contains(all, "IOMMU") {
		t.Errorf("changes said %q; want NCCL_P2P_DISABLE and the IOMMU", said)
	}
}
