package runner

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestResultsSaidWithTheirChange: with a baseline, each new result is
// said with the annotator's word first (what a narrow window shows), at
// its point (compare's TestLiveLearnsAsRunsCome tests the words).
func TestResultsSaidWithTheirChange(t *testing.T) {
	t.Parallel()
	p := loadCampaign(t, `
name: bench1
phases:
  - id: gemm
    sweep: {m: [1, 64]}
    repeat: 3
    expect: {tflops: ">= 1"}
    steps:
      - run: |
          echo "{\"tflops\": $(( ${m} * 11 + GREENLIGHT_REPEAT )), \"note\": \"x\"}" >> "$GREENLIGHT_RESULTS"
`)
	opts := testOptions(t)
	opts.Annotate = func(phase, point string, row Row) string {
		return fmt.Sprintf("%v at %s: said", row.Values[len(row.Values)-2], point) // the compare's word (package compare tests its verdicts)
	}
	h := start(t, p, opts)
	h.finished(60 * time.Second)
	var said []string
	for _, e := range h.seen {
		if e.Kind == ResultRecorded {
			said = append(said, e.Message)
		}
	}
	want := []string{
		"gemm: 12 at m=1: said · result m=1 repeat=1 tflops=12 note=x",
		"gemm: 705 at m=64: said · result m=64 repeat=1",
		"gemm: 13 at m=1: said · result",
		"gemm: 706 at m=64: said · result",
	}
	if len(said) != 6 {
		t.Fatalf("said %d results, want 6:\n%s", len(said), strings.Join(said, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(said[i], w) {
			t.Errorf("result %d said\n  %s\nwant it to start\n  %s", i+1, said[i], w)
		}
	}
}
