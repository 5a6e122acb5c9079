package report

import (
	"strings"
	"testing"

	"github.com/greenlight-run/greenlight/runner"
)

// TestArtifactsByRun: a file of a step's try since retried says so; one
// of an earlier attempt of the phase is listed under that attempt.
func TestArtifactsByRun(t *testing.T) {
	p := runner.PhaseState{ID: "b", Attempt: 2, Steps: []runner.StepState{{Index: 0, Attempt: 2}, {Index: 1, Attempt: 1}}, Artifacts: []runner.Artifact{
		{Path: "old.json", Size: 10, Step: "a1-s1-t1"},
		{Path: "failed-try.json", Size: 20, Step: "a2-s1-t1"},
		{Path: "kept.json", Size: 30, Step: "a2-s1-t2"},
		{Path: "second.json", Size: 40, Step: "a2-s2-t1"},
		{Path: "own-folder.txt", Size: 50},
	}}
	got := artifactsSection(p)
	mine, earlier, ok := strings.Cut(got, "From earlier attempts of this phase (this is attempt 2")
	for _, want := range []string{"- `failed-try.json`: 20 B · step 1's try 1, retried\n", "- `kept.json`: 30 B\n", "- `second.json`: 40 B\n", "- `own-folder.txt`: 50 B\n", "- total: 140 B in 4 files\n"} {
		if !strings.Contains(mine, want) {
			t.Errorf("this attempt's files lack %q:\n%s", want, got)
		}
	}
	if !ok || !strings.Contains(earlier, "- `old.json`: 10 B · attempt 1, step 1, try 1\n") || strings.Contains(mine, "old.json") {
		t.Errorf("the earlier attempt's file should be under its attempt:\n%s", got)
	}
}
