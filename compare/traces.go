package compare

// Which kernels changed: two sets of captures of one workload (a capture
// phase's repeats in two campaigns, or two folders of traces), family by
// family. Each capture is one sample of a family's time per step (per
// capture where the traces mark no steps); the change is the difference
// of the means with its 95% interval (Welch), and the verdict is judged
// against the spread the captures themselves show, corrected for the
// number of families looked at (Holm), so that comparing a build with
// itself flags next to nothing. A family on one side only is new or gone.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/greenlight-run/greenlight/internal/safe"
	"github.com/greenlight-run/greenlight/trace"
)

// Trace verdicts beyond the metrics' ones.
const (
	New  Verdict = "new"  // on the new side only
	Gone Verdict = "gone" // on the old side only
	Raw  Verdict = "raw difference (one capture a side: no interval)"
)

// FamilyChange is one kernel family, old against new, in ms per step (or
// per capture).
type FamilyChange struct {
	Kind, Name     string
	Old, New       Stat    // ms per step, across the captures
	CallsOld       float64 // launches per step, the mean across the captures
	CallsNew       float64
	Delta          float64 // New.Mean - Old.Mean, ms
	Lo, Hi         float64 // Delta's 95% interval; NaN without one
	P              float64 // Welch's p; NaN when not tested
	Verdict        Verdict
	Share          float64 // the old side's share of the kernel time (the new side's for a new family)
	NotInEveryOne  bool    // absent from some captures of a side: counted as 0 there
	Full           string  // a kernel's whole name, where its captures kept it
	CorrectedAlpha float64 // the level Holm's step gave its test
}

// TraceDiff is two sets of captures compared.
type TraceDiff struct {
	OldName, NewName string
	OldN, NewN       int    // captures on each side
	Per              string // "step" where both sides mark steps, else "capture"
	// Step is the whole step's host time (or, per capture, the kernel
	// time), and Kernels the kernel and memory time: what the families'
	// changes add up to.
	Step, Kernels FamilyChange
	Families      []FamilyChange // categories, then kernels; each by the size of its change
	Unexplained   float64        // Step.Delta less the categories' changes, ms
	Notes         []string
}

// traceAlpha is the family-wise level of the verdicts: at most this
// chance, for a workload that did not change, of any family flagged.
const traceAlpha = 0.05

// traceFloor is the smallest change flagged, a share of the family's
// time: two processes of one build differ by a few tenths of a percent
// in a kernel's time (where the allocator put a buffer, the clock it
// ran at), beyond the captures' own spread but not a change of the
// build (measured on an H100: scripts/capture-diff.py, README).
const traceFloor = 0.01

// DiffCaptures compares old and new captures. Families are judged in two
// sets, the categories and the kernels, each with Holm's correction.
func DiffCaptures(oldName string, old []trace.Capture, newName string, new []trace.Capture) TraceDiff {
	var notes []string
	// A capture read only in part (a trace cut short) is no sample like
	// the others: its steps' rates and its spread are of a part. It is
	// left out of its side where a whole capture stands beside it, and said.
	old, new = wholeCaptures(old, "the old side", &notes), wholeCaptures(new, "the new side", &notes)
	named := trace.NameKernels(old, new)
	old, new = named[0], named[1]
	full := fullNames(old, new)
	d := TraceDiff{OldName: oldName, NewName: newName, OldN: len(old), NewN: len(new), Per: "capture", Notes: notes}
	perStep := len(old) > 0 && len(new) > 0 && !slices.ContainsFunc(append(slices.Clone(old), new...), func(c trace.Capture) bool { return c.Steps <= 0 })
	if perStep {
		d.Per = "step"
		basis := "on the GPU's timeline (its kernels and the idle between them)"
		if slices.ContainsFunc(append(slices.Clone(old), new...), func(c trace.Capture) bool { return c.StepBasis != "GPU" }) {
			basis = "on the host (a profiler's own overhead is in it)"
		}
		d.Notes = append(d.Notes, "a step is the median profiler step's span "+basis+", the mean over the captures")
	} else if len(old) > 0 && len(new) > 0 {
		d.Notes = append(d.Notes, "the traces mark no profiler steps (prof.step()): the figures are per capture, comparable only where each capture ran the same work")
	}
	// per is a capture's figure per step (per capture where steps are
	// not marked): µs to ms, launches as they are.
	per := func(c trace.Capture, v float64) float64 {
		if perStep {
			return v / c.Steps
		}
		return v
	}
	ms := func(c trace.Capture, us float64) float64 { return per(c, us) / 1000 }
	// The whole: the step's host time (or the capture's kernel time).
	whole := func(c trace.Capture) float64 {
		if perStep {
			return c.StepUS / 1000 // already a step's
		}
		return ms(c, c.KernelUS)
	}
	d.Step = change("", "step", mapCaps(old, whole), mapCaps(new, whole), 0, 0)
	d.Kernels = change("", "kernels", mapCaps(old, func(c trace.Capture) float64 { return ms(c, c.KernelUS) }),
		mapCaps(new, func(c trace.Capture) float64 { return ms(c, c.KernelUS) }), 0, 0)
	if !perStep {
		d.Step.Name = "kernels"
	}
	oldKernel := mean(mapCaps(old, func(c trace.Capture) float64 { return ms(c, c.KernelUS) }))
	newKernel := mean(mapCaps(new, func(c trace.Capture) float64 { return ms(c, c.KernelUS) }))
	for _, kind := range []string{trace.FamilyCategory, trace.FamilyKernel} {
		var set []FamilyChange
		for _, name := range familyNames(kind, old, new) {
			xs, cOld, inAllOld := familyValues(kind, name, old, per)
			ys, cNew, inAllNew := familyValues(kind, name, new, per)
			f := change(kind, name, xs, ys, cOld, cNew)
			f.Full = full[name]
			f.NotInEveryOne = !inAllOld && f.Old.Mean > 0 || !inAllNew && f.New.Mean > 0
			switch {
			case f.Old.Mean == 0 && f.New.Mean > 0:
				f.Verdict = New
			case f.New.Mean == 0 && f.Old.Mean > 0:
				f.Verdict = Gone
			}
			if oldKernel > 0 && f.Verdict != New {
				f.Share = f.Old.Mean / oldKernel
			} else if newKernel > 0 {
				f.Share = f.New.Mean / newKernel
			}
			set = append(set, f)
		}
		holm(set)
		slices.SortStableFunc(set, func(a, b FamilyChange) int {
			return cmp.Or(cmp.Compare(rankOf(a.Verdict), rankOf(b.Verdict)), cmp.Compare(math.Abs(b.Delta), math.Abs(a.Delta)), strings.Compare(a.Name, b.Name))
		})
		if kind == trace.FamilyCategory {
			sum := 0.0
			for _, f := range set {
				sum += f.Delta
			}
			d.Unexplained = d.Step.Delta - sum
		}
		d.Families = append(d.Families, set...)
	}
	judgeAlone(&d.Step)
	judgeAlone(&d.Kernels)
	if len(old) < 2 || len(new) < 2 {
		d.Notes = append(d.Notes, fmt.Sprintf("%d and %d captures: no interval can be given with one capture a side; the differences are raw (capture each side 3 times or more: `repeat: 3` on the capture phase)", len(old), len(new)))
	}
	return d
}

// wholeCaptures are a side's captures read whole; its cut ones too where
// it has no whole one (their figures then of what was read), each said.
func wholeCaptures(cs []trace.Capture, side string, notes *[]string) []trace.Capture {
	var whole []trace.Capture
	for _, c := range cs {
		if c.Cut == "" {
			whole = append(whole, c)
		}
	}
	for _, c := range cs {
		switch {
		case c.Cut == "":
		case len(whole) > 0:
			*notes = append(*notes, fmt.Sprintf("%s (%s) was read only in part (%s): left out of the comparison, which holds its %d whole capture(s)", c.Name, side, c.Cut, len(whole)))
		default:
			*notes = append(*notes, fmt.Sprintf("%s (%s) was read only in part (%s): every capture of that side is, so its figures are of what was read", c.Name, side, c.Cut))
		}
	}
	if len(whole) == 0 {
		return cs
	}
	return whole
}

func rankOf(v Verdict) int {
	switch v {
	case Worse, Better, New, Gone:
		return 0
	}
	return 1
}

func mapCaps(cs []trace.Capture, f func(trace.Capture) float64) []float64 {
	out := make([]float64, len(cs))
	for i, c := range cs {
		out[i] = f(c)
	}
	return out
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// fullNames are the kernel families' whole names by their short ones.
func fullNames(sides ...[]trace.Capture) map[string]string {
	out := map[string]string{}
	for _, side := range sides {
		for _, c := range side {
			for _, f := range c.Families {
				if f.Kind == trace.FamilyKernel && f.Full != "" {
					out[f.Name] = f.Full
				}
			}
		}
	}
	return out
}

// familyNames are the families of a kind on either side, in no order.
func familyNames(kind string, sides ...[]trace.Capture) []string {
	seen := map[string]bool{}
	var out []string
	for _, side := range sides {
		for _, c := range side {
			for _, f := range c.Families {
				if f.Kind == kind && !seen[f.Name] {
					seen[f.Name] = true
					out = append(out, f.Name)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// familyValues are a family's ms per step in each capture (0 where a
// capture has none of it), its launches per step on average, and whether
// every capture had it; per makes a capture's figure per step.
func familyValues(kind, name string, cs []trace.Capture, per func(trace.Capture, float64) float64) ([]float64, float64, bool) {
	xs := make([]float64, len(cs))
	calls, all := 0.0, true
	for i, c := range cs {
		j := slices.IndexFunc(c.Families, func(f trace.Family) bool { return f.Kind == kind && f.Name == name })
		if j < 0 {
			all = false
			continue
		}
		xs[i] = per(c, c.Families[j].US) / 1000
		calls += per(c, c.Families[j].Calls)
	}
	if len(cs) > 0 {
		calls /= float64(len(cs))
	}
	return xs, calls, all
}

// change is one family's figures, its verdict left to holm.
func change(kind, name string, xs, ys []float64, callsOld, callsNew float64) FamilyChange {
	f := FamilyChange{Kind: kind, Name: name, Old: StatOf(xs), New: StatOf(ys), CallsOld: callsOld, CallsNew: callsNew,
		Lo: math.NaN(), Hi: math.NaN(), P: math.NaN()}
	f.Delta = f.New.Mean - f.Old.Mean
	if f.Old.N >= 2 && f.New.N >= 2 {
		f.Lo, f.Hi = WelchInterval(f.Old, f.New)
		f.P = Welch(f.Old, f.New)
	}
	return f
}

// holm gives each tested family of a set its verdict: Holm's step-down
// correction at traceAlpha over the set, so that the chance of any false
// flag in the set stays under it. A time is better lower.
func holm(set []FamilyChange) {
	var tested []int
	for i, f := range set {
		if f.Verdict != "" {
			continue // new or gone
		}
		if math.IsNaN(f.P) {
			set[i].Verdict = Raw
			if f.Old.N >= 2 && f.New.N >= 2 {
				set[i].Verdict = Noise
			}
			continue
		}
		tested = append(tested, i)
	}
	slices.SortFunc(tested, func(a, b int) int { return cmp.Compare(set[a].P, set[b].P) })
	stop := false
	for k, i := range tested {
		level := traceAlpha / float64(len(tested)-k)
		set[i].CorrectedAlpha = level
		if stop || set[i].P >= level {
			stop = true
			set[i].Verdict = Noise
			continue
		}
		set[i].Verdict = timeVerdict(set[i].Delta)
		if small(set[i]) {
			set[i].Verdict = Noise // beyond the spread, under the floor
		}
	}
}

// small says a change is under traceFloor of the family's time.
func small(f FamilyChange) bool {
	return math.Abs(f.Delta) < traceFloor*math.Max(f.Old.Mean, f.New.Mean)
}

// judgeAlone gives the whole's verdict, one test at traceAlpha.
func judgeAlone(f *FamilyChange) {
	switch {
	case math.IsNaN(f.P):
		f.Verdict = Raw
	case f.P < traceAlpha && !small(*f):
		f.Verdict = timeVerdict(f.Delta)
	default:
		f.Verdict = Noise
	}
}

func timeVerdict(delta float64) Verdict {
	if delta > 0 {
		return Worse
	}
	return Better
}

// Flagged are the families judged worse, better, new or gone.
func (d TraceDiff) Flagged() []FamilyChange {
	var out []FamilyChange
	for _, f := range d.Families {
		if rankOf(f.Verdict) == 0 {
			out = append(out, f)
		}
	}
	return out
}

// ms says a change in ms with its interval: "+3.20 ± 0.50".
func (f FamilyChange) ms() string {
	s := signed(f.Delta)
	if !math.IsNaN(f.Lo) {
		s += " ± " + fmt3(math.Max(f.Hi-f.Delta, f.Delta-f.Lo))
	}
	return s
}

func signed(v float64) string {
	if v >= 0 {
		return "+" + fmt3(v)
	}
	return "−" + fmt3(-v)
}

// fmt3 writes a duration in ms with three significant digits at most.
func fmt3(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	case a >= 0.01:
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// Summary is the diff in one line: the whole's change and each flagged
// category's, added up: "step +4.10 ± 0.80 ms: MoE +3.20 ± 0.50,
// communication +0.900 ± 0.300, unexplained 0".
func (d TraceDiff) Summary() string {
	var parts []string
	for _, f := range d.Families {
		if f.Kind == trace.FamilyCategory && rankOf(f.Verdict) == 0 {
			parts = append(parts, safe.Line(f.Name, 200)+" "+f.ms())
		}
	}
	if len(parts) == 0 {
		parts = []string{"no category beyond noise"}
	}
	parts = append(parts, "unexplained "+signed(d.Unexplained))
	return fmt.Sprintf("%s %s ms per %s (%s): %s", d.Step.Name, d.Step.ms(), d.Per, d.Step.Verdict, strings.Join(parts, ", "))
}

// Markdown is the diff as a block: the summary line, then a table of the
// categories and one of the kernels (the flagged first, at most limit
// kernel rows: 0 for all), and the basis.
func (d TraceDiff) Markdown(limit int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s → %s, %d and %d captures: %s.\n", md(d.OldName), md(d.NewName), d.OldN, d.NewN, md(d.Summary()))
	for _, kind := range []string{trace.FamilyCategory, trace.FamilyKernel} {
		var rows []FamilyChange
		for _, f := range d.Families {
			if f.Kind == kind {
				rows = append(rows, f)
			}
		}
		cut := 0
		if kind == trace.FamilyKernel && limit > 0 && len(rows) > limit {
			cut, rows = len(rows)-limit, rows[:limit]
		}
		if len(rows) == 0 {
			continue
		}
		title := "Category"
		if kind == trace.FamilyKernel {
			title = "Kernel"
		}
		fmt.Fprintf(&b, "\n| %s | Old ms/%s | New ms/%s | Change, ms (95%% interval) | Calls/%s old → new | Share | Verdict |\n|---|---:|---:|---:|---:|---:|---|\n",
			title, d.Per, d.Per, d.Per)
		for _, f := range rows {
			mark := ""
			if f.NotInEveryOne {
				mark = " ¹"
			}
			fmt.Fprintf(&b, "| %s%s | %s | %s | %s | %s → %s | %.1f %% | %s |\n", md(f.Name), mark, fmt3(f.Old.Mean), fmt3(f.New.Mean), f.ms(),
				fmt3(f.CallsOld), fmt3(f.CallsNew), 100*f.Share, f.Verdict)
		}
		if cut > 0 {
			fmt.Fprintf(&b, "\n%d more kernels, each within noise or smaller.\n", cut)
		}
		if kind == trace.FamilyKernel {
			var names []string
			for _, f := range rows {
				if f.Full != "" && f.Full != f.Name {
					names = append(names, fmt.Sprintf("- %s: `%s`", md(f.Name), codeSpan(safe.Line(f.Full, 2000))))
				}
			}
			if len(names) > 0 {
				b.WriteString("\n<details><summary>The kernels' full names</summary>\n\n" + strings.Join(names, "\n") + "\n\n</details>\n")
			}
		}
	}
	fmt.Fprintf(&b, "\nA capture is one sample; a family's change is the difference of its means across the captures, with Welch's 95%% interval. "+
		"A verdict is beyond the spread the captures show, Holm-corrected over the families of a table (at most a %.0f%% chance of any false flag in it), "+
		"and at least %.0f%% of the family's time (two processes of one build differ by a few tenths of a percent). "+
		"Unexplained is the %s's change less the categories': host time, idle gaps, launch overhead. ¹ absent from some captures of a side, counted as 0 there.\n",
		100*traceAlpha, 100*traceFloor, d.Step.Name)
	for _, n := range d.Notes {
		b.WriteString("\n- " + md(n) + "\n")
	}
	return b.String()
}

// codeSpan is text fit for a markdown code span: no backtick closes it.
func codeSpan(s string) string { return strings.ReplaceAll(s, "`", "'") }

// Text is the diff for a terminal: the summary, then the flagged
// families and the largest changes, one a line.
func (d TraceDiff) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s → %s, %d and %d captures\n%s\n", safe.Line(d.OldName, 200), safe.Line(d.NewName, 200), d.OldN, d.NewN, d.Summary())
	shown := 0
	for _, f := range d.Families {
		if rankOf(f.Verdict) != 0 && shown >= 12 {
			continue
		}
		shown++
		fmt.Fprintf(&b, "  %-8s %-40s %9s → %9s ms/%s  %-18s calls %s → %s  %s\n", f.Kind, safe.Line(f.Name, 40), fmt3(f.Old.Mean), fmt3(f.New.Mean), d.Per,
			f.ms(), fmt3(f.CallsOld), fmt3(f.CallsNew), f.Verdict)
	}
	for _, n := range d.Notes {
		b.WriteString("note: " + safe.Line(n, 400) + "\n")
	}
	return b.String()
}
