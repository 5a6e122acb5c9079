package report

// The interconnect, from a phase's nvbandwidth rows: each GPU pair's
// peer read and write bandwidth side by side, and the write/read ratio,
// flagged below 0.5: behind some PCIe switches posted writes collapse
// (52 GB/s read, 7 written) while reads stay fast, and nothing else says
// so.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// writeCollapse is the write/read ratio under which a pair's writes are
// said to have collapsed.
const writeCollapse = 0.5

type pairBW struct{ read, write float64 }

// interconnectSection is the block of a phase whose steps read
// nvbandwidth's JSON: "" without a read and a write matrix of one kind.
func interconnectSection(ph *campaign.Phase, p runner.PhaseState) string {
	if !slices.ContainsFunc(ph.AllSteps(), func(s *campaign.Step) bool { return s.ResultsFormat == campaign.FormatNVBandwidth }) {
		return ""
	}
	// kind (the test's name without read/write) -> (src, dst) -> GB/s
	kinds := map[string]map[[2]int]*pairBW{}
	var order []string
	gpus := map[int]bool{}
	for _, s := range p.Steps {
		for _, row := range s.Results {
			v := map[string]any{}
			for i, c := range row.Cols {
				v[c] = row.Values[i]
			}
			test, _ := v["test"].(string)
			src, ok1 := v["src"].(float64)
			dst, ok2 := v["dst"].(float64)
			gbs, ok3 := v["gbs"].(float64)
			if !ok1 || !ok2 || !ok3 {
				continue
			}
			var kind string
			var write bool
			switch {
			case strings.Contains(test, "_write_"):
				kind, write = strings.Replace(test, "_write_", "_", 1), true
			case strings.Contains(test, "_read_"):
				kind = strings.Replace(test, "_read_", "_", 1)
			default:
				continue
			}
			if kinds[kind] == nil {
				kinds[kind] = map[[2]int]*pairBW{}
				order = append(order, kind)
			}
			k := [2]int{int(src), int(dst)}
			if kinds[kind][k] == nil {
				kinds[kind][k] = &pairBW{}
			}
			if write {
				kinds[kind][k].write = gbs
			} else {
				kinds[kind][k].read = gbs
			}
			gpus[int(src)], gpus[int(dst)] = true, true
		}
	}
	var b strings.Builder
	for _, kind := range order {
		pairs := kinds[kind]
		both := 0
		for _, bw := range pairs {
			if bw.read > 0 && bw.write > 0 {
				both++
			}
		}
		if both == 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\n### The interconnect: peer reads and writes\n")
		}
		var ids []int
		for g := range gpus {
			ids = append(ids, g)
		}
		slices.Sort(ids)
		fmt.Fprintf(&b, "\n`%s`: GB/s from the row's GPU to the column's, read / write, and write ÷ read (⚠ under %.1f: the writes collapse while the reads do not, as behind some PCIe switches)\n\n|  |", codeText(kind), writeCollapse)
		for _, g := range ids {
			fmt.Fprintf(&b, " to GPU %d |", g)
		}
		b.WriteString("\n|---|" + strings.Repeat("---:|", len(ids)) + "\n")
		var collapsed []string
		for _, s := range ids {
			fmt.Fprintf(&b, "| GPU %d |", s)
			for _, d := range ids {
				bw := pairs[[2]int{s, d}]
				switch {
				case s == d || bw == nil:
					b.WriteString(" — |")
				case bw.read > 0 && bw.write > 0:
					ratio := bw.write / bw.read
					mark := ""
					if ratio < writeCollapse {
						mark = "⚠ "
						collapsed = append(collapsed, fmt.Sprintf("%d → %d", s, d))
					}
					fmt.Fprintf(&b, " %s / %s (%s%.2f) |", FormatNumber(bw.read), FormatNumber(bw.write), mark, ratio)
				default:
					fmt.Fprintf(&b, " %s / %s |", orDash(bw.read), orDash(bw.write))
				}
			}
			b.WriteString("\n")
		}
		if len(collapsed) > 0 {
			fmt.Fprintf(&b, "\n⚠ Posted writes collapsed on %d pair(s): %s. Collectives that write to peers (all-reduce over PCIe) run at the write's rate.\n", len(collapsed), strings.Join(collapsed, ", "))
		}
	}
	return b.String()
}

func orDash(v float64) string {
	if v <= 0 {
		return "—"
	}
	return FormatNumber(v)
}
