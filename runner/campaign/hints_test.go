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
