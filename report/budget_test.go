package report

import (
	"strings"
	"testing"

	"github.com/greenlight-run/greenlight/record"
)

// TestCaptureFarFromTheTPOTSplitsNothing: a capture whose step is 83%
// over the row's TPOT (an eager loop under the profiler, as on the H100)
// stands beside the row; its idle does not become the row's, in the
// verdict nor the bars.
func TestCaptureFarFromTheTPOTSplitsNothing(t *testing.T) {
	pt := &record.FloorPoint{Batch: 8, TPOTms: 24.18, FloorMs: 5.276}
	far := &record.CapturedStep{Phase: "prof", StepMs: 44.3, BusyMs: 7.724, IdleMs: 36.57, OtherMs: 2.448, GapPct: 83}
	near := *far
	near.Splits = true
	for _, c := range []*record.CapturedStep{far, &near} {
		b := &record.Budget{TPOTms: 24.18, FloorMs: 5.276, RestMs: 18.9, AllReduce: &record.AllReduceTerm{GPUs: 1}, Captured: c}
		_, v := verdictOf(pt, b)
		if said := strings.Contains(v, "GPU idle 36.57 ms"); said != c.Splits {
			t.Errorf("splits %v: verdict %q", c.Splits, v)
		}
	}
}
