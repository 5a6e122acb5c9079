package compare

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/greenlight-run/greenlight/record"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/internal/safe"
)

// Header is the comparison's first lines: which two, and the verdicts
// counted.
func (r Result) Header() string {
	c := r.Counts()
	var parts []string
	for _, v := range []Verdict{Better, Worse, Changed, Noise, Same} {
		if c[v] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[v], v))
		}
	}
	if len(parts) == 0 {
		parts = []string{"no metric on both sides"}
	}
	return fmt.Sprintf("%s (%s) → %s (%s): %s", r.Old.Name, when(r.Old), r.New.Name, when(r.New), strings.Join(parts, ", "))
}

// when is a campaign's state and start, which tell apart two runs of one
// campaign file.
func when(c record.Campaign) string {
	if c.Started.IsZero() {
		return c.State
	}
	return c.State + ", started " + c.Started.UTC().Format("2006-01-02 15:04")
}

// Markdown is the comparison as a block of a markdown file; at most
// limit lines of the table (0: all), the better, worse and changed
// first when it must cut.
func (r Result) Markdown(limit int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s.\n", md(r.Header()))
	if len(r.Conditions) > 0 {
		b.WriteString("\n**Conditions that differ** (old → new)\n\n")
		for _, c := range r.Conditions {
			b.WriteString("- " + md(c.String()) + "\n")
		}
	} else {
		b.WriteString("\nThe conditions recorded by both are the same.\n")
	}
	if len(r.During) > 0 {
		b.WriteString("\n**Conditions that changed during a campaign**\n\n")
		for _, c := range r.During {
			b.WriteString("- ⚠ " + md(c) + "\n")
		}
	}
	lines := r.Lines
	cut := 0
	if limit > 0 && len(lines) > limit {
		var first, rest []Line
		for _, l := range lines {
			if l.Verdict == Better || l.Verdict == Worse || l.Verdict == Changed {
				first = append(first, l)
			} else {
				rest = append(rest, l)
			}
		}
		lines = append(first, rest...)[:limit]
		cut = len(r.Lines) - limit
	}
	// A stamp is said once, under the table, and marked in each line it
	// falls on: ⚠1, ⚠2.
	var stamps []string
	if len(lines) > 0 {
		b.WriteString("\n| Phase | Point | Metric | Old | New | Change | Verdict | Basis |\n|---|---|---|---:|---:|---:|---|---|\n")
		for _, l := range lines {
			v := md(string(l.Verdict))
			for _, st := range l.Stamped {
				i := slices.Index(stamps, st)
				if i < 0 {
					i = len(stamps)
					stamps = append(stamps, st)
				}
				v += fmt.Sprintf(" ⚠%d", i+1)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", md(l.Phase), md(l.Point), md(l.Metric),
				statText(l.Old), statText(l.New), changeText(l.Change), v, md(l.Basis))
		}
	}
	if len(stamps) > 0 {
		b.WriteString("\nTaken under bad conditions (the verdicts stand, but doubt them):\n\n")
		for i, st := range stamps {
			fmt.Fprintf(&b, "- ⚠%d %s\n", i+1, md(st))
		}
	}
	if cut > 0 {
		fmt.Fprintf(&b, "\n…and %d more lines within noise or tolerance (`greenlight compare` lists them all).\n", cut)
	}
	if len(r.Missing) > 0 {
		b.WriteString("\n**On one side only**\n\n")
		for _, m := range r.Missing {
			b.WriteString("- " + md(m) + "\n")
		}
	}
	for _, n := range r.Notes {
		b.WriteString("\n" + md(n) + ".\n")
	}
	if len(r.Roofs) > 0 {
		b.WriteString("\n**How close to the roofline** (achieved TFLOP/s; share of the roof at the spec peak, and at the SM clock held)\n\n| Phase | Point | Old | New | Of the spec roof, old → new | At the clock held, old → new |\n|---|---|---:|---:|---:|---:|\n")
		for _, rc := range r.Roofs {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s → %s | %s → %s |\n", md(rc.Phase), md(rc.Old.Point), trim(rc.Old.TFLOPS), trim(rc.New.TFLOPS),
				pctOf(rc.Old.SpecPct), pctOf(rc.New.SpecPct), pctOf(rc.Old.ClockPct), pctOf(rc.New.ClockPct))
		}
	}
	if len(r.Budgets) > 0 {
		b.WriteString("\n**Where decode time went** (ms a token: TPOT, the all-reduce the curve predicts, the rest; old → new)\n\n| Phase | Point | TPOT | All-reduce | Rest | Moved most |\n|---|---|---:|---:|---:|---|\n")
		for _, c := range r.Budgets {
			fmt.Fprintf(&b, "| %s | %s | %s → %s | %s → %s | %s → %s | %s |\n", md(c.Phase), md(c.Point), trim(c.Old.TPOTms), trim(c.New.TPOTms),
				arMs(c.Old), arMs(c.New), trim(c.Old.RestMs), trim(c.New.RestMs), md(orDash(c.Moved())))
		}
	}
	kernels := traceKernelRows
	if limit == 0 {
		kernels = 0 // all of them
	}
	for _, t := range r.Traces {
		fmt.Fprintf(&b, "\n**Which kernels changed in %s**\n\n%s", md(t.Phase), t.Diff.Markdown(kernels))
	}
	return b.String()
}

// traceKernelRows is how many kernels a cut comparison's trace diff
// lists (the flagged first), as the results file's baseline block cuts its
// lines; compare --markdown lists them all.
const traceKernelRows = 15

// Text is the comparison for a terminal: aligned columns, one line each.
func (r Result) Text() string {
	var b strings.Builder
	b.WriteString(line(r.Header()) + "\n")
	if len(r.Conditions) > 0 {
		b.WriteString("\nconditions that differ (old → new):\n")
		for _, c := range r.Conditions {
			b.WriteString("  " + line(c.String()) + "\n")
		}
	}
	for _, c := range r.During {
		b.WriteString("  ⚠ " + line(c) + "\n")
	}
	if len(r.Lines) > 0 {
		rows := [][]string{{"phase", "point", "metric", "old", "new", "change", "verdict", "basis"}}
		for _, l := range r.Lines {
			v := string(l.Verdict)
			if len(l.Stamped) > 0 {
				v += " ⚠"
			}
			rows = append(rows, []string{line(l.Phase), line(l.Point), line(l.Metric), statText(l.Old), statText(l.New), changeText(l.Change), v, l.Basis})
		}
		width := make([]int, len(rows[0]))
		for _, row := range rows {
			for i, c := range row {
				width[i] = max(width[i], len([]rune(c)))
			}
		}
		b.WriteString("\n")
		for _, row := range rows {
			var ln strings.Builder
			for i, c := range row {
				pad := strings.Repeat(" ", width[i]-len([]rune(c)))
				if i >= 3 && i <= 5 {
					ln.WriteString(pad + c) // numbers to the right
				} else {
					ln.WriteString(c + pad)
				}
				ln.WriteString("  ")
			}
			b.WriteString(strings.TrimRight(ln.String(), " ") + "\n")
		}
		for _, l := range r.Lines {
			for _, s := range l.Stamped {
				fmt.Fprintf(&b, "⚠ %s %s %s: %s\n", line(l.Phase), line(l.Point), line(l.Metric), line(s))
			}
		}
	}
	if len(r.Missing) > 0 {
		b.WriteString("\non one side only:\n")
		for _, m := range r.Missing {
			b.WriteString("  " + line(m) + "\n")
		}
	}
	for _, n := range r.Notes {
		b.WriteString("note: " + line(n) + "\n")
	}
	if len(r.Roofs) > 0 {
		b.WriteString("\nhow close to the roofline (share of the roof at the spec peak; at the SM clock held):\n")
		for _, rc := range r.Roofs {
			fmt.Fprintf(&b, "  %s %s: %s → %s TFLOP/s, %s → %s of the spec roof, %s → %s at the clock held\n", line(rc.Phase), line(rc.Old.Point),
				trim(rc.Old.TFLOPS), trim(rc.New.TFLOPS), pctOf(rc.Old.SpecPct), pctOf(rc.New.SpecPct), pctOf(rc.Old.ClockPct), pctOf(rc.New.ClockPct))
		}
	}
	if len(r.Budgets) > 0 {
		b.WriteString("\nwhere decode time went (ms a token, old → new):\n")
		for _, c := range r.Budgets {
			fmt.Fprintf(&b, "  %s %s: TPOT %s → %s, all-reduce %s → %s, rest %s → %s", line(c.Phase), line(c.Point), trim(c.Old.TPOTms), trim(c.New.TPOTms),
				arMs(c.Old), arMs(c.New), trim(c.Old.RestMs), trim(c.New.RestMs))
			if m := c.Moved(); m != "" {
				fmt.Fprintf(&b, "; moved most: %s", m)
			}
			b.WriteString("\n")
		}
	}
	for _, t := range r.Traces {
		fmt.Fprintf(&b, "\nwhich kernels changed in %s: %s", line(t.Phase), t.Diff.Text())
	}
	return b.String()
}

// arMs is a budget's all-reduce term in ms, "?" when it is not known.
func arMs(b record.Budget) string {
	if b.AllReduce == nil {
		return "?"
	}
	return trim(b.AllReduce.Ms)
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// Word is a new value's change against the baseline, as the window says
// it when the value lands: "+4.1% vs bench0, better, beyond noise".
func Word(l Line, baseline string) string {
	return fmt.Sprintf("%s vs %s, %s", changeText(l.Change), baseline, l.meaning())
}

// Short is a change and its meaning, for a table's cell: "+4.1%, better,
// beyond noise".
func Short(l Line) string { return changeText(l.Change) + ", " + l.meaning() }

// meaning is the verdict with its basis: noise where a spread judged
// (Welch's test, or a prediction interval), the tolerance where none was
// known.
func (l Line) meaning() string {
	beyond := "beyond noise"
	if l.ByTolerance {
		beyond = "beyond the tolerance"
	}
	switch l.Verdict {
	case Better, Worse:
		if l.Way != "" { // the way it improves, from its name: said
			return fmt.Sprintf("%s (%s is better, %s), %s", l.Verdict, wayWord(l), l.Way, beyond)
		}
		return string(l.Verdict) + ", " + beyond
	case Changed:
		return beyond
	}
	return string(l.Verdict)
}

// statText is a side's mean ± its standard deviation, both to the
// deviation's second significant digit: "0.012770 ± 0.000058 (n=3)".
func statText(s Stat) string {
	if s.N == 0 {
		return "—"
	}
	if s.N == 1 || s.SD == 0 || math.IsNaN(s.SD) {
		v := format.Number(s.Mean)
		if s.N > 1 {
			v += " ± 0 (n=" + strconv.Itoa(s.N) + ")"
		}
		return v
	}
	d := max(0, 1-int(math.Floor(math.Log10(s.SD))))
	return strconv.FormatFloat(s.Mean, 'f', d, 64) + " ± " + strconv.FormatFloat(s.SD, 'f', d, 64) + " (n=" + strconv.Itoa(s.N) + ")"
}

func changeText(c float64) string {
	if math.IsNaN(c) {
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", c*100)
}

// md makes untrusted text safe in a markdown table cell or list item.
func md(s string) string {
	s = safe.Line(s, safe.CSV)
	s = strings.ReplaceAll(s, "\\", "\\\\")
	s = strings.ReplaceAll(s, "|", "\\|")
	var b strings.Builder
	for i := 0; i < len(s); i++ { // a "<" that could open a tag: "p < 0.001" stays
		if c := s[i]; c == '<' && i+1 < len(s) && (s[i+1] == '!' || s[i+1] == '/' || s[i+1] == '?' || s[i+1] >= 'a' && s[i+1] <= 'z' || s[i+1] >= 'A' && s[i+1] <= 'Z') {
			b.WriteString("&lt;")
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func line(s string) string { return safe.Line(s, safe.CSV) }

// wayWord is "higher" or "lower": the way a line's metric improves, as its
// verdict took it.
func wayWord(l Line) string {
	if (l.Verdict == Better) == (l.Change > 0) {
		return "higher"
	}
	return "lower"
}

// pctOf is a share of a roof, "—" when not known; above 100% marked: a
// broken measurement.
func pctOf(v float64) string {
	switch {
	case v <= 0:
		return "—"
	case v > 100.5:
		return fmt.Sprintf("⚠ %.0f%%", v)
	}
	return fmt.Sprintf("%.0f%%", v)
}
