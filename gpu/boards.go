package gpu

import (
	"fmt"
	"slices"
	"strings"
)

// Board is what a GPU model can do at most: the figures a roofline is
// drawn from. Dense tensor-core throughput is given per SM per clock, so
// that the peak at the clock a run actually held is SMs × that × clock;
// the spec peak is at SpecMHz, the clock the vendor's figure is quoted
// at. Every figure is the vendor's, its source beside it.
type Board struct {
	Key     string   // a short name: h100-sxm
	Names   []string // substrings of NVML's name that are this board (lower case)
	SMs     int
	SpecMHz float64 // the SM clock the vendor's peak figures are at
	MaxMHz  float64 // the highest SM clock the board runs at
	// FlopsPerClock is dense FLOP per SM per clock by dtype (a fused
	// multiply-add is 2): the tensor cores' for bf16, fp16, tf32, fp8,
	// int8 (ops), fp4; w4a16 (Marlin-style kernels: 4-bit weights
	// dequantised in registers, the multiply in fp16/bf16) runs at fp16's.
	FlopsPerClock map[string]float64
	MemGBs        float64 // memory bandwidth, GB/s (10^9 bytes)
	Source        string
}

// Dtypes are the dtypes a roofline may name.
var Dtypes = []string{"bf16", "fp16", "tf32", "fp8", "int8", "fp4", "w4a16"}

// Boards are the boards greenlight knows. Each per-SM, per-clock figure is
// the vendor's dense peak divided by SMs and the clock it is quoted at
// (the H100 SXM's 989.4 TFLOPS BF16 over 132 SMs at 1,830 MHz: 4,096 FLOP
// a clock per SM), and gives it back (boards_test.go).
var Boards = []Board{
	{
		// NVIDIA H100 Tensor Core GPU Architecture whitepaper (v1.02),
		// table 3: SXM5, 132 SMs, boost 1,830 MHz for the peak figures
		// (1,980 MHz max), dense BF16/FP16 989.4 TFLOPS, TF32 494.7, FP8
		// 1,978.9, INT8 1,978.9 TOPS; HBM3 3.35 TB/s (datasheet).
		Key: "h100-sxm", Names: []string{"h100 80gb hbm3", "h100 sxm", "h100-sxm"}, SMs: 132, SpecMHz: 1830, MaxMHz: 1980,
		FlopsPerClock: map[string]float64{"bf16": 4096, "fp16": 4096, "tf32": 2048, "fp8": 8192, "int8": 8192, "w4a16": 4096},
		MemGBs:        3350, Source: "NVIDIA H100 whitepaper v1.02, table 3; H100 datasheet (3.35 TB/s)",
	},
	{
		// The same whitepaper: PCIe, 114 SMs, dense BF16 756 TFLOPS (at
		// 1,620 MHz: 756e12 / (114 × 4,096); boost up to 1,755 MHz);
		// HBM2e 2.0 TB/s (datasheet: 2,039 GB/s).
		Key: "h100-pcie", Names: []string{"h100 pcie"}, SMs: 114, SpecMHz: 1620, MaxMHz: 1755,
		FlopsPerClock: map[string]float64{"bf16": 4096, "fp16": 4096, "tf32": 2048, "fp8": 8192, "int8": 8192, "w4a16": 4096},
		MemGBs:        2039, Source: "NVIDIA H100 whitepaper v1.02, table 3; H100 PCIe datasheet",
	},
	{
		// H200 datasheet: the H100 SXM's GH100 (132 SMs, 989 TFLOPS dense
		// BF16) with 141 GB of HBM3e at 4.8 TB/s.
		Key: "h200", Names: []string{"h200"}, SMs: 132, SpecMHz: 1830, MaxMHz: 1980,
		FlopsPerClock: map[string]float64{"bf16": 4096, "fp16": 4096, "tf32": 2048, "fp8": 8192, "int8": 8192, "w4a16": 4096},
		MemGBs:        4800, Source: "NVIDIA H200 datasheet (4.8 TB/s); compute as H100 SXM",
	},
	{
		// NVIDIA A100 Tensor Core GPU Architecture whitepaper: 108 SMs,
		// boost 1,410 MHz, dense BF16/FP16 312 TFLOPS, TF32 156, INT8 624
		// TOPS; no FP8. 80 GB SXM4: 2,039 GB/s (datasheet).
		Key: "a100", Names: []string{"a100"}, SMs: 108, SpecMHz: 1410, MaxMHz: 1410,
		FlopsPerClock: map[string]float64{"bf16": 2048, "fp16": 2048, "tf32": 1024, "int8": 4096, "w4a16": 2048},
		MemGBs:        2039, Source: "NVIDIA A100 whitepaper; A100 80GB SXM4 datasheet (2,039 GB/s)",
	},
	{
		// L40S datasheet: 142 SMs, boost 2,520 MHz, dense FP8 733 TFLOPS
		// (142 × 2,048 × 2,520 MHz), BF16/FP16 362.05 (1.2% under half
		// of that: the datasheet's figures do not quite agree), TF32 183;
		// the sparse figures are twice these; GDDR6 864 GB/s.
		Key: "l40s", Names: []string{"l40s"}, SMs: 142, SpecMHz: 2520, MaxMHz: 2520,
		FlopsPerClock: map[string]float64{"bf16": 1024, "fp16": 1024, "tf32": 512, "fp8": 2048, "int8": 2048, "w4a16": 1024},
		MemGBs:        864, Source: "NVIDIA L40S datasheet",
	},
	{
		// RTX PRO 6000 Blackwell datasheet: 188 SMs (24,064 CUDA cores),
		// boost 2,617 MHz; 1,024 dense BF16 FLOP a clock per SM (5th-gen
		// tensor cores; 504 TFLOPS at 2,617 MHz), FP8 twice, FP4 four
		// times; 96 GB GDDR7, 512-bit at 28 Gbps: 1,792 GB/s.
		Key: "rtx-pro-6000", Names: []string{"rtx pro 6000"}, SMs: 188, SpecMHz: 2617, MaxMHz: 2617,
		FlopsPerClock: map[string]float64{"bf16": 1024, "fp16": 1024, "tf32": 512, "fp8": 2048, "int8": 2048, "fp4": 4096, "w4a16": 1024},
		MemGBs:        1792, Source: "NVIDIA RTX PRO 6000 Blackwell datasheet",
	},
}

// BoardOf is the board NVML's name is, or false: an unknown board is
// said, never guessed.
func BoardOf(name string) (Board, bool) {
	n := strings.ToLower(name)
	for _, b := range Boards {
		if slices.ContainsFunc(b.Names, func(s string) bool { return strings.Contains(n, s) }) {
			return b, true
		}
	}
	return Board{}, false
}

// BoardByKey is the board of that key (as the record keeps it), or false.
func BoardByKey(key string) (Board, bool) {
	i := slices.IndexFunc(Boards, func(b Board) bool { return b.Key == key })
	if i < 0 {
		return Board{}, false
	}
	return Boards[i], true
}

// PeakTFLOPS is the board's dense peak for dtype at an SM clock (MHz),
// in TFLOP/s; an error for a dtype it has no tensor-core rate for.
func (b Board) PeakTFLOPS(dtype string, mhz float64) (float64, error) {
	f, ok := b.FlopsPerClock[strings.ToLower(dtype)]
	if !ok {
		return 0, fmt.Errorf("%s has no %s rate (it has %s)", b.Key, dtype, strings.Join(b.dtypes(), ", "))
	}
	return float64(b.SMs) * f * mhz * 1e6 / 1e12, nil
}

func (b Board) dtypes() []string {
	var out []string
	for _, d := range Dtypes {
		if _, ok := b.FlopsPerClock[d]; ok {
			out = append(out, d)
		}
	}
	return out
}
