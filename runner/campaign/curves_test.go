package campaign

import (
	"testing"
)

// TestLayout: curves along m though shape is the first axis: a line per
// shape, each with its points in m's order, m's values as x and a log
// scale over three decades unless log_x: says otherwise; names on an
// axis sit at 1, 2, ...
func TestLayout(t *testing.T) {
	for _, c := range []struct {
		plot string
		log  bool
	}{{"    plot: {x: m, y: tflops}\n", true}, {"    plot: {x: m, y: tflops, log_x: false}\n", false}} {
		p, err := Parse("c.yaml", "/c/c.yaml", []byte("name: c\nphases:\n  - id: g\n    sweep: {shape: [up, down], m: [1, 16, 2048]}\n"+c.plot+"    steps:\n      - run: |\n          true\n"))
		if err != nil {
			t.Fatal(err)
		}
		l := p.Phases[0].Layout()
		if l.Axis.Name != "m" || !l.Numeric || l.LogX != c.log || len(l.X) != 3 || l.X[2] != 2048 {
			t.Fatalf("%q: layout %+v", c.plot, l)
		}
		if len(l.Lines) != 2 || l.Lines[0].Name != "shape=up" || l.Lines[1].Name != "shape=down" {
			t.Fatalf("lines %+v", l.Lines)
		}
		for _, line := range l.Lines {
			if len(line.Points) != 3 || line.Points[0].X != 1 || line.Points[1].X != 16 || line.Points[2].X != 2048 {
				t.Errorf("line %s: %+v", line.Name, line.Points)
			}
		}
	}
	p, _ := Parse("c.yaml", "/c/c.yaml", []byte("name: c\nphases:\n  - id: g\n    sweep: {shape: [up, down]}\n    steps:\n      - run: |\n          true\n"))
	if l := p.Phases[0].Layout(); l.Numeric || l.LogX || l.X[0] != 1 || l.X[1] != 2 || len(l.Lines) != 1 || l.Lines[0].Name != "" {
		t.Errorf("names on the axis: %+v", l)
	}
}
