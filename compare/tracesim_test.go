package compare

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/greenlight-run/greenlight/trace"
)

// The trace diff against real noise: captures made by torch.profiler on
// an H100 (scripts/capture-diff.py: a 4-layer decoder, 40 decode steps a
// capture; base twice, in two processes, and two changed builds), kept as
// their summaries in testdata/h100-captures.json. Rebuild it from the
// traces with GREENLIGHT_CAPTURES_FROM=DIR (DIR/base, base2, widek, extra).
const capturesFixture = "testdata/h100-captures.json"

func TestWriteCaptureFixture(t *testing.T) {
	from := os.Getenv("GREENLIGHT_CAPTURES_FROM")
	if from == "" {
		t.Skip("GREENLIGHT_CAPTURES_FROM names no folder of captures: the kept fixture stands")
	}
	out := map[string][]trace.Capture{}
	for _, v := range []string{"base", "base2", "widek", "extra"} {
		caps, err := FolderCaptures(filepath.Join(from, v), nil, func(string) {})
		if err != nil {
			t.Fatal(err)
		}
		out[v] = caps
	}
	b, _ := json.MarshalIndent(out, "", " ")
	if err := os.WriteFile(capturesFixture, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func realCaptures(t *testing.T) map[string][]trace.Capture {
	b, err := os.ReadFile(capturesFixture)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string][]trace.Capture
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m["base"]) != 10 || len(m["widek"]) != 5 || len(m["extra"]) != 5 {
		t.Fatalf("the fixture holds %d, %d, %d captures; want 10, 5, 5", len(m["base"]), len(m["widek"]), len(m["extra"]))
	}
	return m
}

// TestTraceDiffOnARealGPU: a build whose MLP reads a larger inner
// dimension is flagged in GEMM and no other category, the kernel that
// changed most being the down projection's; a build with an extra kernel
// names it new; the same build in another process flags nothing.
func TestTraceDiffOnARealGPU(t *testing.T) {
	m := realCaptures(t)
	flagged := func(d TraceDiff, kind string) []string {
		var out []string
		for _, f := range d.Flagged() {
			if f.Kind == kind {
				out = append(out, f.Name+" "+string(f.Verdict))
			}
		}
		return out
	}
	wide := DiffCaptures("base", m["base"][:5], "widek", m["widek"])
	if got := flagged(wide, trace.FamilyCategory); !slices.Equal(got, []string{"GEMM worse"}) {
		t.Errorf("a larger inner dimension: categories flagged %v; want GEMM worse alone\n%s", got, wide.Text())
	}
	if k := flagged(wide, trace.FamilyKernel); len(k) == 0 || !strings.Contains(k[0], "worse") {
		t.Errorf("kernels flagged %v; want the down projection's GEMM worse first", k)
	}
	extra := DiffCaptures("base", m["base"][:5], "extra", m["extra"])
	if got := flagged(extra, trace.FamilyKernel); len(got) == 0 || got[0] != "tensor_kernel_scan_innermost_dim new" {
		t.Errorf("an extra kernel: kernels flagged %v; want the scan kernel new first\n%s", got, extra.Text())
	}
	if got := flagged(extra, trace.FamilyCategory); !slices.Equal(got, []string{"other new"}) {
		t.Errorf("an extra kernel: categories flagged %v; want its category (other) new alone", got)
	}
	same := DiffCaptures("base", m["base"][:5], "base2", m["base2"])
	if got := same.Flagged(); len(got) != 0 {
		t.Errorf("one build in two processes: flagged %+v; want nothing\n%s", got, same.Text())
	}
}

// TestTraceDiffSimulation: over the real captures of one server (base's
// 10), split at random into two sets of 5: comparing the build with
// itself flags at most 5% of the families; a 3% slowdown of one family
// on one side is caught in at least 90% of the trials.
func TestTraceDiffSimulation(t *testing.T) {
	base := realCaptures(t)["base"]
	r := rand.New(rand.NewPCG(57, 57))
	const trials = 400
	families, falseFlags := 0, 0
	caught, tried := 0, 0
	for range trials {
		idx := r.Perm(len(base))
		a, b := pick(base, idx[:5]), pick(base, idx[5:])
		d := DiffCaptures("a", a, "b", b)
		families += len(d.Families)
		falseFlags += len(d.Flagged())
		// The slowdown, in one family (a category or a kernel, however
		// small) of the captures of b.
		target := b[0].Families[r.IntN(len(b[0].Families))]
		slow := make([]trace.Capture, len(b))
		for i, c := range b {
			c.Families = slices.Clone(c.Families)
			for j, f := range c.Families {
				if f.Kind == target.Kind && f.Name == target.Name {
					c.Families[j].US *= 1.03
				}
			}
			slow[i] = c
		}
		d = DiffCaptures("a", a, "b", slow)
		tried++
		for _, f := range d.Flagged() {
			if f.Kind == target.Kind && f.Name == target.Name && f.Verdict == Worse {
				caught++
			}
		}
	}
	fp := float64(falseFlags) / float64(families)
	power := float64(caught) / float64(tried)
	t.Logf("%d trials over %d real captures: %.2f%% of families flagged comparing the build with itself; a 3%% slowdown caught in %.1f%%", trials, len(base), 100*fp, 100*power)
	if fp > 0.05 {
		t.Errorf("%.2f%% of families flagged on the build against itself; want at most 5%%", 100*fp)
	}
	if power < 0.90 {
		t.Errorf("a 3%% slowdown caught in %.1f%% of trials; want at least 90%%", 100*power)
	}
}

func pick(cs []trace.Capture, idx []int) []trace.Capture {
	out := make([]trace.Capture, len(idx))
	for i, j := range idx {
		out[i] = cs[j]
	}
	return out
}
