package report

import (
	"testing"

	"github.com/greenlight-run/greenlight/trace"
)

// TestHeadline: a trace where the GPU was busy 2.6 % of the window says
// the host set the pace, the category with most of the time, and gaps of
// a kind with their spacing; a GPU-bound one says so; no window, nothing.
func TestHeadline(t *testing.T) {
	host := &trace.Summary{Rank: "rank 0", WindowUS: 1e6, BusyUS: 26000, KernelUS: 26000,
		Cats:    []trace.Cat{{Name: "MoE", TotalUS: 14000}, {Name: "communication", TotalUS: 9000}},
		Streams: []trace.Stream{{ID: "0/7", Gaps: []trace.Gap{{AtUS: 100000, DurUS: 60000}, {AtUS: 570000, DurUS: 59000}, {AtUS: 335000, DurUS: 58000}}}}}
	want := "The GPU was busy 2.6 % of the traced window: the host set the pace (launches, scheduling, Python: the GPU waited); MoE took 53.8 % of its time; largest gaps 60.000 ms, every ~235.000 ms."
	if got := headline([]*trace.Summary{host}); got != want {
		t.Errorf("host-bound:\n got %q\nwant %q", got, want)
	}
	gpu := &trace.Summary{WindowUS: 1e6, BusyUS: 950000, KernelUS: 900000, Cats: []trace.Cat{{Name: "GEMM", TotalUS: 600000}}}
	if got := headline([]*trace.Summary{gpu}); got != "The GPU was busy 95.0 % of the traced window: the GPU set the pace; GEMM took 66.7 % of its time." {
		t.Errorf("GPU-bound: %q", got)
	}
	if got := headline([]*trace.Summary{{}}); got != "" {
		t.Errorf("no window: %q", got)
	}
}
