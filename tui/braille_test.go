package tui

import (
	"strings"
	"testing"
)

// TestBrailleLine: a rising line from the bottom-left to the top-right
// lights the first cell of the bottom plot row and the last of the top
// row, each with the dot of its corner; every plot row has a cell lit.
func TestBrailleLine(t *testing.T) {
	lines := drawChart(chartSpec{title: "t", xLabel: "x", yLabel: "y", lines: []chartLine{{name: "a", xs: []float64{0, 1}, ys: []float64{0, 1}}}}, 40, 10, nil)
	if len(lines) != 10 {
		t.Fatalf("%d lines for 10 rows:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	plot := lines[1:6] // title, then 5 plot rows
	gutter := strings.IndexAny(plot[0], "┤│") + len("┤")
	bottom, top := []rune(plot[4][gutter:]), []rune(plot[0][gutter:])
	if bottom[0]&0x40 == 0 { // the dot at x 0, y 3 of the cell: its bottom-left
		t.Errorf("the bottom-left cell is %q; want its bottom-left dot lit", string(bottom[0]))
	}
	if last := top[len(top)-1]; last&0x08 == 0 { // x 1, y 0: top-right
		t.Errorf("the top-right cell is %q; want its top-right dot lit", string(last))
	}
	for i, row := range plot {
		if strings.TrimSpace(row[gutter:]) == "" {
			t.Errorf("plot row %d is empty: the line has a gap", i)
		}
	}
}

// TestBrailleLogTicks: on a log axis 1, 10, 100, 1000 fall evenly apart.
func TestBrailleLogTicks(t *testing.T) {
	xs := []float64{1, 10, 100, 1000}
	lines := drawChart(chartSpec{logX: true, lines: []chartLine{{name: "a", xs: xs, ys: []float64{1, 2, 3, 4}}}}, 70, 10, nil)
	axis := []rune(lines[len(lines)-4])
	var at []int
	for i, r := range axis {
		if r == '┬' {
			at = append(at, i)
		}
	}
	if len(at) != 4 {
		t.Fatalf("ticks at %v on %q", at, string(axis))
	}
	for i := 2; i < len(at); i++ {
		if d := (at[i] - at[i-1]) - (at[1] - at[0]); d < -1 || d > 1 {
			t.Errorf("ticks at %v: not evenly spaced on a log axis", at)
		}
	}
	if !strings.Contains(lines[len(lines)-2], "(log scale)") {
		t.Errorf("the axis does not say it is log: %q", lines[len(lines)-2])
	}
}

// TestBrailleEdges: a window too small says so, a chart without points
// says they are to come, and a legend too long for the width says how
// many it left out.
func TestBrailleEdges(t *testing.T) {
	if got := drawChart(chartSpec{}, 20, 5, nil); len(got) != 1 || !strings.Contains(got[0], "too small") {
		t.Errorf("a 20x5 chart: %q", got)
	}
	if got := drawChart(chartSpec{title: "t"}, 80, 20, nil); !strings.Contains(strings.Join(got, "\n"), "no points yet") {
		t.Errorf("no points: %q", got)
	}
	var many []chartLine
	for _, n := range []string{"shape=gate_up_proj", "shape=down_proj", "shape=qkv_proj", "shape=o_proj", "shape=lm_head"} {
		many = append(many, chartLine{name: n, xs: []float64{1, 2}, ys: []float64{1, 2}})
	}
	got := drawChart(chartSpec{lines: many}, 60, 10, nil)
	if leg := got[len(got)-1]; !strings.Contains(leg, "more") || len([]rune(leg)) > 60 {
		t.Errorf("the legend at 60 columns: %q", leg)
	}
}
