package demo

// The demo's torch.profiler traces: one gzipped Chrome trace per rank, as
// vLLM writes them on /stop_profile, with the kernels a decode step of a
// large MoE model runs (GEMMs, flash attention, MoE routing and Marlin
// experts, the custom all-reduce, norms), flushed in pieces over a couple
// of seconds, so the demo's record shows where the GPU time went. Rank 3
// is made 9% slower, and every tenth step waits on the scheduler: the
// spread and the gaps are what a real campaign looks for.

import (
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

type demoKernel struct {
	name string
	us   float64
	cat  string
}

var demoLayer = []demoKernel{
	{"void vllm::rms_norm_kernel<c10::BFloat16, 8, 4>(c10::BFloat16*, c10::BFloat16 const*, long, c10::BFloat16 const*, float, int, int)", 2.1, "kernel"},
	{"nvjet_sm90_tst_64x8_64x16_2x1_v_bz_TNT", 9.4, "kernel"},
	{"void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>, false, false, false, false, true, true, false, false>(Flash_fwd_params)", 14.2, "kernel"},
	{"nvjet_sm90_tst_64x8_64x16_1x1_h_bz_TNN", 6.3, "kernel"},
	{"void vllm::cross_device_reduce_1stage<__nv_bfloat16, 7>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)", 10.8, "kernel"},
	{"void vllm::moe::topkGatingSoftmax<8, 384, 4, 16, 64, int, float, 2>(float const*, bool const*, float*, int, int*, int, int, int)", 3.1, "kernel"},
	{"void marlin_moe_wna16::Marlin<(vllm::ScalarTypeId)3, (vllm::ScalarTypeId)4, 256, 1, 8, 8, true, 4, 8, false>(int4 const*, int4 const*, int4*, int4*, int4 const*, int)", 38.5, "kernel"},
	{"void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)", 2.6, "kernel"},
	{"void marlin_moe_wna16::Marlin<(vllm::ScalarTypeId)3, (vllm::ScalarTypeId)4, 128, 1, 8, 8, true, 4, 8, false>(int4 const*, int4 const*, int4*, int4*, int4 const*, int)", 21.7, "kernel"},
	{"void vllm::cross_device_reduce_1stage<__nv_bfloat16, 7>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)", 10.9, "kernel"},
}

// writeTraces writes ranks traces into dir, a piece at a time over
// about two seconds, and returns when all are closed.
func writeTraces(dir string, ranks int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	type out struct {
		f  *os.File
		gz *gzip.Writer
		ts float64
	}
	outs := make([]*out, ranks)
	stamp := time.Now().UnixMilli()
	for r := range outs {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("demo-rank%d.%d.pt.trace.json.gz", r, stamp)))
		if err != nil {
			return err
		}
		gz := gzip.NewWriter(f)
		fmt.Fprintf(gz, `{"schemaVersion": 1, "deviceProperties": [{"id": %d, "name": "NVIDIA H200"}], "traceEvents": [`+"\n", r+1)
		fmt.Fprintf(gz, `{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": %d, "tid": 7, "ts": 1000.0, "dur": 6.5, "args": {"stream": 7}}`, r+1)
		outs[r] = &out{f: f, gz: gz, ts: 1010}
	}
	const steps, layers, piece = 120, 4, 20
	for s := 0; s < steps; s++ {
		for r, o := range outs {
			slow := 1.0
			if r == 3 {
				slow = 1.09
			}
			for l := 0; l < layers; l++ {
				for k, kern := range demoLayer {
					dur := kern.us * slow * (1 + 0.02*float64((s*7+k+l)%5))
					fmt.Fprintf(o.gz, ",\n"+`{"ph": "X", "cat": %q, "name": %q, "pid": %d, "tid": 7, "ts": %.3f, "dur": %.3f, "args": {"stream": 7, "correlation": %d}}`,
						kern.cat, kern.name, r+1, o.ts, dur, s*1000+l*20+k)
					o.ts += dur + 1.4
				}
			}
			o.ts += 35 // launch of the next CUDA-graph replay
			if s%10 == 9 {
				o.ts += 420 // the scheduler, every tenth step
			}
		}
		if s%piece == piece-1 {
			for _, o := range outs {
				o.gz.Flush()
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	for _, o := range outs {
		fmt.Fprint(o.gz, "\n], \"traceName\": \"demo\"}\n")
		o.gz.Close()
		o.f.Close()
	}
	return nil
}
