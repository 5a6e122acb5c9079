package trace

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A capture is one profiling of a workload: its ranks' traces, made
// together (one step of a capture phase, one folder of traces). Two sets
// of captures are compared family by family (package compare), each
// capture one sample: the ranks of a capture are not independent of each
// other, the captures are.

// Capture is one capture's traces, as kernel families: each category of
// the rules and each kernel (by its short name), with its GPU time and
// launches, the mean over the capture's ranks.
type Capture struct {
	Name  string `json:"name"`  // the step's run that made it (a1-s2-t1), or its folder
	Ranks int    `json:"ranks"` // traces summarised
	// Steps are the profiler's step marks (the mean over the ranks), the
	// denominator of a per-step figure; 0 where the traces mark none.
	Steps     float64  `json:"steps,omitempty"`
	StepUS    float64  `json:"step_us,omitempty"`    // the median step's span, µs, the mean over ranks (Summary.StepUS)
	StepBasis string   `json:"step_basis,omitempty"` // "GPU" or "host": where the spans were read
	KernelUS  float64  `json:"kernel_us"`            // kernels and memory operations, µs, the mean over ranks
	Families  []Family `json:"families"`
	// Cut says a trace of it was read only in part (truncated, damaged):
	// the capture is not a sample like the others.
	Cut string `json:"cut,omitempty"`
}

// Family kinds: a rules category (GEMM, MoE, ...), or one kernel.
const (
	FamilyCategory = "category"
	FamilyKernel   = "kernel"
)

// Family is one kernel family's time in a capture.
type Family struct {
	Kind  string  `json:"kind"` // FamilyCategory or FamilyKernel
	Name  string  `json:"name"`
	US    float64 `json:"us"`    // GPU time, µs, the mean over ranks
	Calls float64 `json:"calls"` // launches, the mean over ranks
	// Full is a kernel's whole name, its identity across captures (Name
	// is the short one it was given in its own trace); "" for a category.
	Full string `json:"full,omitempty"`
}

// KernelsKept bounds the kernels a capture keeps by name (the largest):
// enough that a kernel gone from one side is known gone, not below a cut.
const KernelsKept = 400

// Gather makes one capture of its ranks' summaries. A summary's top
// kernels must not have been trimmed below what a comparison needs: the
// kernels it does not list are counted in no kernel family (they stay in
// their categories).
func Gather(name string, sums []*Summary) Capture {
	c := Capture{Name: name, Ranks: len(sums)}
	if len(sums) == 0 {
		return c
	}
	type acc struct{ us, calls float64 }
	cats, kernels := map[string]*acc{}, map[string]*acc{}
	shortOf := map[string]string{} // a kernel's full name -> its short one
	add := func(m map[string]*acc, k string, us float64, calls int) {
		a := m[k]
		if a == nil {
			a = &acc{}
			m[k] = a
		}
		a.us += us
		a.calls += float64(calls)
	}
	var cuts []string
	for _, s := range sums {
		if c.StepBasis == "" || s.StepBasis == "host" {
			c.StepBasis = s.StepBasis // one rank read on the host: the whole is
		}
		c.Steps += float64(s.Steps)
		c.StepUS += s.StepUS
		c.KernelUS += s.KernelUS + s.MemoryUS
		for _, ct := range s.Cats {
			add(cats, ct.Name, ct.TotalUS, ct.Count)
		}
		for _, k := range s.Top {
			add(kernels, k.Name, k.TotalUS, k.Count)
			if _, ok := shortOf[k.Name]; !ok {
				shortOf[k.Name] = k.Short
			}
		}
		if s.Err != "" {
			cuts = append(cuts, fmt.Sprintf("%s: %s", cmp.Or(s.Rank, filepath.Base(s.File)), s.Err))
		}
	}
	n := float64(len(sums))
	c.Steps /= n
	c.StepUS /= n
	c.KernelUS /= n
	c.Cut = strings.Join(cuts, "; ")
	for _, set := range []struct {
		kind string
		m    map[string]*acc
	}{{FamilyCategory, cats}, {FamilyKernel, kernels}} {
		for name, a := range set.m {
			f := Family{Kind: set.kind, Name: name, US: a.us / n, Calls: a.calls / n}
			if set.kind == FamilyKernel {
				f.Name, f.Full = shortOf[name], name
			}
			c.Families = append(c.Families, f)
		}
	}
	slices.SortFunc(c.Families, func(a, b Family) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(b.US, a.US), cmp.Compare(a.Name, b.Name))
	})
	return c
}

// Captures groups the traces of a folder into captures: each folder
// under it that holds traces is one capture; the traces directly in it
// are grouped by time, a capture ending where a rank comes again
// (rank0, rank1, rank0: two captures); a trace whose name says no rank
// is one capture. Each group's paths are in rank order.
func Captures(dir string) ([][]string, []string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	var groups [][]string
	var names []string
	type file struct {
		path string
		mod  int64
	}
	var loose []file
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		isDir := e.IsDir()
		if e.Type()&os.ModeSymlink != 0 { // a folder linked in (a capture kept elsewhere)
			if fi, err := os.Stat(p); err == nil {
				isDir = fi.IsDir()
			}
		}
		switch {
		case isDir:
			var in []string
			sub, _ := os.ReadDir(p)
			for _, f := range sub {
				if !f.IsDir() && IsTrace(f.Name()) {
					in = append(in, filepath.Join(p, f.Name()))
				}
			}
			if len(in) > 0 {
				slices.SortFunc(in, byRank)
				groups, names = append(groups, in), append(names, e.Name())
			}
		case IsTrace(e.Name()):
			fi, err := e.Info()
			if err != nil {
				return nil, nil, err
			}
			loose = append(loose, file{p, fi.ModTime().UnixNano()})
		}
	}
	slices.SortFunc(loose, func(a, b file) int { return cmp.Or(cmp.Compare(a.mod, b.mod), strings.Compare(a.path, b.path)) })
	var cur []string
	seen := map[string]bool{}
	flush := func() {
		if len(cur) > 0 {
			slices.SortFunc(cur, byRank)
			groups = append(groups, cur)
			names = append(names, fmt.Sprintf("%s#%d", filepath.Base(dir), len(groups)))
		}
		cur, seen = nil, map[string]bool{}
	}
	for _, f := range loose {
		r := RankOf(f.path)
		// A trace whose name says no rank is a capture of its own.
		if seen[r] || !rankRe.MatchString(filepath.Base(f.path)) {
			flush()
		}
		seen[r] = true
		cur = append(cur, f.path)
	}
	flush()
	return groups, names, nil
}

func byRank(a, b string) int {
	ra, rb := RankOf(a), RankOf(b)
	var x, y int
	_, e1 := fmt.Sscanf(ra, "rank %d", &x)
	_, e2 := fmt.Sscanf(rb, "rank %d", &y)
	if e1 == nil && e2 == nil && x != y {
		return cmp.Compare(x, y)
	}
	return strings.Compare(a, b)
}

// NameKernels gives the kernel families of captures compared together
// one short name each, from their full names over all of them: a kernel
// reads the same on both sides (a short name given trace by trace would
// tell it apart only where a sibling sat beside it), and no two share
// one. Families of records without full names keep theirs. The captures
// are copied, not changed.
func NameKernels(sides ...[]Capture) [][]Capture {
	var ks []Kernel
	seen := map[string]bool{}
	for _, side := range sides {
		for _, c := range side {
			for _, f := range c.Families {
				if f.Kind == FamilyKernel && f.Full != "" && !seen[f.Full] {
					seen[f.Full] = true
					ks = append(ks, Kernel{Name: f.Full, Short: Short(f.Full)})
				}
			}
		}
	}
	tellApart(ks)
	short := map[string]string{}
	for _, k := range ks {
		short[k.Name] = k.Short
	}
	out := make([][]Capture, len(sides))
	for i, side := range sides {
		for _, c := range side {
			c.Families = slices.Clone(c.Families)
			for j, f := range c.Families {
				if s, ok := short[f.Full]; ok && f.Full != "" {
					c.Families[j].Name = s
				}
			}
			out[i] = append(out[i], c)
		}
	}
	return out
}
