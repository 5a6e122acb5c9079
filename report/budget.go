package report

// Where decode time goes, and whether it is the bus: each row of a
// floor: phase (a point of a serving sweep), its measured time per output
// token set, term by term, against
//   - the floor: the bytes a step reads over the box's bandwidth
//     (floor.go);
//   - the all-reduce: the campaign's own all_reduce_perf curve at the GPU
//     count of the serving tensor parallelism, read at the row's message
//     (batch × hidden size × the activations' bytes), times the calls a
//     step makes (internal/decodefloor), split into its latency part (the
//     curve's small-message time) and its bandwidth part (the rest of a
//     call: bytes moving over the bus);
//   - the rest: host, launches, idle between kernels, GEMMs above their
//     floor; what is left, said as not measured.
// Each row's verdict names its bound: the all-reduce's latency
// (software: a faster small-message all-reduce wins it back), its
// bandwidth (the bus), or neither. A term that cannot be told is said
// unknown with why, never made up.

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/greenlight-run/greenlight/internal/decodefloor"
	"github.com/greenlight-run/greenlight/internal/files"
	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/trace"
)

// captureFit is how far, in percent, a capture's step may be from a row's
// TPOT and still split the row's rest.
const captureFit = 10

// arShareMin is the share of a token's time under which the all-reduce
// is not what bounds decode.
const arShareMin = 0.10

// The bounds a row's verdict names.
const (
	boundLatency   = "all-reduce latency"
	boundBandwidth = "all-reduce bandwidth"
	boundNeither   = "not the all-reduce"
)

// budgetCurve is the all-reduce curve a decode phase's rows are read
// against, or why there is none.
type budgetCurve struct {
	c       *allReduceCurve
	gpus    int
	basis   string // the GPU count's
	unknown string
	none    bool // one GPU serves: a step makes no all-reduce
}

// servingCurve is the campaign's all-reduce curve at the GPU count of a
// decode phase's tensor parallelism (the service it uses, else its
// floor's GPUs), the one with the most sizes.
func (w *Writer) servingCurve(ph *campaign.Phase, st *runner.State) budgetCurve {
	tp, _, said := w.plan.ParallelOf(ph.ID)
	if tp == 0 && ph.Floor != nil && ph.Floor.GPUs > 0 {
		tp, said = ph.Floor.GPUs, fmt.Sprintf("its floor's %d GPUs", ph.Floor.GPUs)
	}
	bc := budgetCurve{gpus: tp, basis: said}
	switch {
	case tp == 0:
		bc.unknown = "the serving GPU count is not known (no tensor-parallel size in a service it uses, no floor: gpus)"
		return bc
	case tp == 1:
		bc.none = true
		return bc
	}
	curves := w.allReduceCurves(st)
	for i := range curves {
		if curves[i].gpus == tp && (bc.c == nil || len(curves[i].pts) > len(bc.c.pts)) {
			bc.c = &curves[i]
		}
	}
	switch {
	case bc.c == nil && len(curves) == 0:
		bc.unknown = fmt.Sprintf("no all-reduce curve was measured in this campaign (all_reduce_perf at %d GPUs): the all-reduce is not told apart from the rest", tp)
	case bc.c == nil:
		bc.unknown = fmt.Sprintf("no all-reduce curve at %d GPUs ran (the serving GPUs, %s; the campaign's curves: %s): a curve of another GPU count does not say what a call pays here", tp, said, curveCounts(curves))
	case len(bc.c.pts) < 2:
		bc.unknown = fmt.Sprintf("the %d-GPU curve of %s has one size (%s): a call's time between sizes cannot be told", tp, bc.c.label, campaign.SizeText(bc.c.pts[0].size))
		bc.c = nil
	}
	return bc
}

// at is a call's time on the curve at size bytes, interpolated between
// the measured sizes in log-log; below the smallest, the smallest's time
// (small messages cost their latency). ok false past the largest size.
func (c *allReduceCurve) at(size float64) (us float64, ok bool) {
	first, last := c.pts[0], c.pts[len(c.pts)-1]
	switch {
	case size <= first.size:
		return first.us, true
	case size > last.size:
		return 0, false
	}
	for i := 1; i < len(c.pts); i++ {
		a, b := c.pts[i-1], c.pts[i]
		if size <= b.size && a.us == b.us {
			return a.us, true // flat: the latency, exactly
		}
		if size <= b.size {
			f := math.Log(size/a.size) / math.Log(b.size/a.size)
			return math.Exp(math.Log(a.us) + f*math.Log(b.us/a.us)), true
		}
	}
	return last.us, true
}

// latency is the curve's small-message time: its least time a call at
// 64 KiB and under (where an all-reduce pays its latency, not its
// bytes), else its smallest message's.
func (c *allReduceCurve) latency() float64 {
	lo := c.pts[0].us
	for _, p := range c.pts {
		if p.size <= 64<<10 {
			lo = min(lo, p.us)
		}
	}
	return lo
}

// budgetOf sets each floor point's budget: its TPOT term by term, and
// the verdict.
func (w *Writer) budgetOf(ph *campaign.Phase, fl *record.Floor, cfg decodefloor.Config, st *runner.State) {
	bc := w.servingCurve(ph, st)
	off, words, known := w.allReduceChoice(ph.ID, st)
	switch {
	case known && off:
		fl.AllReduce = "custom all-reduce off, " + words + "; NCCL's all-reduce, which the curve measures, is what a step pays"
	case known:
		fl.AllReduce = "custom all-reduce on (" + words + "): a call may take less than NCCL's curve says; a capture's traced all-reduce tells"
	}
	calls, callsHow := cfg.AllReducesPerStep()
	elem, elemHow := cfg.ActivationBytes()
	traced := w.capturesByBatch(ph, st)
	measured := w.measuredGEMMs(st)
	for i := range fl.Points {
		pt := &fl.Points[i]
		b := &record.Budget{TPOTms: pt.TPOTms, FloorMs: pt.FloorMs}
		pt.Budget = b
		known := pt.FloorMs
		switch {
		case bc.none:
			b.AllReduce = &record.AllReduceTerm{GPUs: 1, GPUsBasis: bc.basis,
				CallsBasis: "one GPU serves: a step makes no all-reduce (the term waits for a run on two GPUs or more)"}
		case bc.c == nil:
			b.AllReduceUnknown = bc.unknown
		default:
			msg := float64(max(pt.Batch, 1) * cfg.Hidden * elem)
			us, ok := bc.c.at(msg)
			if !ok {
				b.AllReduceUnknown = fmt.Sprintf("the message at batch %d, %s, is past the %d-GPU curve's largest (%s, %s): no term is made up past what was measured",
					pt.Batch, campaign.SizeText(msg), bc.gpus, campaign.SizeText(bc.c.pts[len(bc.c.pts)-1].size), bc.c.label)
				break
			}
			lat := min(us, bc.c.latency())
			n := float64(bc.gpus)
			ar := &record.AllReduceTerm{GPUs: bc.gpus, Curve: bc.c.label, GPUsBasis: bc.basis, Calls: calls, CallsBasis: callsHow,
				MessageB: msg, MessageBasis: fmt.Sprintf("batch %d × hidden size %d × %d bytes (%s)", max(pt.Batch, 1), cfg.Hidden, elem, elemHow),
				CallUS: us, LatencyUS: lat, BandwidthUS: us - lat,
				Ms: float64(calls) * us / 1000, LatencyMs: float64(calls) * lat / 1000, BandwidthMs: float64(calls) * (us - lat) / 1000,
				BusGBs: msg / (us * 1e-6) / 1e9 * 2 * (n - 1) / n}
			b.AllReduce = ar
			known += ar.Ms
		}
		if g, why := gemmTerm(pt.Batch, fl.GPUs, fl.GBs, cfg, measured); g != nil {
			b.GEMM = g
			known += g.Ms
		} else {
			b.GEMMUnknown = why
		}
		cap := traced[pt.Batch]
		if cap.ar != nil && b.AllReduce != nil && b.AllReduce.Ms > 0 {
			t := *cap.ar
			t.GapPct = 100 * (t.Ms - b.AllReduce.Ms) / b.AllReduce.Ms
			if math.Abs(t.GapPct) > 20 {
				t.Words = fmt.Sprintf("the capture %s traced %s ms of all-reduce a step against %s predicted (%+.0f%%): ", t.Phase, FormatNumber(t.Ms), FormatNumber(b.AllReduce.Ms), t.GapPct)
				if t.GapPct < 0 {
					t.Words += "vLLM's custom all-reduce in use (faster than NCCL's curve), fewer calls a step than counted, or another GPU count"
				} else {
					t.Words += "calls slower than the curve (synchronisation, stragglers waiting at the all-reduce), more calls a step than counted, or another GPU count"
				}
			}
			b.Traced = &t
		}
		b.RestMs = pt.TPOTms - known
		b.RestBasis = "what is left: " + restHolds(b)
		if b.AllReduce == nil {
			b.RestBasis = "what is left, the all-reduce in it: " + b.AllReduceUnknown
		}
		if c := cap.step; c != nil && pt.TPOTms > 0 {
			cs := *c
			ar, arHow := 0.0, "no all-reduce"
			switch {
			case b.Traced != nil:
				ar, arHow = b.Traced.Ms, "the traced all-reduce"
			case b.AllReduce != nil:
				ar, arHow = b.AllReduce.Ms, "the predicted all-reduce"
			}
			cs.OtherMs = cs.BusyMs - pt.FloorMs - ar
			if b.GEMM != nil {
				cs.OtherMs -= b.GEMM.Ms
				arHow += " and the GEMMs' excess"
			}
			cs.GapPct = 100 * (cs.StepMs - pt.TPOTms) / pt.TPOTms
			cs.Basis = fmt.Sprintf("the capture %s: its median profiler step on the GPU's timeline, the GPU busy a step (the union of kernels and copies over its steps), the mean over %d rank(s); other GPU work is the busy less the floor and %s", cs.Phase, cs.Ranks, arHow)
			cs.Splits = math.Abs(cs.GapPct) <= captureFit
			b.Captured = &cs
			if cs.Splits {
				b.RestBasis = fmt.Sprintf("what is left; the capture at this batch splits it: %s ms of GPU work beyond the floor and the terms above (%s), %s ms idle between kernels (host, launches)", FormatNumber(cs.OtherMs), otherHolds(b), FormatNumber(cs.IdleMs))
			} else {
				b.RestBasis += fmt.Sprintf("; the capture %s at this batch is %+.0f%% from the TPOT (the profiler's overhead, or another setting than the row's): it does not split the rest", cs.Phase, cs.GapPct)
			}
		} else if cap.stepErr != "" {
			b.RestBasis += "; " + cap.stepErr
		}
		b.Bound, b.Verdict = verdictOf(pt, b)
	}
	fl.Verdict = campaignVerdict(fl)
}

// restHolds says what a row's rest holds: what no term measured.
func restHolds(b *record.Budget) string {
	if b.GEMM == nil {
		return "host, launches, idle between kernels, attention, GEMMs above their floor (not measured apart: " + b.GEMMUnknown + ")"
	}
	return "host, launches, idle between kernels, attention, and the GEMMs' excess the roofline did not measure (" + strings.Join(b.GEMM.Missing, "; ") + ")"
}

// otherHolds says what a capture's other GPU work holds.
func otherHolds(b *record.Budget) string {
	if b.GEMM == nil {
		return "GEMMs above their floor, attention, the other kernels"
	}
	return "attention, the other kernels, GEMMs the roofline did not measure"
}

// restWords is a row's rest in a verdict: the capture's split where it
// splits it, else the rest and what it holds.
func restWords(b *record.Budget) string {
	if c := b.Captured; c != nil && c.Splits {
		return fmt.Sprintf("other GPU work %s ms, GPU idle %s ms (the capture %s)", FormatNumber(c.OtherMs), FormatNumber(c.IdleMs), c.Phase)
	}
	if b.GEMM != nil {
		return fmt.Sprintf("the rest %s ms (host, launches, attention)", FormatNumber(b.RestMs))
	}
	return fmt.Sprintf("the rest %s ms (host, launches, GEMMs above their floor)", FormatNumber(b.RestMs))
}

// gemmWords is a row's GEMM term in a verdict; "" without one.
func gemmWords(b *record.Budget) string {
	if b.GEMM == nil {
		return ""
	}
	return fmt.Sprintf(", the GEMMs %s ms above their floor (%d shapes measured)", FormatNumber(b.GEMM.Ms), len(b.GEMM.Shapes))
}

// verdictOf is a row's bound and its words, from its numbers.
func verdictOf(pt *record.FloorPoint, b *record.Budget) (string, string) {
	head := fmt.Sprintf("batch %d: ", pt.Batch)
	if pt.TPOTms <= 0 {
		return "", head + "no time per output token: nothing to set the terms against"
	}
	ar := b.AllReduce
	if ar == nil {
		return "", head + fmt.Sprintf("the floor is %.0f%% of %s ms a token; the all-reduce's part is not known (%s)", 100*b.FloorMs/pt.TPOTms, FormatNumber(pt.TPOTms), b.AllReduceUnknown)
	}
	if ar.Calls == 0 {
		return boundNeither, head + fmt.Sprintf("one GPU, no all-reduce: the floor is %.0f%% of %s ms a token%s, %s", 100*b.FloorMs/pt.TPOTms, FormatNumber(pt.TPOTms), gemmWords(b), restWords(b))
	}
	share := ar.Ms / pt.TPOTms
	said := fmt.Sprintf("all-reduce %s of %s ms a token (%.0f%%; %d calls × %s µs at %s)", FormatNumber(ar.Ms), FormatNumber(pt.TPOTms), 100*share, ar.Calls, FormatNumber(ar.CallUS), campaign.SizeText(ar.MessageB))
	switch {
	case share < arShareMin:
		return boundNeither, head + said + fmt.Sprintf(": not what bounds decode; the floor is %.0f%%%s, %s", 100*b.FloorMs/pt.TPOTms, gemmWords(b), restWords(b))
	case ar.LatencyMs >= ar.BandwidthMs:
		return boundLatency, head + said + fmt.Sprintf(", latency-bound: %s ms of it is the curve's small-message time (%s µs a call), which a faster small-message all-reduce (a one-shot kernel, vLLM's custom all-reduce) can win back; the bus is idle: software", FormatNumber(ar.LatencyMs), FormatNumber(ar.LatencyUS))
	}
	return boundBandwidth, head + said + fmt.Sprintf(", bandwidth-bound: %s ms of it moves bytes at %s GB/s bus bandwidth; a faster kernel cannot beat the bytes: the bus", FormatNumber(ar.BandwidthMs), FormatNumber(ar.BusGBs))
}

// campaignVerdict is the rows' verdicts in one line: which batches each
// bound holds at.
func campaignVerdict(fl *record.Floor) string {
	by := map[string][]string{}
	var order []string
	for _, pt := range fl.Points {
		b := pt.Budget
		if b == nil || b.Bound == "" {
			continue
		}
		if _, ok := by[b.Bound]; !ok {
			order = append(order, b.Bound)
		}
		if s := fmt.Sprint(pt.Batch); !slices.Contains(by[b.Bound], s) {
			by[b.Bound] = append(by[b.Bound], s)
		}
	}
	if len(order) == 0 {
		return ""
	}
	var parts []string
	for _, k := range []string{boundLatency, boundBandwidth, boundNeither} {
		if bs := by[k]; len(bs) > 0 {
			what := map[string]string{boundLatency: "latency-bound all-reduce (software)", boundBandwidth: "bandwidth-bound all-reduce (the bus)", boundNeither: "not the all-reduce"}[k]
			parts = append(parts, fmt.Sprintf("%s at batch %s", what, strings.Join(bs, ", ")))
		}
	}
	return "Decode: " + strings.Join(parts, "; ")
}

// budgetSection is the block's part on where decode time goes.
func (w *Writer) budgetSection(ph *campaign.Phase, fl *record.Floor) string {
	if fl == nil || len(fl.Points) == 0 || fl.Points[0].Budget == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n#### Where decode time goes\n\n")
	if fl.Verdict != "" {
		fmt.Fprintf(&b, "**%s.**\n\n", cell(fl.Verdict))
	}
	b.WriteString("| Point | Batch | TPOT | Floor | All-reduce | its latency | its bandwidth | Bus GB/s | GEMMs above floor | Rest | Bound |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	var ar *record.AllReduceTerm
	var unknown []string
	for _, pt := range fl.Points {
		bd := pt.Budget
		a, l, bw, bus := "?", "?", "?", "?"
		if t := bd.AllReduce; t != nil && t.Calls == 0 {
			a, l, bw, bus = "0 ms (one GPU)", "—", "—", "—"
			if !slices.Contains(unknown, t.CallsBasis) {
				unknown = append(unknown, t.CallsBasis)
			}
		} else if t != nil {
			a, l, bw, bus = FormatNumber(t.Ms)+" ms", FormatNumber(t.LatencyMs)+" ms", FormatNumber(t.BandwidthMs)+" ms", FormatNumber(t.BusGBs)
			ar = t
		} else if !slices.Contains(unknown, bd.AllReduceUnknown) {
			unknown = append(unknown, bd.AllReduceUnknown)
		}
		rest := FormatNumber(bd.RestMs) + " ms"
		if bd.RestMs < 0 {
			rest = "⚠ " + rest
		}
		gemm := "?"
		if bd.GEMM != nil {
			gemm = FormatNumber(bd.GEMM.Ms) + " ms"
		}
		fmt.Fprintf(&b, "| %s | %d | %s ms | %s ms | %s | %s | %s | %s | %s | %s | %s |\n", cell(pt.Point), pt.Batch, FormatNumber(pt.TPOTms), FormatNumber(pt.FloorMs), a, l, bw, bus, gemm, rest, cell(orDashText(bd.Bound)))
	}
	if name := w.charts[budgetKey(ph.ID)].names[budgetKey(ph.ID)]; name != "" {
		fmt.Fprintf(&b, "\n![%s: where decode time goes](%s)\n", cell(ph.Label()), name)
	}
	b.WriteString("\n")
	for _, pt := range fl.Points {
		fmt.Fprintf(&b, "- %s.\n", cell(pt.Budget.Verdict))
		if t := pt.Budget.Traced; t != nil {
			fmt.Fprintf(&b, "  Traced: `%s`'s capture at batch %d, %s ms of all-reduce kernels a profiler step against %s ms predicted (%+.0f%%)", codeText(t.Phase), pt.Batch, FormatNumber(t.Ms), FormatNumber(pt.Budget.AllReduce.Ms), t.GapPct)
			if t.Words != "" {
				fmt.Fprintf(&b, ". ⚠ Over 20%% apart: %s", cell(t.Words[strings.Index(t.Words, ": ")+2:]))
			}
			b.WriteString(".\n")
		}
		if g := pt.Budget.GEMM; g != nil {
			var shapes []string
			for _, s := range g.Shapes {
				shapes = append(shapes, fmt.Sprintf("%s %d×%d×%d %s µs against %s µs × %d", s.Name, s.M, s.N, s.K, FormatNumber(s.US), FormatNumber(s.FloorUS), s.Calls))
			}
			fmt.Fprintf(&b, "  GEMMs: %s ms a step above their floor: %s", FormatNumber(g.Ms), cell(strings.Join(shapes, "; ")))
			if len(g.Missing) > 0 {
				fmt.Fprintf(&b, "; in the rest, not measured: %s", cell(strings.Join(g.Missing, "; ")))
			}
			b.WriteString(".\n")
		}
		if c := pt.Budget.Captured; c != nil {
			fmt.Fprintf(&b, "  Captured: `%s`'s step at batch %d spans %s ms on the GPU (%+.0f%% of the TPOT), %s ms of it busy: beyond the floor (%s ms) and the all-reduce, %s ms of other GPU work (GEMMs above their floor, attention, the rest of the kernels); %s ms idle between kernels (host, launches)",
				codeText(c.Phase), pt.Batch, FormatNumber(c.StepMs), c.GapPct, FormatNumber(c.BusyMs), FormatNumber(pt.FloorMs), FormatNumber(c.OtherMs), FormatNumber(c.IdleMs))
			if !c.Splits {
				b.WriteString(". ⚠ The capture's step is over 10% from the row's TPOT (the profiler's overhead, or another setting than the row's): its figures stand beside the row, not in its terms")
			}
			b.WriteString(".\n")
		}
	}
	if fl.AllReduce != "" {
		fmt.Fprintf(&b, "\nvLLM's own all-reduce: %s.\n", cell(fl.AllReduce))
	}
	if ar != nil {
		fmt.Fprintf(&b, "\nThe all-reduce: %d calls a step (%s), each a message of %s (at the largest batch: %s), timed on the %d-GPU curve of %s (its GPU count: %s), log-log between its sizes; its latency part is the curve's least time a call at 64 KiB and under, %s µs, its bandwidth part the rest. Bus bandwidth is nccl-tests': the message over the call's time × 2(n−1)/n.\n",
			ar.Calls, cell(ar.CallsBasis), "batch × hidden size × the activations' bytes", cell(ar.MessageBasis), ar.GPUs, ar.Curve, cell(ar.GPUsBasis), FormatNumber(ar.LatencyUS))
	}
	for _, u := range unknown {
		if strings.HasPrefix(u, "one GPU serves") {
			fmt.Fprintf(&b, "\n- The all-reduce's part is none: %s.\n", cell(u))
			continue
		}
		fmt.Fprintf(&b, "\n- The all-reduce's part is not known: %s.\n", cell(u))
	}
	gemmKnown, gemmWhy := false, ""
	for _, pt := range fl.Points {
		if pt.Budget.GEMM != nil {
			gemmKnown = true
		} else if gemmWhy == "" {
			gemmWhy = pt.Budget.GEMMUnknown
		}
	}
	if gemmKnown {
		fmt.Fprintf(&b, "\nThe GEMMs above their floor: each of the model's GEMM shapes (one GPU's shard) that a roofline phase measured at M = the row's batch, its time a call less its bytes over %s GB/s (the floor's bandwidth a GPU), times its calls a step; a shape not measured at that M stays in the rest.\n", FormatNumber(fl.GBs))
	}
	if gemmWhy != "" {
		fmt.Fprintf(&b, "\n- The GEMMs' part is not known apart (\"?\"): %s; a roofline phase of the model's shapes (m, n, k) at the rows' batches measures it.\n", cell(gemmWhy))
	}
	b.WriteString("\nThe rest is what is left of the token's time: host, launches, idle between kernels, attention, and the GEMMs' time above their floor where no roofline measured it, measured apart only where a capture at that batch marks its profiler steps (Captured). A rest below zero (⚠) says the terms add to more than was measured: the floor's bandwidth or the curve's times are not this box's, or the all-reduce overlaps compute.\n")
	return b.String()
}

func orDashText(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// budgetKey is the budget chart's key among the writer's charts.
func budgetKey(phase string) string { return phase + "#budget" }

// updateBudgetChart draws a decode phase's budget as stacked bars over
// the batch (floor, all-reduce latency, all-reduce bandwidth, the rest),
// written again when the budget changed (a curve run after the decode
// phase changes it too).
func (w *Writer) updateBudgetChart(ph *campaign.Phase, p *runner.PhaseState, st *runner.State) (err error) {
	if ph == nil || ph.Floor == nil {
		return nil
	}
	fl := w.floorOf(ph, *p, st)
	key := budgetKey(ph.ID)
	if fl == nil || len(fl.Points) == 0 || fl.Points[0].Budget == nil {
		return nil
	}
	var sig strings.Builder
	for _, pt := range fl.Points {
		fmt.Fprintf(&sig, "%+v;", *pt.Budget)
	}
	if c, ok := w.charts[key]; ok && c.sig == sig.String() {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("drawing the decode budget failed: %v", r)
		}
	}()
	svg, err := budgetChart(ph, fl)
	if err != nil || svg == nil {
		return err
	}
	name := chartName(w.path, ph.ID, "budget")
	if err := files.WriteAtomic(filepath.Join(filepath.Dir(w.path), name), svg); err != nil {
		return err
	}
	w.charts[key] = charted{sig: sig.String(), names: map[string]string{key: name}}
	return nil
}

// budgetChart is the stacked bars: one a point, in the block's order.
func budgetChart(ph *campaign.Phase, fl *record.Floor) ([]byte, error) {
	n := len(fl.Points)
	parts := []struct {
		name string
		of   func(b *record.Budget) float64
	}{
		{"floor: bytes / bandwidth", func(b *record.Budget) float64 { return b.FloorMs }},
		{"all-reduce latency", func(b *record.Budget) float64 {
			if b.AllReduce == nil {
				return 0
			}
			return b.AllReduce.LatencyMs
		}},
		{"all-reduce bandwidth", func(b *record.Budget) float64 {
			if b.AllReduce == nil {
				return 0
			}
			return b.AllReduce.BandwidthMs
		}},
		{"GEMMs over floor (roofline)", func(b *record.Budget) float64 {
			if b.GEMM == nil {
				return 0
			}
			return max(b.GEMM.Ms, 0)
		}},
		{"other GPU work (captured)", func(b *record.Budget) float64 {
			if b.Captured == nil || !b.Captured.Splits {
				return 0
			}
			return max(b.Captured.OtherMs, 0)
		}},
		{"GPU idle (captured)", func(b *record.Budget) float64 {
			if b.Captured == nil || !b.Captured.Splits {
				return 0
			}
			return max(b.Captured.IdleMs, 0)
		}},
		{"the rest, not apart", func(b *record.Budget) float64 {
			if c := b.Captured; c != nil && c.Splits {
				return max(b.RestMs-max(c.OtherMs, 0)-max(c.IdleMs, 0), 0)
			}
			return max(b.RestMs, 0)
		}},
	}
	pl := plot.New()
	pl.BackgroundColor = color.White
	pl.Title.Text = fmt.Sprintf("%s: where a decode step's time goes", ph.Label()) // svgOf wraps it
	pl.Y.Label.Text = "ms per output token"
	var names []string
	for _, pt := range fl.Points {
		names = append(names, fmt.Sprintf("batch %d", pt.Batch))
	}
	pl.NominalX(names...)
	grid := plotter.NewGrid() // under the bars, across only
	grid.Vertical.Width = 0
	pl.Add(grid)
	w := vg.Points(max(8, 200/float64(n)))
	var below *plotter.BarChart
	for i, part := range parts {
		vals := make(plotter.Values, n)
		for j, pt := range fl.Points {
			vals[j] = part.of(pt.Budget)
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, err
		}
		bars.Color, bars.LineStyle.Width = plotColor(i), 0
		if below != nil {
			bars.StackOn(below)
		}
		pl.Add(bars)
		pl.Legend.Add(part.name, bars)
		below = bars
	}
	pl.Legend.Top, pl.Legend.Left = true, true
	return svgOf(pl)
}

// keyBudget is a decode phase's verdict beside its key result in the
// header: which batches each bound holds at.
func (w *Writer) keyBudget(p runner.PhaseState, st *runner.State) string {
	ph := w.plan.Phase(p.ID)
	if ph == nil || ph.Floor == nil {
		return ""
	}
	if fl := w.floorOf(ph, p, st); fl != nil && fl.Verdict != "" {
		return fl.Verdict
	}
	return ""
}

// capturesByBatch are the captures on the server a decode phase uses,
// by the batch their rows ran at (max_concurrency, concurrency or batch,
// one value in all their rows): each one's all-reduce kernels a profiler
// step, the mean over its ranks.
// captured is a capture at one batch: its all-reduce a step, where its
// trace has all-reduce kernels and steps, and its step's span and busy
// time, where its trace marks steps.
type captured struct {
	ar      *record.TracedAllReduce
	step    *record.CapturedStep
	stepErr string // why no step is told
}

func (w *Writer) capturesByBatch(ph *campaign.Phase, st *runner.State) map[int]captured {
	out := map[int]captured{}
	if st == nil || w.traces == nil {
		return out
	}
	served := map[string]bool{}
	for _, n := range w.plan.UsedPhases(ph.ID) {
		if s := w.plan.Phase(n); s != nil && s.Service != nil {
			served[n] = true
		}
	}
	for _, q := range st.Phases {
		shared := false
		for _, n := range w.plan.UsedPhases(q.ID) {
			shared = shared || served[n]
		}
		if q.ID == ph.ID || !shared {
			continue
		}
		batch := -1
		for _, s := range q.Steps {
			for _, row := range s.Results {
				v := rowValues(row)
				f := 0.0
				for _, c := range []string{"max_concurrency", "concurrency", "batch", "batch_size"} {
					if x, ok := v[c].(float64); ok && x > 0 && f == 0 {
						f = x
					}
				}
				switch {
				case f == 0:
				case batch == -1:
					batch = int(f)
				case batch != int(f):
					batch = -2 // rows at several batches: not one setting
				}
			}
		}
		if batch <= 0 {
			continue
		}
		sums, _ := w.traces.phase(q)
		var c captured
		if ms, ok := tracedAllReduce(sums).perStepMs(); ok {
			c.ar = &record.TracedAllReduce{Phase: q.ID, Ms: ms}
		}
		c.step, c.stepErr = capturedStep(q.ID, sums)
		if c.ar != nil || c.step != nil || c.stepErr != "" {
			out[batch] = c
		}
	}
	return out
}

// capturedStep is a capture's decode step: the median profiler step's
// span on the GPU's timeline and the GPU's busy time a step (the union of
// its activity over the steps the trace holds), the mean over the ranks
// whose trace marks steps there; nil with why where none does.
func capturedStep(phase string, sums []*trace.Summary) (*record.CapturedStep, string) {
	if len(sums) == 0 {
		return nil, ""
	}
	c := &record.CapturedStep{Phase: phase}
	host := 0
	for _, s := range sums {
		if s.Steps == 0 || s.StepUS <= 0 || s.WindowUS <= 0 {
			continue
		}
		if s.StepBasis != "GPU" {
			host++
			continue
		}
		c.Ranks++
		c.StepMs += s.StepUS / 1000
		c.BusyMs += min(s.BusyUS/float64(s.Steps), s.StepUS) / 1000
	}
	if c.Ranks == 0 {
		if host > 0 {
			return nil, fmt.Sprintf("the capture %s's steps are timed on the host only (the profiler's overhead in them): the rest is not split", phase)
		}
		return nil, fmt.Sprintf("the capture %s marks no profiler steps (vLLM's server profiler marks none): the rest is not split by it", phase)
	}
	c.StepMs /= float64(c.Ranks)
	c.BusyMs /= float64(c.Ranks)
	c.IdleMs = c.StepMs - c.BusyMs
	return c, ""
}
