package trace

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"testing"
)

// synthetic writes a kineto-like trace of about size bytes: CPU ops with
// their args, runtime calls, flow events and kernels on three streams
// (names of the shapes real traces have), ts in µs near 5e12.
func synthetic(w io.Writer, size int64) (kernels int, err error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	names := []string{
		"nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_TNN",
		"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
		"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
		"void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>, false, false>(Flash_fwd_params)",
		"fused_moe_kernel",
	}
	fmt.Fprint(bw, `{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}], "traceEvents": [`+"\n")
	var n int64
	ts := 5431122461125.589
	for i := 0; n < size; i++ {
		stream := 7 + 2*(i%3)
		k := names[i%len(names)]
		dur := 1.5 + float64(i%97)*0.25
		line := fmt.Sprintf(`  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1234, "tid": 1234, "ts": %.3f, "dur": 12.250, "args": {"External id": %d, "Record function id": 0, "Ev Idx": %d, "Input Dims": [[4, 7168], [7168, 2048]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1234, "tid": 1234, "ts": %.3f, "dur": 4.1, "args": {"External id": %d, "cbid": 211, "correlation": %d}},
  {"ph": "s", "id": %d, "pid": 1234, "tid": 1234, "ts": %.3f, "cat": "ac2g", "name": "ac2g"},
  {"ph": "X", "cat": "kernel", "name": %s, "pid": 0, "tid": %d, "ts": %.3f, "dur": %.3f, "args": {"External id": %d, "queued": 0, "device": 0, "context": 1, "stream": %d, "correlation": %d, "registers per thread": 168, "shared memory": 0, "blocks per SM": 1.0, "warps per SM": 8.0, "grid": [132, 1, 1], "block": [384, 1, 1], "est. achieved occupancy %%": 12}},
`, ts, i, i, ts+1, i, i, i, ts+1, strconv.Quote(k), stream, ts+5, dur, i, stream, i)
		m, err := bw.WriteString(line)
		if err != nil {
			return kernels, err
		}
		n += int64(m)
		kernels++
		ts += dur + 3
	}
	fmt.Fprint(bw, `  {"ph": "i", "name": "end", "ts": 1, "s": "g"}], "traceName": "synthetic"}`+"\n")
	return kernels, bw.Flush()
}

// BenchmarkChrome: summarising a trace, in MB/s of uncompressed JSON.
func BenchmarkChrome(b *testing.B) {
	var buf bytes.Buffer
	kernels, _ := synthetic(&buf, 64<<20)
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := Chrome(bytes.NewReader(data), Options{})
		if err != nil || s.Kernels != kernels {
			b.Fatalf("%v %d != %d", err, s.Kernels, kernels)
		}
	}
}

// TestWriteSyntheticTrace writes a synthetic trace for scripts/trace-bench
// when GREENLIGHT_TRACE_OUT names a file (GREENLIGHT_TRACE_MB its size).
func TestWriteSyntheticTrace(t *testing.T) {
	out := os.Getenv("GREENLIGHT_TRACE_OUT")
	if out == "" {
		t.Skip("set GREENLIGHT_TRACE_OUT (scripts/trace-bench does)")
	}
	mb, _ := strconv.Atoi(os.Getenv("GREENLIGHT_TRACE_MB"))
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := synthetic(f, int64(max(mb, 1))<<20)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("kernels %d\n", n)
}

// TestSyntheticIsRead: the generator's kernels are all counted, on the
// three streams, with no error.
func TestSyntheticIsRead(t *testing.T) {
	var buf bytes.Buffer
	kernels, _ := synthetic(&buf, 1<<20)
	s, err := Chrome(&buf, Options{})
	if err != nil || s.Kernels != kernels || len(s.Streams) != 3 || s.Err != "" {
		t.Fatalf("%v: %d kernels of %d, %d streams", err, s.Kernels, kernels, len(s.Streams))
	}
	if s.BusyUS <= 0 || s.BusyUS >= s.WindowUS {
		t.Errorf("busy %v of %v", s.BusyUS, s.WindowUS)
	}
}
