package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/greenlight-run/greenlight/conditions"
	"github.com/greenlight-run/greenlight/gpu"
)

// conditionsSection is what the campaign ran under, in the header: the
// machine, the GPUs' setup (grouped where GPUs agree), the software, and
// every change seen at a phase's start.
func conditionsSection(book *conditions.Book) string {
	if book == nil {
		return ""
	}
	c := book.First
	var b strings.Builder
	b.WriteString("**Conditions** (at the start; the record beside this file keeps them all)\n\n")
	machine := []string{"host " + orNA(c.Host), "kernel " + orNA(c.Kernel)}
	if c.CPU != "" {
		machine = append(machine, fmt.Sprintf("%d × %s", c.CPUs, c.CPU))
	}
	fmt.Fprintf(&b, "- machine: %s\n", cell(strings.Join(machine, ", ")))
	if c.Driver != "" || c.CUDA != "" {
		fmt.Fprintf(&b, "- driver %s, CUDA %s\n", cell(orNA(c.Driver)), cell(orNA(c.CUDA)))
	}
	for _, g := range groupGPUs(c.GPUs) {
		fmt.Fprintf(&b, "- %s\n", cell(g))
	}
	if c.IOMMU != "" || c.NCCL != "" || len(c.NCCLEnv) > 0 {
		var parts []string
		if c.IOMMU != "" {
			parts = append(parts, "IOMMU "+c.IOMMU)
		}
		if c.NCCL != "" {
			parts = append(parts, "NCCL "+c.NCCL)
		}
		keys := make([]string, 0, len(c.NCCLEnv))
		for k := range c.NCCLEnv {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			parts = append(parts, k+"="+c.NCCLEnv[k])
		}
		fmt.Fprintf(&b, "- interconnect: %s\n", cell(strings.Join(parts, ", ")))
	}
	if c.Git != nil {
		if c.Git.Commit != "" {
			d := ""
			if c.Git.Dirty {
				d = ", with uncommitted changes"
			}
			fmt.Fprintf(&b, "- campaign folder: git %.12s%s\n", c.Git.Commit, d)
		} else if c.Git.Why != "" {
			fmt.Fprintf(&b, "- campaign folder: %s\n", cell(c.Git.Why))
		}
	}
	for _, cmd := range c.Commands {
		out := strings.TrimSpace(cmd.Output)
		if cmd.Error != "" {
			out = firstOr(out+" ", "") + "(" + cmd.Error + ")"
		}
		if first, _, more := strings.Cut(out, "\n"); more {
			out = first + " …"
		}
		fmt.Fprintf(&b, "- `%s`: %s\n", strings.ReplaceAll(cell(conditions.CommandLabel(cmd.Run)), "`", "'"), cell(out))
	}
	if len(c.Packages) > 0 {
		names := make([]string, 0, len(c.Packages))
		for n := range c.Packages {
			names = append(names, n)
		}
		slices.Sort(names)
		var ps []string
		for _, n := range names {
			ps = append(ps, n+" "+firstOr(c.Packages[n], "not installed"))
		}
		fmt.Fprintf(&b, "- packages: %s\n", cell(strings.Join(ps, ", ")))
	}
	b.WriteString(topologyMatrix(c.GPUs))
	for _, ch := range book.Changes {
		where := "at the start of `" + ch.Phase + "`"
		if ch.Phase == "" {
			where = "when the campaign was resumed"
		}
		fmt.Fprintf(&b, "- ⚠ changed %s (%s): %s\n", where, ch.At.Format("15:04:05"), cell(ch.String()))
	}
	b.WriteString("\n")
	return b.String()
}

// groupGPUs says the GPUs' setup, one line for GPUs set up alike.
func groupGPUs(gs []gpu.Conditions) []string {
	var order []string
	who := map[string][]string{}
	for _, g := range gs {
		var parts []string
		if g.PowerLimitW > 0 {
			parts = append(parts, fmt.Sprintf("power limit %.0f W", g.PowerLimitW))
		}
		if g.AppClockSM > 0 {
			parts = append(parts, fmt.Sprintf("application clocks %d/%d MHz", g.AppClockSM, g.AppClockMem))
		}
		for _, kv := range [][2]string{{"ECC", g.ECC}, {"persistence", g.Persistence}, {"MIG", g.MIG}} {
			if kv[1] != "" {
				parts = append(parts, kv[0]+" "+kv[1])
			}
		}
		if g.PCIeGen > 0 {
			l := fmt.Sprintf("PCIe gen %d x%d", g.PCIeGen, g.PCIeWidth)
			if g.PCIeMaxGen > 0 && (g.PCIeMaxGen != g.PCIeGen || g.PCIeMaxWidth != g.PCIeWidth) {
				l += fmt.Sprintf(" (of gen %d x%d)", g.PCIeMaxGen, g.PCIeMaxWidth)
			}
			parts = append(parts, l)
		}
		if g.VBIOS != "" {
			parts = append(parts, "VBIOS "+g.VBIOS)
		}
		key := orNA(g.Name) + ": " + strings.Join(parts, ", ")
		if _, ok := who[key]; !ok {
			order = append(order, key)
		}
		who[key] = append(who[key], g.Label())
	}
	var out []string
	for _, k := range order {
		label := "GPU " + who[k][0]
		if len(who[k]) > 1 {
			label = "GPUs " + strings.Join(who[k], ", ")
		}
		out = append(out, label+", "+k)
	}
	return out
}

// linkShort are the links as nvidia-smi topo -m writes them.
var linkShort = map[string]string{
	"NVLink": "NV", "same board": "board", "one PCIe switch": "PIX", "several PCIe switches": "PXB",
	"a host bridge": "PHB", "one CPU": "NODE", "across CPU sockets": "SYS",
}

// topologyMatrix is the GPUs of this host, GPU × GPU: the link between
// each pair and whether peer reads and writes go directly (NVML's P2P
// status); "" with fewer than two GPUs that say.
func topologyMatrix(gs []gpu.Conditions) string {
	var local []gpu.Conditions
	for _, g := range gs {
		if g.Host == "" && len(g.Peers) > 0 {
			local = append(local, g)
		}
	}
	if len(local) < 2 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n**GPU × GPU** (the link, nvidia-smi topo's words; then P2P read/write: ✓ direct, ✗ not)\n\n| |")
	for _, g := range local {
		fmt.Fprintf(&b, " GPU %d |", g.Index)
	}
	b.WriteString(" BAR1 |\n|---|" + strings.Repeat("---|", len(local)+1) + "\n")
	var why []string
	for _, g := range local {
		fmt.Fprintf(&b, "| GPU %d |", g.Index)
		for _, o := range local {
			if o.Index == g.Index {
				b.WriteString(" — |")
				continue
			}
			i := slices.IndexFunc(g.Peers, func(p gpu.Peer) bool { return p.Index == o.Index })
			if i < 0 {
				b.WriteString(" ? |")
				continue
			}
			p := g.Peers[i]
			mark := func(s string) string {
				if s == "ok" {
					return "✓"
				}
				if !slices.Contains(why, s) {
					why = append(why, s)
				}
				return "✗"
			}
			fmt.Fprintf(&b, " %s %s/%s |", firstOr(linkShort[p.Link], cell(p.Link)), mark(p.Read), mark(p.Write))
		}
		bar := "—"
		if g.BAR1MiB > 0 {
			bar = fmt.Sprintf("%d MiB", g.BAR1MiB)
		}
		fmt.Fprintf(&b, " %s |\n", bar)
	}
	if len(why) > 0 {
		fmt.Fprintf(&b, "\n✗: %s (NVML's P2P status).\n", cell(strings.Join(why, "; ")))
	}
	return b.String()
}
