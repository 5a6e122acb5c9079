package report

// Decode against its floor: a decode phase's time per output token beside
// the least a step can take, the bytes the model's config.json says one
// step reads at that batch (internal/decodefloor) over the GPUs' memory
// bandwidth. Said term by term, so the byte model can be checked.

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/greenlight-run/greenlight/internal/decodefloor"
	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// floorOf is a decode phase's points against their floor (and each
// one's budget), the record's, the block's, the chart's and the header's
// alike; nil without floor: or without a row. Worked out once a write
// (Write forgets the last one's): every reader of one write reads the
// same.
func (w *Writer) floorOf(ph *campaign.Phase, p runner.PhaseState, st *runner.State) *record.Floor {
	if ph.Floor == nil {
		return nil
	}
	if st == nil || w.floors.st != st {
		w.floors.st, w.floors.of = st, map[string]*record.Floor{}
	}
	if fl, ok := w.floors.of[ph.ID]; ok {
		return fl
	}
	fl := w.workFloor(ph, p, st)
	w.floors.of[ph.ID] = fl
	return fl
}

// workFloor works a decode phase's floor out from its rows (floorOf).
func (w *Writer) workFloor(ph *campaign.Phase, p runner.PhaseState, st *runner.State) *record.Floor {
	f := ph.Floor
	if f == nil {
		return nil
	}
	out := &record.Floor{Model: w.plan.Rel(f.Model), GPUs: f.GPUs}
	type acc struct {
		point                 string
		runs                  int
		batch, context, tpotS float64
	}
	var pts []*acc
	var errs []string
	units := ph.AllSteps()
	for i, s := range p.Steps {
		point := stepPoint(ph, units, i, s)
		axes := unitVars(ph, units, i)
		for _, row := range s.Results {
			vals := campaign.With(rowNumbers(row), axes)
			b, e1 := f.Batch.Eval(vals)
			c, e2 := f.Context.Eval(vals)
			t, e3 := f.TPOT.Eval(vals)
			if e := errorsOf(e1, e2, e3); e != "" {
				if !slices.Contains(errs, e) {
					errs = append(errs, e)
				}
				continue
			}
			k := slices.IndexFunc(pts, func(a *acc) bool { return a.point == point })
			if k < 0 {
				pts = append(pts, &acc{point: point})
				k = len(pts) - 1
			}
			a := pts[k]
			n := float64(a.runs)
			a.batch, a.context, a.tpotS = (a.batch*n+b)/(n+1), (a.context*n+c)/(n+1), (a.tpotS*n+t)/(n+1)
			a.runs++
		}
	}
	if len(pts) == 0 && len(errs) == 0 {
		return nil
	}
	if len(errs) > 0 {
		out.Unknown = strings.Join(errs, "; ")
	}
	if f.Model == "" {
		out.Unknown = fmt.Sprintf("the model's folder is %s, and a variable in it was unset when the campaign was read", f.Unset)
		return out
	}
	cfg, err := w.modelConfig(f.Model)
	if err != nil {
		out.Unknown = fmt.Sprintf("the model's config.json could not be read: %v", err)
		return out
	}
	board, why, ok := w.board(ph)
	if !ok {
		out.Unknown = why
		return out
	}
	// A floor is a least time: its bandwidth is the most the box can
	// move, the best point of the bandwidth test floor: bandwidth: names,
	// else the board's spec; never what a GEMM achieved.
	out.Board, out.GBs, out.Basis = board.Key, board.MemGBs, "the board's spec"
	if f.Bandwidth != "" && st != nil {
		out.Basis = fmt.Sprintf("the board's spec: %s, which floor: bandwidth: names, has measured no point yet", f.Bandwidth)
		for _, q := range st.Phases {
			qph := w.plan.Phase(q.ID)
			if q.ID != f.Bandwidth || qph == nil || qph.Roofline == nil {
				continue
			}
			best := 0.0
			if rl, _ := w.rooflineOf(qph, q, nil); rl != nil {
				for _, pt := range rl.Points {
					if pt.GBs > best {
						best = pt.GBs
						out.GBs, out.Basis = pt.GBs, fmt.Sprintf("measured: %s's best point, %s", q.ID, pt.Point)
					}
				}
			}
			if best > board.MemGBs*1.02 {
				out.Basis += fmt.Sprintf("; ⚠ above the board's spec, %s GB/s: suspect (a copy that hit a cache, or bytes counted twice?)", FormatNumber(board.MemGBs))
			}
		}
	}
	bw := out.GBs * 1e9 * float64(f.GPUs)
	maxAt := -1
	for i, a := range pts {
		batch, ctx := int(math.Round(a.batch)), int(math.Round(a.context))
		st := cfg.StepAt(max(batch, 1), max(ctx, 0))
		floorMs := st.Floor(bw) * 1000
		fp := record.FloorPoint{Point: a.point, Runs: a.runs, Batch: batch, Context: ctx, TPOTms: a.tpotS, FloorMs: floorMs}
		if a.tpotS > 0 {
			fp.Pct = 100 * floorMs / a.tpotS
		}
		out.Points = append(out.Points, fp)
		if maxAt < 0 || batch > out.Points[maxAt].Batch {
			maxAt = i
		}
	}
	w.budgetOf(ph, out, cfg, st)
	if maxAt >= 0 {
		top := out.Points[maxAt]
		out.Batch, out.Context = top.Batch, top.Context
		for _, t := range cfg.StepAt(max(top.Batch, 1), top.Context).Terms {
			out.Terms = append(out.Terms, record.FloorTerm{Name: t.Name, GB: t.Bytes / 1e9, How: t.How})
		}
	}
	return out
}

// floorSection is a decode phase's block against its floor.
func (w *Writer) floorSection(ph *campaign.Phase, p runner.PhaseState, st *runner.State) string {
	fl := w.floorOf(ph, p, st)
	if fl == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n### Decode against its floor\n\n")
	if len(fl.Points) == 0 || fl.Board == "" {
		fmt.Fprintf(&b, "No floor: %s.\n", cell(fl.Unknown))
		return b.String()
	}
	fmt.Fprintf(&b, "The least a decode step can take: the bytes `%s`'s config.json says one step reads, over %d × %s GB/s (%s, %s)", codeText(fl.Model), fl.GPUs, FormatNumber(fl.GBs), fl.Board, cell(fl.Basis))
	if inf := ph.Floor.Inferred; inf != "" {
		fmt.Fprintf(&b, "; %s", inf)
	}
	b.WriteString(".\n\n| Point | Runs | Batch | Context | TPOT | Floor | Floor's share |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, pt := range fl.Points {
		share := "—"
		if pt.Pct > 0 {
			share = fmt.Sprintf("%.0f %%", pt.Pct)
			if pt.Pct > 100.5 {
				share = "⚠ " + share + ": under the floor, a broken measurement (or a byte model that does not fit)"
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %s ms | %s ms | %s |\n", cell(pt.Point), pt.Runs, pt.Batch, pt.Context, FormatNumber(pt.TPOTms), FormatNumber(pt.FloorMs), share)
	}
	if len(fl.Terms) > 0 {
		fmt.Fprintf(&b, "\nThe byte model at batch %d, %d tokens of context (all GPUs together):\n\n| Term | GB | How |\n|---|---:|---|\n", fl.Batch, fl.Context)
		total := 0.0
		for _, t := range fl.Terms {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", cell(t.Name), FormatNumber(t.GB), cell(t.How))
			total += t.GB
		}
		fmt.Fprintf(&b, "| total | %s | a step reads each once; the experts touched taken as uniformly routed |\n", FormatNumber(total))
	}
	if fl.Unknown != "" {
		fmt.Fprintf(&b, "\n- %s\n", cell(fl.Unknown))
	}
	b.WriteString(w.budgetSection(ph, fl))
	return b.String()
}

// modelConfig is a model folder's config.json, read once a writer (the
// block and the record render it at every write).
func (w *Writer) modelConfig(dir string) (decodefloor.Config, error) {
	if c, ok := w.configs[dir]; ok {
		return c, nil
	}
	c, err := decodefloor.Read(dir)
	if err == nil {
		if w.configs == nil {
			w.configs = map[string]decodefloor.Config{}
		}
		w.configs[dir] = c
	}
	return c, err
}
