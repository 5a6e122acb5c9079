package trace

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestProfilerStepsCounted: the profiler's step marks (prof.step()) are
// counted with their host time, and a capture's families are its ranks'
// means.
func TestProfilerStepsCounted(t *testing.T) {
	ev := func(cat, name string, ts, dur int) string {
		return `{"ph": "X", "cat": "` + cat + `", "name": "` + name + `", "pid": 0, "tid": 7, "ts": ` + itoa(ts) + `, "dur": ` + itoa(dur) + `}`
	}
	var evs []string
	for i := range 3 {
		at := i * 1000
		evs = append(evs, ev("user_annotation", "ProfilerStep#"+itoa(i), at, 900),
			ev("gpu_user_annotation", "ProfilerStep#"+itoa(i), at, 900), // the GPU's copy: not a step again
			ev("user_annotation", "my_region", at, 10),
			ev("kernel", "nvjet_tst_128x64_gemm", at+10, 300), ev("kernel", "fused_moe_kernel", at+400, 200))
	}
	s, err := Chrome(strings.NewReader(`{"traceEvents": [`+strings.Join(evs, ",")+`]}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Steps != 3 || s.StepUS != 900 || s.StepBasis != "GPU" {
		t.Errorf("steps %d, %v µs (%s); want 3, the median 900 µs on the GPU", s.Steps, s.StepUS, s.StepBasis)
	}
	// A step named by the campaign (traces: {step:}): its annotation,
	// on the host alone here.
	own, err := Chrome(strings.NewReader(`{"traceEvents": [`+strings.Join(evs, ",")+`]}`), Options{Step: regexp.MustCompile(`^my_region$`)})
	if err != nil || own.Steps != 3 || own.StepUS != 10 || own.StepBasis != "host" {
		t.Errorf("steps by a named annotation: %d, %v µs (%s), %v; want 3 of 10 µs on the host", own.Steps, own.StepUS, own.StepBasis, err)
	}
	c := Gather("a1-s1-t1", []*Summary{s, s})
	if c.Ranks != 2 || c.Steps != 3 || c.KernelUS != 1500 {
		t.Errorf("capture %+v; want 2 ranks, 3 steps, 1500 µs of kernels", c)
	}
	var gemm, kernel Family
	for _, f := range c.Families {
		switch {
		case f.Kind == FamilyCategory && f.Name == CatGEMM:
			gemm = f
		case f.Kind == FamilyKernel && strings.Contains(f.Name, "fused_moe"):
			kernel = f
		}
	}
	if gemm.US != 900 || gemm.Calls != 3 || kernel.US != 600 || kernel.Calls != 3 {
		t.Errorf("GEMM %+v, fused_moe %+v; want 900 µs in 3 calls, 600 µs in 3", gemm, kernel)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
