package report

// The GEMMs' term of a decode row's budget: the model's GEMMs (one GPU's
// shard, internal/decodefloor) as a roofline phase of the campaign
// measured them at M = the row's batch, each call's time less its bytes
// over the floor's bandwidth, times its calls a step. A shape the
// roofline did not measure at that M stays in the rest, said.

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/greenlight-run/greenlight/internal/decodefloor"
	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// gemmKey is a GEMM's M, N and K.
type gemmKey struct{ m, n, k int }

// gemmRun is what roofline phases measured of one GEMM shape in one
// dtype: the mean seconds and bytes of a call over its runs.
type gemmRun struct {
	secs, bytes float64
	runs        int
	phases      []string
}

// gemmRuns are a shape's measurements by dtype (a sweep of dtype: bf16
// and int4 of the same shape are two, never averaged together).
type gemmRuns map[string]*gemmRun

// measuredGEMMs are the GEMM shapes every roofline phase of the campaign
// measured, by M, N and K as its rows and axes name them (m, n, k, at the
// top or under one axis: shape.m): the mean of their runs' seconds and
// bytes by the phase's own expressions, by dtype (a dtype axis, else the
// roofline's). A run stamped under bad conditions (a throttled GPU) is
// left out.
func (w *Writer) measuredGEMMs(st *runner.State) map[gemmKey]gemmRuns {
	out := map[gemmKey]gemmRuns{}
	for _, p := range st.Phases {
		ph := w.plan.Phase(p.ID)
		if ph == nil || ph.Roofline == nil {
			continue
		}
		units := ph.AllSteps()
		for i, s := range p.Steps {
			if s.Status != runner.Done || s.Facts.Stamped() != "" {
				continue
			}
			axes := unitVars(ph, units, i)
			for _, row := range s.Results {
				vals := campaign.With(rowNumbers(row), axes)
				key, ok := mnkOf(vals)
				if !ok {
					continue
				}
				secs, e1 := ph.Roofline.Seconds.Eval(vals)
				bytes, e2 := ph.Roofline.Bytes.Eval(vals)
				if e1 != nil || e2 != nil || secs <= 0 || bytes <= 0 {
					continue
				}
				dtype, _ := vals["dtype"].(string)
				if dtype == "" {
					dtype = ph.Roofline.Dtype
				}
				if out[key] == nil {
					out[key] = gemmRuns{}
				}
				g := out[key][dtype]
				if g == nil {
					g = &gemmRun{}
					out[key][dtype] = g
				}
				n := float64(g.runs)
				g.secs, g.bytes = (g.secs*n+secs)/(n+1), (g.bytes*n+bytes)/(n+1)
				g.runs++
				if !slices.Contains(g.phases, ph.ID) {
					g.phases = append(g.phases, ph.ID)
				}
			}
		}
	}
	return out
}

// mnkOf is a roofline row's M, N and K: named m, n and k (or M, N and K,
// as gemm_bench.py writes them) at the top of its values, or under one
// axis (shape: {m, n, k}).
func mnkOf(vals map[string]any) (gemmKey, bool) {
	get := func(v map[string]any) (gemmKey, bool) {
		var x [3]int
		for i, name := range []string{"m", "n", "k"} {
			f, ok := numberOf(v[name])
			if !ok {
				f, ok = numberOf(v[strings.ToUpper(name)])
			}
			if !ok || f <= 0 || f != float64(int(f)) {
				return gemmKey{}, false
			}
			x[i] = int(f)
		}
		return gemmKey{x[0], x[1], x[2]}, true
	}
	if k, ok := get(vals); ok {
		return k, true
	}
	for _, v := range vals {
		if m, ok := v.(map[string]any); ok {
			if k, ok := get(m); ok {
				return k, true
			}
		}
	}
	return gemmKey{}, false
}

func numberOf(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// gemmTerm is a decode row's GEMM term at batch, or why there is none.
func gemmTerm(batch, gpus int, gbsPerGPU float64, cfg decodefloor.Config, measured map[gemmKey]gemmRuns) (*record.GEMMTerm, string) {
	gemms, left := cfg.GEMMs(gpus)
	if len(gemms) == 0 {
		return nil, "the model's config.json names no GEMM shapes"
	}
	if len(measured) == 0 {
		return nil, "no roofline phase measured a GEMM (rows with m, n and k)"
	}
	if gbsPerGPU <= 0 {
		return nil, "no bandwidth to set a GEMM's floor by"
	}
	m := max(batch, 1)
	t := &record.GEMMTerm{}
	for _, g := range gemms {
		byType := measured[gemmKey{m, g.N, g.K}]
		if len(byType) == 0 {
			t.Missing = append(t.Missing, fmt.Sprintf("%s %d×%d×%d", g.Name, m, g.N, g.K))
			continue
		}
		if len(byType) > 1 {
			t.Missing = append(t.Missing, fmt.Sprintf("%s %d×%d×%d (measured in %s: which one the server runs is not said)", g.Name, m, g.N, g.K, strings.Join(slices.Sorted(maps.Keys(byType)), " and ")))
			continue
		}
		var run *gemmRun
		for _, r := range byType {
			run = r
		}
		us, floorUS := run.secs*1e6, run.bytes/(gbsPerGPU*1e9)*1e6
		t.Shapes = append(t.Shapes, record.GEMMShape{Name: g.Name, M: m, N: g.N, K: g.K, Calls: g.Calls, US: us, FloorUS: floorUS, ExcessUS: us - floorUS, Runs: run.runs})
		t.Ms += float64(g.Calls) * (us - floorUS) / 1000
		for _, p := range run.phases {
			if !slices.Contains(t.Phases, p) {
				t.Phases = append(t.Phases, p)
			}
		}
	}
	if len(t.Shapes) == 0 {
		return nil, fmt.Sprintf("no roofline phase measured the model's GEMM shapes at M = %d (%s)", m, strings.Join(t.Missing, ", "))
	}
	t.Missing = append(t.Missing, left...)
	t.Basis = fmt.Sprintf("%d of the model's %d GEMM shapes at M = %d, one GPU's shard at tensor parallelism %d, measured by %s: each call's time less its bytes over %s GB/s, times its calls a step",
		len(t.Shapes), len(gemms), m, max(gpus, 1), strings.Join(t.Phases, ", "), FormatNumber(gbsPerGPU))
	return t, ""
}
