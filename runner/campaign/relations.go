package campaign

// How phases stand to one another: what a phase uses and comes after
// (kept as bitsets, built once: a swept service's points make plans of
// hundreds of phases), which may share the machine, and the order the
// plan runs them in.

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/greenlight-run/greenlight/internal/format"
)

// planIndex answers Phase, Uses and After at once: a swept service's
// points make plans of hundreds of phases, asked about on every pass of
// the scheduler and, in validate, of every pair.
type planIndex struct {
	byID  map[string]*Phase
	pos   map[string]int
	uses  []bitset // uses[i]: the phases phase i uses (Uses)
	after []bitset // after[i]: the phases phase i comes after, at any depth (After)
}

type bitset []uint64

func (b bitset) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }

func (b bitset) set(i int) { b[i/64] |= 1 << (i % 64) }

func (b bitset) or(c bitset) {
	for k := range b {
		b[k] |= c[k]
	}
}

// index is the plan's index: the one Parse made, or, while the plan is
// being made, one for the phases as they stand now.
func (p *Plan) index() *planIndex {
	if p.ix != nil {
		return p.ix
	}
	return buildIndex(p)
}

func buildIndex(p *Plan) *planIndex {
	n := len(p.Phases)
	ix := &planIndex{byID: make(map[string]*Phase, n), pos: make(map[string]int, n), uses: make([]bitset, n), after: make([]bitset, n)}
	for i, ph := range p.Phases {
		if _, dup := ix.byID[ph.ID]; !dup {
			ix.byID[ph.ID], ix.pos[ph.ID] = ph, i
		}
	}
	words := (n + 63) / 64
	state := make([]int8, n) // 0 not seen, 1 on the path (a cycle the loader refuses), 2 done
	var visit func(i int)
	visit = func(i int) {
		if state[i] != 0 {
			return
		}
		state[i] = 1
		ph := p.Phases[i]
		u, a := make(bitset, words), make(bitset, words)
		for _, w := range ph.Waits() {
			if j, ok := ix.pos[w]; ok {
				if visit(j); state[j] == 2 {
					a.set(j)
					a.or(ix.after[j])
				}
			}
		}
		for _, w := range ph.Needs {
			if j, ok := ix.pos[w]; ok && state[j] == 2 {
				u.set(j)
				if p.Phases[j].Service != nil {
					u.or(ix.uses[j])
				}
			}
		}
		ix.uses[i], ix.after[i], state[i] = u, a, 2
	}
	for i := range p.Phases {
		visit(i)
	}
	return ix
}

// Waits is what must end before the phase starts: its needs, then the
// phases it comes after.
func (ph *Phase) Waits() []string {
	if len(ph.After) == 0 {
		return ph.Needs
	}
	return append(slices.Clone(ph.Needs), ph.After...)
}

// Uses reports whether phase a relies on phase b being up: a needs b, or
// needs a service that uses b (vLLM needs the Ray worker, which needs the
// Ray head). A service stays up, and shares its GPUs, for the phases that
// use it. The chain goes through services only: a phase after a phase
// after a service does not keep the service up.
func (p *Plan) Uses(a, b string) bool {
	ix := p.index()
	i, ok := ix.pos[a]
	j, ok2 := ix.pos[b]
	return ok && ok2 && ix.uses[i].has(j)
}

// UsedPhases lists the phases a uses, as Uses defines it, in plan order.
func (p *Plan) UsedPhases(a string) []string {
	ix := p.index()
	i, ok := ix.pos[a]
	if !ok {
		return nil
	}
	var out []string
	for k, w := range ix.uses[i] { // its bits, in plan order
		for ; w != 0; w &= w - 1 {
			out = append(out, p.Phases[k*64+bits.TrailingZeros64(w)].ID)
		}
	}
	return out
}

// After reports whether phase a comes after phase b through needs (or a
// swept service's order, Phase.After), at any depth: the two never run
// at once.
func (p *Plan) After(a, b string) bool {
	ix := p.index()
	i, ok := ix.pos[a]
	j, ok2 := ix.pos[b]
	return ok && ok2 && ix.after[i].has(j)
}

// Overlap says how two phases may share the machine: "" when needs order
// them (never at once), else whether they run together or queue, and for
// which GPUs.
func (p *Plan) Overlap(a, b *Phase) string {
	switch {
	case p.After(a.ID, b.ID) || p.After(b.ID, a.ID):
		return ""
	case p.Uses(a.ID, b.ID) || p.Uses(b.ID, a.ID):
		return "" // a service and a phase that uses it share its GPUs by design
	case a.Slurm != nil || b.Slurm != nil:
		return "may run together (Slurm gives a job its own nodes)"
	case !SharesGPUs(a.GPUs, b.GPUs):
		return "may run together"
	}
	shared := SharedGPUs(a.GPUs, b.GPUs)
	gpus := "all GPUs"
	switch len(shared) {
	case 0:
	case 1:
		gpus = "GPU " + format.Ranges(shared)
	default:
		gpus = "GPUs " + format.Ranges(shared)
	}
	return "queue for " + gpus + ": never at once"
}

// Contend says whether two phases hold GPUs of this machine the other
// needs: a phase on Slurm holds none here (Slurm allocates its nodes).
func Contend(a, b *Phase) bool {
	return a.Slurm == nil && b.Slurm == nil && SharesGPUs(a.GPUs, b.GPUs)
}

// SharesGPUs reports whether two phases' GPU sets overlap: nil is every
// GPU, an empty set (gpus: none) none at all.
func SharesGPUs(a, b []int) bool {
	if a != nil && len(a) == 0 || b != nil && len(b) == 0 {
		return false
	}
	if a == nil || b == nil {
		return true
	}
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// SharedGPUs lists the GPUs two sets share; nil (all GPUs) shares every one
// of the other's.
func SharedGPUs(a, b []int) []int {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	var out []int
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// order sorts phases topologically, keeping file order among equals, and
// reports a cycle at the needs of the first phase caught in it.
func (l *loader) order(plan *Plan, ids map[string]int) {
	done := map[string]bool{}
	var out []*Phase
	for len(out) < len(plan.Phases) {
		progressed := false
		for _, ph := range plan.Phases {
			if done[ph.ID] {
				continue
			}
			ready := true
			for _, n := range ph.Waits() {
				ready = ready && done[n]
			}
			if ready {
				done[ph.ID] = true
				out = append(out, ph)
				progressed = true
				break
			}
		}
		if !progressed {
			cyc := findCycle(plan, done)
			l.add(fmt.Sprintf("$.phases[%d].needs", ids[cyc[0]]), "dependency cycle: "+strings.Join(cyc, " -> "),
				"a phase cannot need, directly or not, a phase that needs it; remove one of these needs")
			return
		}
	}
	plan.Phases = out
}

func findCycle(plan *Plan, done map[string]bool) []string {
	for _, start := range plan.Phases {
		if done[start.ID] {
			continue
		}
		path := []string{start.ID}
		seen := map[string]int{start.ID: 0}
		cur := start
		for {
			var next *Phase
			for _, n := range cur.Waits() {
				if !done[n] {
					next = plan.Phase(n)
					break
				}
			}
			if next == nil {
				break
			}
			if i, ok := seen[next.ID]; ok {
				return append(path[i:], next.ID)
			}
			seen[next.ID] = len(path)
			path = append(path, next.ID)
			cur = next
		}
	}
	return []string{"?"}
}
