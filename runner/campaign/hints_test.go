package campaign

import (
	"strings"
	"testing"
)

// TestHintsProposeMetrics: a vllm serve service without metrics: gets its
// own /metrics URL proposed, with its --port as written; one with
// metrics: gets nothing.
func TestHintsProposeMetrics(t *testing.T) {
	for _, c := range []struct{ service, want string }{
		{"run: |\n        vllm serve m --port \"$PORT\"", "http://localhost:${PORT}/metrics"},
		{"run: |\n        vllm serve m --port=9000", "http://localhost:9000/metrics"},
		{"run: |\n        vllm serve m", "http://localhost:8000/metrics"},
		{"run: |\n        vllm serve m\n      metrics: {url: \"http://localhost:8000/metrics\"}", ""},
	} {
		p, err := Parse("c.yaml", "/c/c.yaml", []byte("name: h\nenv: {PORT: \"8001\"}\nphases:\n  - id: serve\n    service:\n      "+c.service+"\n      ready: {log: up}\n"))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(p.Hints(), "\n")
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%q: hints %q; want %q", c.service, got, c.want)
		}
	}
}

// TestPlotValidated: plot: needs a sweep, an x and a y, and a label that
// is one of the sweep's axes; each said at its place.
func TestPlotValidated(t *testing.T) {
	for _, c := range []struct{ phase, want string }{
		{"    plot: {x: a, y: b}\n", "this phase (line 3) has no sweep"},
		{"    sweep: {c: [1, 2]}\n    plot: {x: a}\n", "plot: needs x: and y:"},
		{"    sweep: {c: [1, 2]}\n    plot: {x: a, y: b, label: n}\n", `label: "n" is no axis of the sweep`},
		{"    sweep: {c: [1, 2]}\n    plot: {x: a, y: [b, d]}\n", `x: "a" is no axis of the sweep, so this is a trade-off chart, which has one y:`},
		{"    sweep: {c: [1, 2]}\n    plot: {x: a, y: b, log_x: true}\n", "series: and log_x: are for curves along an axis"},
		{"    sweep: {c: [1, 2]}\n    plot: {x: c, y: b, label: c}\n", "label: names the points of a trade-off chart"},
		{"    sweep: {c: [1, 2], d: [3]}\n    plot: {x: c, y: b, series: c}\n", `series: "c" is no other axis`},
		{"    sweep: {c: [1, 2], d: [3]}\n    plot: {x: c, y: [b, \"\"]}\n", "plot: needs x: and y:"},
	} {
		_, err := Parse("c.yaml", "/c/c.yaml", []byte("name: p\nphases:\n  - id: s\n"+c.phase+"    steps:\n      - run: |\n          true\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want %q", c.phase, err, c.want)
		}
	}
	if _, err := Parse("c.yaml", "/c/c.yaml", []byte("name: p\nphases:\n  - id: s\n    sweep: {c: [1, 2]}\n    plot: {x: a, y: b, label: c}\n    steps:\n      - run: |\n          true\n")); err != nil {
		t.Errorf("a good plot: refused: %v", err)
	}
	p, err := Parse("c.yaml", "/c/c.yaml", []byte("name: p\nphases:\n  - id: s\n    sweep: {c: [1, 2], m: [1, 8]}\n    plot: {x: m, y: [tflops, time_ms], series: c, log_x: false}\n    steps:\n      - run: |\n          true\n"))
	if err != nil {
		t.Fatalf("good curves refused: %v", err)
	}
	if c := p.Phases[0].Curves; c == nil || c.X != "m" || len(c.Y) != 2 || c.Series != "c" || c.LogX == nil || *c.LogX || p.Phases[0].Plot != nil {
		t.Errorf("curves %+v, plot %+v", c, p.Phases[0].Plot)
	}
}
