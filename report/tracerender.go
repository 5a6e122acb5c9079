package report

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/greenlight-run/greenlight/internal/files"
	"github.com/greenlight-run/greenlight/runner/campaign"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/internal/safe"
	"github.com/greenlight-run/greenlight/trace"
)

// us is a time in microseconds as a table shows it, its unit said.
func us(v float64) string {
	switch {
	case v < 1000:
		return fmt.Sprintf("%.1f µs", v)
	case v < 1e6:
		return fmt.Sprintf("%.3f ms", v/1e3)
	}
	return fmt.Sprintf("%.3f s", v/1e6)
}

func pct(part, whole float64) string {
	if whole <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f %%", 100*part/whole)
}

// kernelsCSV is the CSV beside the results file with each rank's top
// kernels under their full names.
func kernelsCSV(report, phase string) string {
	return strings.TrimSuffix(csvName(report, phase), ".csv") + ".kernels.csv"
}

// tracesSection renders "where the GPU time went" for a phase's traces.
func tracesSection(sums []*trace.Summary, notes []string, rules *trace.Rules, links []string, kcsv string) string {
	if len(sums) == 0 && len(notes) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n### Where the GPU time went\n\n")
	for _, n := range notes {
		fmt.Fprintf(&b, "- %s\n", safeCell(n))
	}
	if len(notes) > 0 {
		b.WriteString("\n")
	}
	if len(sums) == 0 {
		return b.String()
	}
	var ranks []string
	for _, s := range sums {
		ranks = append(ranks, s.Rank)
	}
	if h := headline(sums); h != "" {
		b.WriteString("**" + cell(h) + "**\n\n")
	}
	fmt.Fprintf(&b, "From %s (%s): GPU time as the profiler recorded it; busy is the union of all kernels and copies over the window from the first to the last.\n\n",
		format.Count(len(sums), "trace"), cell(strings.Join(ranks, ", ")))
	b.WriteString("| Rank | GPU kernel time | Kernels | Memcpy/memset | GPU busy | Traced window | Idle on the busiest stream | Largest gaps there |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, s := range sums {
		idle, gaps := "n/a", ""
		if len(s.Streams) > 0 {
			st := s.Streams[0]
			where := "stream " + st.ID
			if dev, stream, ok := strings.Cut(st.ID, "/"); ok {
				where = "device " + dev + ", stream " + stream // a stream is a device's
			}
			idle = fmt.Sprintf("%s (%s)", us(st.GapUS), cell(where))
			var gs []string
			for _, g := range st.Gaps {
				gs = append(gs, fmt.Sprintf("%s at +%s", us(g.DurUS), us(g.AtUS)))
			}
			gaps = strings.Join(gs, "; ")
		}
		busy, window := "n/a", "n/a"
		if s.WindowUS > 0 {
			busy = fmt.Sprintf("%s (%s)", us(s.BusyUS), pct(s.BusyUS, s.WindowUS))
			window = us(s.WindowUS)
		}
		rank := cell(s.Rank)
		if s.Err != "" {
			rank += " ⚠"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s |\n", rank, us(s.KernelUS), s.Kernels, us(s.MemoryUS), busy, window, idle, gaps)
	}
	for _, s := range sums {
		if s.Err != "" {
			fmt.Fprintf(&b, "\n⚠ %s: %s: the figures are from what could be read.\n", cell(s.Rank), safeCell(s.Err))
		}
		if s.Late > 0 {
			fmt.Fprintf(&b, "\n⚠ %s: %d activities came out of time order by more than the reader's window (65,536 per stream): its busy time and gaps are approximate.\n", cell(s.Rank), s.Late)
		}
	}
	if len(sums) > 1 {
		lo, hi := sums[0], sums[0]
		for _, s := range sums[1:] {
			if s.KernelUS < lo.KernelUS {
				lo = s
			}
			if s.KernelUS > hi.KernelUS {
				hi = s
			}
		}
		ratio := "n/a"
		if lo.KernelUS > 0 {
			ratio = fmt.Sprintf("%.2f", hi.KernelUS/lo.KernelUS)
		}
		fmt.Fprintf(&b, "\nAcross ranks: GPU kernel time %s to %s (max/min %s); the most loaded is %s, the least %s.\n",
			us(lo.KernelUS), us(hi.KernelUS), ratio, cell(hi.Rank), cell(lo.Rank))
	}
	// By category, one column per rank (eight at most; more are summed).
	shown := sums
	if len(shown) > 8 {
		shown = nil
	}
	b.WriteString("\n**By category** (share of each rank's GPU time in kernels, memcpy and memset)\n\n| Category |")
	if shown == nil {
		fmt.Fprintf(&b, " all %d ranks |\n|---|---:|\n", len(sums))
	} else {
		for _, s := range shown {
			fmt.Fprintf(&b, " %s |", cell(s.Rank))
		}
		b.WriteString("\n|---|" + strings.Repeat("---:|", len(shown)) + "\n")
	}
	for _, name := range rules.Names() {
		row := "| " + cell(name) + " |"
		any := false
		cols := shown
		if cols == nil {
			cols = []*trace.Summary{merged(sums)}
		}
		for _, s := range cols {
			var t float64
			for _, c := range s.Cats {
				if c.Name == name {
					t, any = c.TotalUS, true
				}
			}
			row += fmt.Sprintf(" %s (%s) |", us(t), pct(t, s.KernelUS+s.MemoryUS))
		}
		if any {
			b.WriteString(row + "\n")
		}
	}
	// The top kernels of all ranks together.
	type agg struct {
		k   trace.Kernel
		per []float64
	}
	byName := map[string]*agg{}
	var total float64
	for _, s := range sums {
		total += s.KernelUS
		for _, k := range s.Top {
			a := byName[k.Name]
			if a == nil {
				a = &agg{k: trace.Kernel{Name: k.Name, Short: k.Short, Cat: k.Cat}}
				byName[k.Name] = a
			}
			a.k.Count += k.Count
			a.k.TotalUS += k.TotalUS
			a.per = append(a.per, k.TotalUS)
		}
	}
	list := make([]*agg, 0, len(byName))
	for _, a := range byName {
		list = append(list, a)
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].k.TotalUS != list[j].k.TotalUS {
			return list[i].k.TotalUS > list[j].k.TotalUS
		}
		return list[i].k.Name < list[j].k.Name
	})
	top := len(sums[0].Top)
	if len(list) > top {
		list = list[:top]
	}
	where := "all ranks"
	if len(sums) == 1 {
		where = sums[0].Rank
	}
	full := ""
	if kcsv != "" {
		full = fmt.Sprintf("; full names in [%s](%s)", kcsv, kcsv)
	}
	fmt.Fprintf(&b, "\n**Top kernels** (%s; from each rank's top %d%s)\n\n", cell(where), top, full)
	b.WriteString("| Kernel | Category | Launches | Total | Mean | % of kernel time |")
	if len(sums) > 1 {
		b.WriteString(" Per rank, min to max |")
	}
	b.WriteString("\n|---|---|---:|---:|---:|---:|")
	if len(sums) > 1 {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, a := range list {
		mean := 0.0
		if a.k.Count > 0 {
			mean = a.k.TotalUS / float64(a.k.Count)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %d | %s | %s | %s |", codeSafe(a.k.Short), cell(a.k.Cat), a.k.Count, us(a.k.TotalUS), us(mean), pct(a.k.TotalUS, total))
		if len(sums) > 1 {
			lo, hi := math.Inf(1), 0.0
			for _, v := range a.per {
				lo, hi = min(lo, v), max(hi, v)
			}
			if len(a.per) < len(sums) {
				fmt.Fprintf(&b, " up to %s (not in every rank's top) |", us(hi))
			} else {
				fmt.Fprintf(&b, " %s to %s |", us(lo), us(hi))
			}
		}
		b.WriteString("\n")
	}
	var parts []string
	for _, r := range rules.List() {
		parts = append(parts, fmt.Sprintf("%s `%s`", cell(r.Name), codeText(r.Pattern)))
	}
	fmt.Fprintf(&b, "\nCategories by kernel name, first match wins, case-insensitive (change them with `traces: {categories: {NAME: REGEX}}` in the campaign file): %s; memcpy and memset activity is memory; the rest other.\n",
		strings.Join(parts, " · "))
	if len(links) > 0 {
		b.WriteString("\nThe profiler's own tables: ")
		for i, l := range links {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "[%s](%s)", cell(filepath.Base(l)), l)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// merged is every rank's categories summed, for many ranks.
func merged(sums []*trace.Summary) *trace.Summary {
	m := &trace.Summary{}
	idx := map[string]int{}
	for _, s := range sums {
		m.KernelUS += s.KernelUS
		m.MemoryUS += s.MemoryUS
		for _, c := range s.Cats {
			i, ok := idx[c.Name]
			if !ok {
				i = len(m.Cats)
				idx[c.Name] = i
				m.Cats = append(m.Cats, trace.Cat{Name: c.Name})
			}
			m.Cats[i].Count += c.Count
			m.Cats[i].TotalUS += c.TotalUS
		}
	}
	return m
}

// codeSafe keeps a value whole inside backticks in a table cell.
func codeSafe(s string) string {
	return strings.ReplaceAll(codeText(s), "|", "\\|")
}

// codeText keeps a value whole inside backticks in running text.
func codeText(s string) string {
	return strings.NewReplacer("`", "'", "\n", " ").Replace(safe.Line(s, safe.CSV))
}

func safeCell(s string) string { return strings.ReplaceAll(cell(s), "\n", " ") }

// writeKernelsCSV writes each rank's top kernels with their full names.
func writeKernelsCSV(path string, sums []*trace.Summary) error {
	var b strings.Builder
	w := csv.NewWriter(&b)
	w.Write([]string{"rank", "kernel", "short", "category", "launches", "total_us", "mean_us", "pct_of_kernel_time"})
	for _, s := range sums {
		for _, k := range s.Top {
			mean := 0.0
			if k.Count > 0 {
				mean = k.TotalUS / float64(k.Count)
			}
			p := 0.0
			if s.KernelUS > 0 {
				p = 100 * k.TotalUS / s.KernelUS
			}
			w.Write([]string{s.Rank, safe.Text(k.Name, safe.CSV), k.Short, k.Cat, fmt.Sprint(k.Count), fmt.Sprintf("%.3f", k.TotalUS), fmt.Sprintf("%.3f", mean), fmt.Sprintf("%.2f", p)})
		}
		if s.Other.Count > 0 {
			w.Write([]string{s.Rank, "(the other kernels)", "", "", fmt.Sprint(s.Other.Count), fmt.Sprintf("%.3f", s.Other.TotalUS), "", ""})
		}
	}
	w.Flush()
	if old, err := os.ReadFile(path); err == nil && string(old) == b.String() {
		return nil
	}
	return files.WriteAtomic(path, []byte(b.String()))
}

// profilerTables are vLLM's key_averages tables (profiler_out_N.txt)
// beside the traces, as links relative to the results file.
func profilerTables(reportDir string, sums []*trace.Summary, base string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range sums {
		p := s.File
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		m, _ := filepath.Glob(filepath.Join(filepath.Dir(p), "profiler_out_*.txt"))
		for _, f := range m {
			rel, err := filepath.Rel(reportDir, f)
			if err != nil {
				rel = f
			}
			if !seen[rel] {
				seen[rel] = true
				out = append(out, rel)
			}
		}
	}
	sort.Strings(out)
	return out
}

// missingRanks says which ranks' traces a capture expected and never got
// ("rank 7's trace never appeared: 7 of 8 summarised"), "" when none is
// missing. Ranks are known by their files' names (rank 0, rank 1, ...);
// where the names say no rank, by their count.
func missingRanks(c *campaign.Capture, sums []*trace.Summary) string {
	got := map[int]bool{}
	named := 0
	for _, s := range sums {
		var k int
		if _, err := fmt.Sscanf(s.Rank, "rank %d", &k); err == nil {
			got[k] = true
			named++
		}
	}
	if len(sums) >= c.Ranks && (named == 0 || len(got) >= c.Ranks) {
		return ""
	}
	of := fmt.Sprintf("%d of %d summarised", len(sums), c.Ranks)
	if c.Inferred != "" {
		of += " (" + c.Inferred + ")"
	}
	if named == 0 {
		return fmt.Sprintf("⚠ %d rank(s)' traces never appeared: %s", c.Ranks-len(sums), of)
	}
	var missing []string
	for k := range c.Ranks {
		if !got[k] {
			missing = append(missing, strconv.Itoa(k))
		}
	}
	if len(missing) == 1 {
		return fmt.Sprintf("⚠ rank %s's trace never appeared: %s", missing[0], of)
	}
	return fmt.Sprintf("⚠ ranks %s: their traces never appeared: %s", strings.Join(missing, ", "), of)
}

// headline is the phase's traces in a sentence: how busy the GPU was over
// the traced window and so who set the pace, where the kernel time went,
// and the largest idle gaps with how often they come. "" without a window.
func headline(sums []*trace.Summary) string {
	var busy, window, kernel float64
	for _, s := range sums {
		busy, window, kernel = busy+s.BusyUS, window+s.WindowUS, kernel+s.KernelUS+s.MemoryUS
	}
	if window <= 0 {
		return ""
	}
	share := busy / window
	var who string
	switch {
	case share < 0.5:
		who = "the host set the pace (launches, scheduling, Python: the GPU waited)"
	case share < 0.9:
		who = "the GPU and the host shared the pace"
	default:
		who = "the GPU set the pace"
	}
	h := fmt.Sprintf("The GPU was busy %s of the traced window: %s", pct(busy, window), who)
	// The largest category of kernel time, over all ranks.
	cats := map[string]float64{}
	for _, s := range sums {
		for _, c := range s.Cats {
			cats[c.Name] += c.TotalUS
		}
	}
	top, topUS := "", 0.0
	for name, t := range cats {
		if t > topUS || t == topUS && name < top {
			top, topUS = name, t
		}
	}
	if top != "" && kernel > 0 {
		h += fmt.Sprintf("; %s took %s of its time", top, pct(topUS, kernel))
	}
	// The largest gaps of the busiest stream of the most loaded rank, and
	// their spacing when they are of a kind (within 2x of each other).
	var gaps []trace.Gap
	most := sums[0]
	for _, s := range sums {
		if s.KernelUS > most.KernelUS {
			most = s
		}
	}
	if len(most.Streams) > 0 {
		gaps = most.Streams[0].Gaps
	}
	if len(gaps) > 0 && gaps[0].DurUS >= 1000 {
		h += fmt.Sprintf("; largest gaps %s", us(gaps[0].DurUS))
		if n := len(gaps); n >= 3 && gaps[n-1].DurUS*2 >= gaps[0].DurUS {
			lo, hi := gaps[0].AtUS, gaps[0].AtUS
			for _, g := range gaps {
				lo, hi = math.Min(lo, g.AtUS), math.Max(hi, g.AtUS)
			}
			if hi > lo {
				h += fmt.Sprintf(", every ~%s", us((hi-lo)/float64(n-1)))
			}
		}
	}
	return h + "."
}
