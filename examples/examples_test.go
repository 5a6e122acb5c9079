package examples

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/greenlight-run/greenlight/runner/campaign"
)

// TestExamplesHoldToVLLM: every example loads as greenlight validate
// reads it, and holds to what vLLM documents and to what a night's run
// needs: `vllm bench serve` with --trust-remote-code (Kimi-K2.5 needs
// it), the model named by MODEL_DIR everywhere, no `2>/dev/null ||` that
// hides an error and runs a command again, a profiled run never judged
// (its expectations are the unprofiled run's), an nsys capture driven by
// /start_profile through --profiler-config's cuda profiler with each
// curl's failure stopping the step, no guessed sleep before a Ray cluster
// is up, and a login-node client of a Slurm campaign holding no GPU.
func TestExamplesHoldToVLLM(t *testing.T) {
	files, _ := filepath.Glob("*.yaml")
	if len(files) < 5 {
		t.Fatalf("examples: %v", files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		abs, _ := filepath.Abs(f)
		p, err := campaign.Parse(f, abs, b)
		if err != nil {
			t.Errorf("%s does not validate: %v", f, err)
			continue
		}
		text := string(b)
		for _, bad := range []struct{ re, why string }{
			{`2>/dev/null \|\|`, "hides an error and runs the command again"},
			{`"\$MODEL"|\$\{MODEL\}`, "names the model by MODEL: MODEL_DIR names it everywhere"},
			{`ray start[^\n]*\n\s*sleep \d+`, "guesses how long the Ray cluster takes to come up"},
		} {
			if regexp.MustCompile(bad.re).MatchString(text) {
				t.Errorf("%s: %q %s", f, regexp.MustCompile(bad.re).FindString(text), bad.why)
			}
		}
		onSlurm := false
		for _, ph := range p.Phases {
			onSlurm = onSlurm || ph.Slurm != nil
		}
		for _, ph := range p.Phases {
			for _, st := range ph.AllSteps() {
				if strings.Contains(st.Run, "vllm bench serve") && !strings.Contains(st.Run, "--trust-remote-code") {
					t.Errorf("%s: %s: vllm bench serve without --trust-remote-code", f, ph.ID)
				}
				profiled := strings.Contains(strings.ToLower(st.Label()), "under the profiler")
				if profiled && (len(st.Expect) > 0 || len(ph.Expect) > 0) {
					t.Errorf("%s: %s: the profiled run %q is judged: judge the unprofiled one", f, ph.ID, st.Label())
				}
				if strings.Contains(st.Run, "nsys profile") {
					if !strings.Contains(st.Run, `--profiler-config '{"profiler": "cuda"}'`) || !strings.Contains(st.Run, "--capture-range=cudaProfilerApi") {
						t.Errorf("%s: %s: nsys's capture range is not driven by /start_profile (--profiler-config cuda)", f, ph.ID)
					}
					if !strings.Contains(st.Run, "set -e") && !strings.Contains(st.Run, "start_profile ||") {
						t.Errorf("%s: %s: a failed curl to the profiler goes unnoticed", f, ph.ID)
					}
				}
			}
			if onSlurm && ph.Slurm == nil && ph.Service == nil && (ph.GPUs == nil || len(ph.GPUs) > 0) {
				t.Errorf("%s: %s runs on the login node and holds its GPUs: write gpus: none", f, ph.ID)
			}
		}
	}
}
