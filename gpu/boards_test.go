package gpu

import (
	"math"
	"testing"
)

// TestBoardsMatchTheirDatasheets: each board's per-SM, per-clock figure
// gives back the vendor's quoted peak at its quoted clock
// (within 1.5%: the L40S's datasheet has BF16 1.2% under half its FP8),
// and NVML's names find their board; an unknown one is not guessed.
func TestBoardsMatchTheirDatasheets(t *testing.T) {
	for _, c := range []struct {
		nvml, key, dtype string
		tflops           float64 // the vendor's dense figure
	}{
		{"NVIDIA H100 80GB HBM3", "h100-sxm", "bf16", 989.4},
		{"NVIDIA H100 80GB HBM3", "h100-sxm", "fp8", 1978.9},
		{"NVIDIA H100 80GB HBM3", "h100-sxm", "tf32", 494.7},
		{"NVIDIA H100 PCIe", "h100-pcie", "bf16", 756},
		{"NVIDIA H200", "h200", "bf16", 989.4},
		{"NVIDIA A100-SXM4-80GB", "a100", "bf16", 312},
		{"NVIDIA A100-SXM4-80GB", "a100", "int8", 624},
		{"NVIDIA L40S", "l40s", "bf16", 362.05},
		{"NVIDIA L40S", "l40s", "fp8", 733},
		{"NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "rtx-pro-6000", "bf16", 504},
	} {
		b, ok := BoardOf(c.nvml)
		if !ok || b.Key != c.key {
			t.Errorf("%q is %q (%v); want %s", c.nvml, b.Key, ok, c.key)
			continue
		}
		got, err := b.PeakTFLOPS(c.dtype, b.SpecMHz)
		if err != nil || math.Abs(got-c.tflops)/c.tflops > 0.015 {
			t.Errorf("%s %s peak %.1f TFLOP/s (%v); the vendor says %.1f", c.key, c.dtype, got, err, c.tflops)
		}
	}
	if b, ok := BoardOf("NVIDIA GeForce RTX 4090"); ok {
		t.Errorf("an unknown board is %s; want it said unknown", b.Key)
	}
	a100, _ := BoardOf("NVIDIA A100-SXM4-80GB")
	if _, err := a100.PeakTFLOPS("fp8", 1410); err == nil {
		t.Error("an A100's fp8 peak: no error; it has no fp8 tensor cores")
	}
	// At the clock a run held: the RTX PRO 6000 under its power
	// limit, 1.9 GHz, is 73% of its spec figure.
	rtx, _ := BoardOf("NVIDIA RTX PRO 6000 Blackwell Server Edition")
	at, _ := rtx.PeakTFLOPS("bf16", 1900)
	spec, _ := rtx.PeakTFLOPS("bf16", rtx.SpecMHz)
	if r := at / spec; math.Abs(r-0.726) > 0.005 {
		t.Errorf("at 1,900 MHz %.3f of the spec peak; want 0.726", r)
	}
}
