package report

import (
	"strings"
	"testing"

	"github.com/greenlight-run/greenlight/internal/decodefloor"
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

// TestGEMMTermByDtype: a shape measured in one dtype counts; one
// measured in two (a dtype sweep: bf16 and int4 of the same shape) is
// never averaged: it stays in the rest, said, since which the server runs
// is not known.
func TestGEMMTermByDtype(t *testing.T) {
	cfg := decodefloor.Config{Hidden: 4096, Layers: 32, Intermediate: 14336, Heads: 32, KVHeads: 8, Vocab: 128256}
	measured := map[gemmKey]gemmRuns{
		{8, 6144, 4096}:  {"bf16": {secs: 20e-6, bytes: 50e6, runs: 3, phases: []string{"roof"}}},
		{8, 4096, 14336}: {"bf16": {secs: 42e-6, bytes: 117e6, runs: 3, phases: []string{"roof"}}, "int4": {secs: 15e-6, bytes: 30e6, runs: 3, phases: []string{"roof"}}},
	}
	g, why := gemmTerm(8, 1, 3000, cfg, measured)
	if g == nil {
		t.Fatalf("no term: %s", why)
	}
	if len(g.Shapes) != 1 || g.Shapes[0].Name != "qkv_proj" {
		t.Errorf("shapes %+v; want qkv_proj alone", g.Shapes)
	}
	if want := 32 * (20 - 50e6/3000e9*1e6) / 1000; g.Ms < want-1e-9 || g.Ms > want+1e-9 {
		t.Errorf("term %v ms; want %v", g.Ms, want)
	}
	if !strings.Contains(strings.Join(g.Missing, "; "), "down_proj 8×4096×14336 (measured in bf16 and int4") {
		t.Errorf("down_proj in two dtypes not said: %v", g.Missing)
	}
}
