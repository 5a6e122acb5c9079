package campaign

import (
	"strings"
	"testing"
	"time"
)

// TestCaptureRanks: capture: takes its ranks as written, or from the
// tensor- and pipeline-parallel sizes of the service the phase needs; a
// capture with no way to know them, without artifacts, or with a bad
// stall is refused at its place.
func TestCaptureRanks(t *testing.T) {
	const svc = "  - id: serve\n    service:\n      run: |\n        vllm serve m --tensor-parallel-size=4 -pp 2\n      ready: {log: up}\n"
	p, err := Parse("c.yaml", "/c/c.yaml", []byte("name: c\nphases:\n"+svc+"  - id: prof\n    needs: [serve]\n    artifacts: [t/*.json.gz]\n    capture: {}\n    steps:\n      - run: |\n          true\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := p.Phase("prof").Capture
	if c == nil || c.Ranks != 8 || c.Stall != DefaultStall || !strings.Contains(c.Inferred, "tensor-parallel 4 × pipeline-parallel 2 in serve") {
		t.Errorf("capture %+v: want 8 ranks from -tp 4 -pp 2", c)
	}
	p, err = Parse("c.yaml", "/c/c.yaml", []byte("name: c\nphases:\n  - id: prof\n    artifacts: [t/*.json.gz]\n    capture: {ranks: 3, stall: 90s}\n    steps:\n      - run: |\n          true\n"))
	if err != nil || p.Phases[0].Capture.Ranks != 3 || p.Phases[0].Capture.Stall != 90*time.Second {
		t.Errorf("capture as written: %+v, %v", p.Phases[0].Capture, err)
	}
	for _, c := range []struct{ phase, want string }{
		{"    artifacts: [t/*.json.gz]\n    capture: {}\n", "capture: gives no ranks"},
		{"    capture: {ranks: 2}\n", "lists no artifacts"},
		{"    artifacts: [t/*.json.gz]\n    capture: {ranks: -1}\n", "ranks must be one or more"},
		{"    artifacts: [t/*.json.gz]\n    capture: {ranks: 2, stall: soon}\n", `5:32: bad duration "soon"`},
		{"    artifacts: [t/*.json.gz]\n    capture: {ranks: 2, stall: 0s}\n", "stall must be a positive duration"},
	} {
		_, err := Parse("c.yaml", "/c/c.yaml", []byte("name: c\nphases:\n  - id: prof\n"+c.phase+"    steps:\n      - run: |\n          true\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want %q", c.phase, err, c.want)
		}
	}
}
