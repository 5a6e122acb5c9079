package trace

// From the events read to a Summary: totals, categories, the top
// kernels, the busy union and each stream's gaps.

import (
	"slices"
	"sort"
)

// median is the middle of xs (the mean of the two middle ones); xs is
// sorted in place.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// Trim keeps the top kernels listed, the rest counted as the others.
func (s *Summary) Trim(top int) {
	if top < 0 || len(s.Top) <= top {
		return
	}
	for _, k := range s.Top[top:] {
		s.Other.Count += k.Count
		s.Other.TotalUS += k.TotalUS
	}
	s.Top = s.Top[:top]
}

func (a *agg) summary(rules *Rules, top int) *Summary {
	s := &Summary{Steps: len(a.hostSteps)}
	switch {
	case len(a.gpuSteps) > 0:
		s.StepUS, s.StepBasis = median(a.gpuSteps), "GPU"
	case len(a.hostSteps) > 0:
		s.StepUS, s.StepBasis = median(a.hostSteps), "host"
	}
	if s.Steps == 0 {
		s.Steps = len(a.gpuSteps)
	}
	cats := map[string]*Cat{}
	var all []Kernel
	for name, k := range a.names {
		cat := rules.Of(name)
		if k.mem {
			cat = CatMemory
			s.MemoryUS += k.total
			s.MemoryOps += k.count
		} else {
			s.KernelUS += k.total
			s.Kernels += k.count
			all = append(all, Kernel{Name: name, Short: Short(name), Cat: cat, Count: k.count, TotalUS: k.total})
		}
		c := cats[cat]
		if c == nil {
			c = &Cat{Name: cat}
			cats[cat] = c
		}
		c.Count += k.count
		c.TotalUS += k.total
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].TotalUS != all[j].TotalUS {
			return all[i].TotalUS > all[j].TotalUS
		}
		return all[i].Name < all[j].Name
	})
	if len(all) > top {
		for _, k := range all[top:] {
			s.Other.Count += k.Count
			s.Other.TotalUS += k.TotalUS
		}
		all = all[:top]
	}
	tellApart(all)
	s.Top = all
	for _, name := range rules.Names() {
		if c := cats[name]; c != nil {
			s.Cats = append(s.Cats, *c)
		}
	}
	// The window, the union of all activity, and each stream's gaps.
	a.all.close()
	if a.all.events == 0 {
		return s
	}
	lo := a.all.lo
	s.WindowUS, s.BusyUS, s.Late = a.all.hi-lo, a.all.busy, a.all.late
	ids := make([]string, 0, len(a.streams))
	for id := range a.streams {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		w := a.streams[id]
		w.close()
		s.Late += w.late
		s.Streams = append(s.Streams, w.stream(id, lo))
	}
	sort.SliceStable(s.Streams, func(i, j int) bool { return s.Streams[i].BusyUS > s.Streams[j].BusyUS })
	return s
}

// gapsKept is how many of a stream's largest gaps are listed.
const gapsKept = 3

func keepLargest(gs []Gap, g Gap) []Gap {
	if len(gs) == gapsKept && g.DurUS <= gs[gapsKept-1].DurUS {
		return gs
	}
	gs = append(gs, g)
	sort.SliceStable(gs, func(i, j int) bool { return gs[i].DurUS > gs[j].DurUS })
	if len(gs) > gapsKept {
		gs = gs[:gapsKept]
	}
	return gs
}
