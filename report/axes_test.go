package report

import (
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

// TestByteAxisInBinaryUnits: a message-size axis from 8 B to 1 GiB reads
// 1 KiB, 1 MiB and 1 GiB where it is labelled, never 1e+06; a short span
// labels more of its powers of two.
func TestByteAxisInBinaryUnits(t *testing.T) {
	var labels []string
	for _, tk := range (byteTicks{}).Ticks(8, 1<<30) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, ","); got != "32 B,1 KiB,32 KiB,1 MiB,32 MiB,1 GiB" {
		t.Errorf("8 B to 1 GiB labelled %s; want 32 B,1 KiB,32 KiB,1 MiB,32 MiB,1 GiB", got)
	}
	labels = nil
	for _, tk := range (byteTicks{}).Ticks(8<<10, 64<<10) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, ","); got != "8 KiB,16 KiB,32 KiB,64 KiB" {
		t.Errorf("8 to 64 KiB labelled %s", got)
	}
}

// TestTitlesWrapToTheChart: a title wider than the chart breaks at
// spaces into lines that fit; a short one is left alone.
func TestTitlesWrapToTheChart(t *testing.T) {
	width := func(s string) vg.Length { return vg.Length(len(s)) }
	if got := wrapTitle("short", width, 20); got != "short" {
		t.Errorf("short title: %q", got)
	}
	got := wrapTitle("kimi-k25 interconnect: bus bandwidth by message size", width, 20)
	for _, l := range strings.Split(got, "\n") {
		if len(l) > 20 {
			t.Errorf("line %q wider than the chart (%q)", l, got)
		}
	}
	if strings.ReplaceAll(got, "\n", " ") != "kimi-k25 interconnect: bus bandwidth by message size" {
		t.Errorf("words lost: %q", got)
	}
}
