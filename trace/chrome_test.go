package trace

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

type reference struct {
	Kernels  int     `json:"kernels"`
	KernelUS float64 `json:"kernel_us"`
	MemoryUS float64 `json:"memory_us"`
	WindowUS float64 `json:"window_us"`
	BusyUS   float64 `json:"busy_us"`
	Top      []struct {
		Name    string  `json:"name"`
		Count   int     `json:"count"`
		TotalUS float64 `json:"total_us"`
	} `json:"top"`
	Cats map[string]struct {
		Count   int     `json:"count"`
		TotalUS float64 `json:"total_us"`
	} `json:"cats"`
}

// near is equality to well under a microsecond: sums taken in another
// order differ in the last bits; timestamps near 5e12 µs carry about a
// thousandth of a µs.
func near(a, b float64) bool { return math.Abs(a-b) < 0.01 }

// TestRealTraceMatchesPython: two ranks' traces captured on an H200
// (scripts/capture-trace.py: a small Mixtral with random weights, a few
// decode steps, use_gzip=True) summarised the same as an independent
// Python aggregation of the same files (scripts/trace-reference.py, run
// once by hand into testdata/reference.json): kernel count and time,
// memory time, window, busy time, the top kernels, each category.
func TestRealTraceMatchesPython(t *testing.T) {
	var ref map[string]reference
	b, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref) != 2 {
		t.Fatalf("reference has %d traces", len(ref))
	}
	for file, want := range ref {
		s, err := File(filepath.Join("testdata", file), Options{})
		if err != nil || s.Err != "" {
			t.Fatalf("%s: %v %s", file, err, s.Err)
		}
		if s.Kernels != want.Kernels || !near(s.KernelUS, want.KernelUS) || !near(s.MemoryUS, want.MemoryUS) ||
			!near(s.WindowUS, want.WindowUS) || !near(s.BusyUS, want.BusyUS) {
			t.Errorf("%s: kernels %d %.3f µs, memory %.3f, window %.3f, busy %.3f; python: %d %.3f, %.3f, %.3f, %.3f", file,
				s.Kernels, s.KernelUS, s.MemoryUS, s.WindowUS, s.BusyUS, want.Kernels, want.KernelUS, want.MemoryUS, want.WindowUS, want.BusyUS)
		}
		if len(s.Top) != len(want.Top) {
			t.Fatalf("%s: %d top kernels, python %d", file, len(s.Top), len(want.Top))
		}
		for i, k := range want.Top {
			if s.Top[i].Name != k.Name || s.Top[i].Count != k.Count || !near(s.Top[i].TotalUS, k.TotalUS) {
				t.Errorf("%s top %d: %q ×%d %.3f; python %q ×%d %.3f", file, i, s.Top[i].Short, s.Top[i].Count, s.Top[i].TotalUS, Short(k.Name), k.Count, k.TotalUS)
			}
		}
		if len(s.Cats) != len(want.Cats) {
			t.Errorf("%s: categories %+v; python %+v", file, s.Cats, want.Cats)
		}
		for _, c := range s.Cats {
			w, ok := want.Cats[c.Name]
			if !ok || w.Count != c.Count || !near(w.TotalUS, c.TotalUS) {
				t.Errorf("%s: %s ×%d %.3f µs; python ×%d %.3f", file, c.Name, c.Count, c.TotalUS, w.Count, w.TotalUS)
			}
		}
		if s.Rank != "rank 0" && s.Rank != "rank 1" {
			t.Errorf("rank %q", s.Rank)
		}
		if len(s.Streams) == 0 || len(s.Streams[0].Gaps) == 0 {
			t.Errorf("%s: no stream gaps: %+v", file, s.Streams)
		}
	}
}

// TestTruncatedGzip: a trace cut short (the copy still running, a full
// disk) gives a clear line and what was read, never a crash.
func TestTruncatedGzip(t *testing.T) {
	b, err := os.ReadFile(firstTrace(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{len(b) / 2, len(b) - 9, 10, 3} {
		p := filepath.Join(t.TempDir(), "rank0.cut.pt.trace.json.gz")
		os.WriteFile(p, b[:cut], 0o644)
		s, err := File(p, Options{})
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if s.Err == "" {
			t.Errorf("cut at %d: no error said", cut)
		}
		t.Logf("cut at %d of %d: %s (%d kernels read)", cut, len(b), s.Err, s.Kernels)
	}
}

func firstTrace(t *testing.T) string {
	m, _ := filepath.Glob("testdata/rank0.*.pt.trace.json.gz")
	if len(m) != 1 {
		t.Fatal("no rank 0 trace in testdata")
	}
	return m[0]
}

// TestNoKernels: a trace of CPU activity alone says there is no GPU
// kernel in it.
func TestNoKernels(t *testing.T) {
	s, err := Chrome(strings.NewReader(`{"schemaVersion":1,"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":5,"args":{"a":[1,{"b":"}"}]}}],"traceName":"x"}`), Options{})
	if err != nil || s.Kernels != 0 || s.WindowUS != 0 {
		t.Errorf("%+v %v", s, err)
	}
	if _, err := Chrome(strings.NewReader(`{"foo": 1}`), Options{}); err == nil {
		t.Error("a JSON file with no traceEvents was taken for a trace")
	}
	if _, err := Chrome(strings.NewReader(`<html>`), Options{}); err == nil || !strings.Contains(err.Error(), "not a JSON trace") {
		t.Errorf("html: %v", err)
	}
}

// TestOldKinetoAndEscapes: older kineto wrote cat "Kernel"; names with
// escapes are read whole; the array form of the format is read too;
// events out of order and overlapping streams make the right union and
// gaps.
func TestOldKinetoAndEscapes(t *testing.T) {
	doc := `[
 {"ph":"X","cat":"Kernel","name":"ampere_bf16_s16816gemm_\"x\"\u00e9","tid":7,"ts":100,"dur":10},
 {"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_bf16_RING_LL","tid":9,"ts":105,"dur":21},
 {"ph":"X","cat":"Kernel","name":"ampere_bf16_s16816gemm_\"x\"\u00e9","tid":7,"ts":50,"dur":10},
 {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pageable -> Device)","tid":7,"ts":200,"dur":4},
 {"ph":"i","cat":"kernel","name":"instant","ts":1},
 {"ph":"X","cat":"cpu_op","name":"aten::mm","tid":1,"ts":0,"dur":1000}
]`
	s, err := Chrome(strings.NewReader(doc), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Kernels != 3 || s.KernelUS != 41 || s.MemoryUS != 4 || s.WindowUS != 154 || s.BusyUS != 10+26+4 {
		t.Errorf("%+v", s)
	}
	if s.Top[0].Name != "ncclDevKernel_AllReduce_Sum_bf16_RING_LL" || s.Top[0].Cat != CatComm || s.Top[1].Name != `ampere_bf16_s16816gemm_"x"é` || s.Top[1].Cat != CatGEMM {
		t.Errorf("top %+v", s.Top)
	}
	st := s.Streams[0] // stream 7: 50-60, 100-110, 200-204
	if st.ID != "7" || st.BusyUS != 24 || st.GapUS != 130 || len(st.Gaps) != 2 || st.Gaps[0].DurUS != 90 || st.Gaps[0].AtUS != 60 {
		t.Errorf("stream %+v", st)
	}
}

func TestShortNames(t *testing.T) {
	for in, want := range map[string]string{
		"void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul>)": "vectorized_elementwise_kernel<bfloat16_copy_kernel_cuda>",
		"void at::native::(anonymous namespace)::indexSelectSmallIndex<c10::BFloat16, long, unsigned int, 2, 2, -2>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, long)":                                                                                                   "indexSelectSmallIndex",
		"_ZN7cutlass13device_kernelIN2at4cuda6detail25enable_3x_kernel_for_sm9xINS_4gemm6kernel13GemmUniversalEEEEvNT_6ParamsE":                                                                                                                                                         "cutlass::device_kernel<GEMM>",
		"nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN": "nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN",
	} {
		if got := Short(in); got != want {
			t.Errorf("Short(%.40q) = %q; want %q", in, got, want)
		}
	}
}

func TestRulesOverride(t *testing.T) {
	r, err := NewRules([]Rule{{Name: "GEMM", Pattern: "nvjet"}, {Name: "router", Pattern: "topk"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Of("nvjet_x") != "GEMM" || r.Of("gatherTopK") != "router" || r.Of("cutlass_gemm") == "GEMM" {
		t.Errorf("%s %s %s", r.Of("nvjet_x"), r.Of("gatherTopK"), r.Of("cutlass_gemm"))
	}
	if _, err := NewRules([]Rule{{Name: "bad", Pattern: "("}}); err == nil || !strings.Contains(err.Error(), `"bad"`) {
		t.Errorf("bad pattern: %v", err)
	}
}

// TestPyTorchKernelsReadable: PyTorch's elementwise kernels, several of
// one template, each keep what they run (the copy, the functor) and are
// told apart without a bare template argument standing for it; no two
// share a short name.
func TestPyTorchKernelsReadable(t *testing.T) {
	names := []string{
		"void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1})",
		"void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1})",
		"void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul>)",
		"void at::native::vectorized_elementwise_kernel<4, at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul>)",
		"void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul>)",
		"void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >(int, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul>)",
		"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
	}
	ks := make([]Kernel, len(names))
	for i, n := range names {
		ks[i] = Kernel{Name: n, Short: Short(n)}
	}
	tellApart(ks)
	seen := map[string]bool{}
	bare := regexp.MustCompile(`<…?[0-9]+…?>`)
	for i, k := range ks {
		if seen[k.Short] {
			t.Errorf("two kernels share %q", k.Short)
		}
		seen[k.Short] = true
		if bare.MatchString(k.Short) {
			t.Errorf("%q: a bare template argument stands for what it runs", k.Short)
		}
		for _, op := range []string{"direct_copy_kernel_cuda", "bfloat16_copy_kernel_cuda", "MulFunctor", "CUDAFunctor_add"} {
			if strings.Contains(names[i], op) && !strings.Contains(k.Short, op) {
				t.Errorf("%q lost %s", k.Short, op)
			}
		}
	}
}

// TestKernelsToldApart: two kernels of one template with the same short
// name keep it, with the argument they differ in beside it, named by its
// place.
func TestKernelsToldApart(t *testing.T) {
	ks := []Kernel{
		{Name: "void marlin_moe_wna16::Marlin<(vllm::ScalarTypeId)3, (vllm::ScalarTypeId)4, 256, 1, 8>(int4 const*)"},
		{Name: "void marlin_moe_wna16::Marlin<(vllm::ScalarTypeId)3, (vllm::ScalarTypeId)4, 128, 1, 8>(int4 const*)"},
		{Name: "nvjet_x"},
	}
	for i := range ks {
		ks[i].Short = Short(ks[i].Name)
	}
	tellApart(ks)
	if ks[0].Short != "marlin_moe_wna16::Marlin · arg 3 = 256" || ks[1].Short != "marlin_moe_wna16::Marlin · arg 3 = 128" || ks[2].Short != "nvjet_x" {
		t.Errorf("%q %q %q", ks[0].Short, ks[1].Short, ks[2].Short)
	}
}

// TestGzipKnownByItsBytes: a gzipped trace named .json, and a plain one
// named .json.gz, are both read: the magic bytes decide.
func TestGzipKnownByItsBytes(t *testing.T) {
	gz, err := os.ReadFile(firstTrace(t))
	if err != nil {
		t.Fatal(err)
	}
	want, err := File(firstTrace(t), Options{})
	if err != nil || want.Kernels == 0 {
		t.Fatalf("the reference: %v %+v", err, want)
	}
	zr, _ := gzip.NewReader(bytes.NewReader(gz))
	plain, _ := io.ReadAll(zr)
	dir := t.TempDir()
	for name, data := range map[string][]byte{"rank0.gzipped.pt.trace.json": gz, "rank0.plain.pt.trace.json.gz": plain} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, data, 0o644)
		s, err := File(p, Options{})
		if err != nil || s.Err != "" || s.Kernels != want.Kernels {
			t.Errorf("%s: %v %q, %d kernels; want %d", name, err, s.Err, s.Kernels, want.Kernels)
		}
	}
}

// TestStreamsAreADevices: one trace holding two GPUs, each with a stream
// 7: their activity is two streams, not one whose gaps the other fills.
func TestStreamsAreADevices(t *testing.T) {
	s, err := Chrome(strings.NewReader(`{"traceEvents":[
{"ph":"X","cat":"kernel","name":"a","pid":0,"tid":7,"ts":0,"dur":10},
{"ph":"X","cat":"kernel","name":"a","pid":0,"tid":7,"ts":100,"dur":10},
{"ph":"X","cat":"kernel","name":"b","pid":1,"tid":7,"ts":40,"dur":20}]}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Streams) != 2 {
		t.Fatalf("streams %+v; want device 0's and device 1's", s.Streams)
	}
	if st := s.Streams[0]; st.ID != "0/7" || st.GapUS != 90 {
		t.Errorf("the busiest-gapped stream is %s with %v µs idle; want device 0's stream 7 with 90 µs", st.ID, st.GapUS)
	}
}

// TestHugeNameBounded: a 20 MB kernel name is kept, matched and shown
// through its first 4 KiB, read in well under the seconds a regex over
// the whole name took.
func TestHugeNameBounded(t *testing.T) {
	huge := "gemm_" + strings.Repeat("x", 20<<20)
	s, err := Chrome(strings.NewReader(`{"traceEvents":[{"ph":"X","cat":"kernel","name":"`+huge+`","pid":0,"tid":7,"ts":0,"dur":10}]}`), Options{Top: 5, Rules: DefaultRules()})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Top) != 1 || len(s.Top[0].Name) > maxName {
		t.Fatalf("top %d kernels, the first named in %d bytes; want one, at most %d", len(s.Top), len(s.Top[0].Name), maxName)
	}
}
