package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/greenlight-run/greenlight/record"
)

// profYAML is a capture phase repeated 3 times, each run writing one
// trace of 20 profiler steps: a GEMM kernel and an MoE one (MOE µs, a
// little noise from the repeat), and a kernel only the new build has.
const profYAML = `name: NAME
BASELINE
phases:
  - id: prof
    gpus: none
    repeat: 3
    artifacts: ['traces/*.pt.trace.json']
    steps:
      - run: |
          mkdir -p traces; f=traces/rank0.$(date +%s%N).pt.trace.json
          r=$GREENLIGHT_REPEAT; { printf '{"traceEvents": ['
          for i in $(seq 0 19); do t=$(( i * 1000 ))
            printf '{"ph":"X","cat":"user_annotation","name":"ProfilerStep#%d","pid":1,"tid":1,"ts":%d,"dur":900},' $i $t
            printf '{"ph":"X","cat":"gpu_user_annotation","name":"ProfilerStep#%d","pid":0,"tid":7,"ts":%d,"dur":800},' $i $t
            printf '{"ph":"X","cat":"kernel","name":"nvjet_tst_gemm","pid":0,"tid":7,"ts":%d,"dur":%d},' $t $(( 300 + r ))
            printf '{"ph":"X","cat":"kernel","name":"fused_moe_kernel","pid":0,"tid":7,"ts":%d,"dur":%d},' $(( t + 350 )) $(( MOE + r ))
            EXTRA
          done; printf '{"ph":"X","cat":"cpu_op","name":"end","pid":1,"tid":1,"ts":0,"dur":1}]}'; } > $f
`

func profCampaign(t *testing.T, dir, name, baseline, moe, extra string) string {
	r := strings.NewReplacer("NAME", name, "BASELINE", baseline, "MOE", moe, "EXTRA", extra)
	c := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(c, []byte(r.Replace(profYAML)), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestTraceDiffAcrossCampaigns: two campaigns' capture phases, 3
// captures each; the new build's MoE kernel is 25% slower and it runs one
// kernel more: NAME.json keeps each capture's families, the results file's
// baseline block and greenlight compare name MoE worse and the new kernel,
// and nothing else; report rebuilds the same captures.
func TestTraceDiffAcrossCampaigns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if keep := os.Getenv("KEEP"); keep != "" {
		dir = keep
	}
	c0 := profCampaign(t, dir, "prof0", "", "200", "")
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c0); code != 0 {
		t.Fatalf("prof0: exit %d\n%s", code, out)
	}
	rec, err := record.Read(filepath.Join(dir, "prof0.json"))
	if err != nil {
		t.Fatal(err)
	}
	caps := rec.Phases[0].Captures
	if len(caps) != 3 || caps[0].Steps != 20 || caps[0].StepBasis != "GPU" || caps[0].Ranks != 1 {
		t.Fatalf("prof0's captures: %+v; want 3 of 20 steps, 1 rank each", caps)
	}
	if caps[0].Name == caps[1].Name {
		t.Errorf("captures named %q and %q; want one a step's run", caps[0].Name, caps[1].Name)
	}
	extra := `printf '{"ph":"X","cat":"kernel","name":"extra_scan_kernel","pid":0,"tid":7,"ts":%d,"dur":40},' $(( t + 700 ))`
	c1 := profCampaign(t, dir, "prof1", "baseline: prof0.md", "250", extra)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c1); code != 0 {
		t.Fatalf("prof1: exit %d\n%s", code, out)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "prof1.md"))
	block := string(md)
	if i := strings.Index(block, "**Which kernels changed in prof**"); i < 0 {
		t.Fatalf("the baseline block has no trace diff:\n%s", md)
	} else {
		block = block[i:]
		if j := strings.Index(block, "\n## "); j > 0 {
			block = block[:j]
		}
	}
	for _, want := range []string{"| MoE | 0.202 | 0.252 | +0.050", "| worse |", "| extra_scan_kernel | 0 | 0.040 |", "| new |", "ms per step"} {
		if !strings.Contains(block, want) {
			t.Errorf("the trace diff lacks %q:\n%s", want, block)
		}
	}
	for _, ln := range strings.Split(block, "\n") {
		if strings.HasPrefix(ln, "| GEMM |") || strings.HasPrefix(ln, "| nvjet_tst_gemm |") {
			if !strings.HasSuffix(ln, "| within noise |") {
				t.Errorf("the GEMM, unchanged, reads %q; want within noise", ln)
			}
		}
	}
	arts := string(md)[strings.Index(string(md), "### Artifacts"):]
	arts = arts[:strings.Index(arts, "total:")]
	if n := strings.Count(arts, "/traces/rank0."); n != 3 {
		t.Errorf("prof1 lists %d traces; want its own 3 (prof0's, written just before, are not its)", n)
	}
	out, code := runBin(t, dir, "compare", "prof0.json", "prof1.json")
	if code != 0 || !strings.Contains(out, "which kernels changed in prof") || !strings.Contains(out, "MoE +0.050") {
		t.Errorf("compare: exit %d\n%s", code, out)
	}
	// report rebuilds the record's captures as the runner wrote them.
	before, _ := os.ReadFile(filepath.Join(dir, "prof1.json"))
	if out, code := runBin(t, dir, "report", c1); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "prof1.json"))
	if a, b := capturesOf(t, before), capturesOf(t, after); a != b {
		t.Errorf("report rebuilt other captures:\n%s\nthe runner's:\n%s", b, a)
	}
}

func capturesOf(t *testing.T, b []byte) string {
	var r struct {
		Phases []struct {
			Captures json.RawMessage `json:"captures"`
		} `json:"phases"`
	}
	if err := json.Unmarshal(b, &r); err != nil || len(r.Phases) == 0 {
		t.Fatalf("record: %v", err)
	}
	return string(r.Phases[0].Captures)
}
