package compare

import (
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/trace"
)

// synth is n captures of a workload whose families take base µs a step
// over 100 steps, each capture's figures spread by cv (normal).
func synth(r *rand.Rand, n int, base map[string]float64, cv float64, name string) []trace.Capture {
	var out []trace.Capture
	for i := range n {
		c := trace.Capture{Name: name, Ranks: 1, Steps: 100}
		for _, fam := range slices.Sorted(maps.Keys(base)) {
			us := base[fam]
			v := us * 100 * (1 + cv*r.NormFloat64())
			kind := trace.FamilyCategory
			if strings.HasPrefix(fam, "k:") {
				kind, fam = trace.FamilyKernel, fam[2:]
			}
			c.Families = append(c.Families, trace.Family{Kind: kind, Name: fam, US: v, Calls: 100 * 4})
			if kind == trace.FamilyCategory {
				c.KernelUS += v
			}
		}
		c.StepUS = c.KernelUS * 1.1 / c.Steps // a step's span: its kernels and the idle between
		_ = i
		out = append(out, c)
	}
	return out
}

func family(d TraceDiff, kind, name string) FamilyChange {
	for _, f := range d.Families {
		if f.Kind == kind && f.Name == name {
			return f
		}
	}
	return FamilyChange{}
}

// TestTraceDiffNamesTheSlowerFamily: a GEMM 10% slower on the new side,
// every other family as it was: the diff flags GEMM worse with an
// interval that holds the change, and nothing else; the families'
// changes add up to the step's.
func TestTraceDiffNamesTheSlowerFamily(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	base := map[string]float64{"GEMM": 2000, "attention": 800, "MoE": 3000, "communication": 1500, "k:nvjet_gemm": 2000, "k:fused_moe": 3000}
	slow := map[string]float64{}
	for k, v := range base {
		slow[k] = v
	}
	slow["GEMM"], slow["k:nvjet_gemm"] = 2200, 2200
	d := DiffCaptures("a", synth(r, 5, base, 0.005, "a"), "b", synth(r, 5, slow, 0.005, "b"))
	if d.Per != "step" {
		t.Errorf("per %q; want step (the captures mark steps)", d.Per)
	}
	g := family(d, trace.FamilyCategory, "GEMM")
	if g.Verdict != Worse || g.Lo > 0.2 || g.Hi < 0.2 {
		t.Errorf("GEMM %+v; want worse, its interval holding +0.2 ms", g)
	}
	if k := family(d, trace.FamilyKernel, "nvjet_gemm"); k.Verdict != Worse {
		t.Errorf("kernel nvjet_gemm %s; want worse", k.Verdict)
	}
	for _, f := range d.Flagged() {
		if f.Name != "GEMM" && f.Name != "nvjet_gemm" {
			t.Errorf("%s %s flagged %s (p %.3g); want within noise", f.Kind, f.Name, f.Verdict, f.P)
		}
	}
	if math.Abs(d.Unexplained-(d.Step.Delta-d.Kernels.Delta)) > 1e-9 {
		t.Errorf("unexplained %.4f; want the step's change less the categories' (%.4f)", d.Unexplained, d.Step.Delta-d.Kernels.Delta)
	}
	if s := d.Summary(); !regexp.MustCompile(`^step \+0\.\d+ ± 0\.\d+ ms per step \(worse\): GEMM \+0\.[12]\d* ± 0\.\d+, unexplained`).MatchString(s) {
		t.Errorf("summary %q", s)
	}
	md := d.Markdown(0)
	for _, want := range []string{"| GEMM | 2.00 | 2.20 | +0.202 ± 0.018 | 4.00 → 4.00 | 27.4 % | worse |", "Holm", "| Kernel |", "| attention | 0.802 | 0.797 | −0.0057 ± 0.0053 | 4.00 → 4.00 | 11.0 % | within noise |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// TestTraceDiffOneCaptureASide: no interval, raw differences, said.
func TestTraceDiffOneCaptureASide(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	base := map[string]float64{"GEMM": 2000, "attention": 800}
	d := DiffCaptures("a", synth(r, 1, base, 0.01, "a"), "b", synth(r, 1, base, 0.01, "b"))
	for _, f := range d.Families {
		if f.Verdict != Raw || !math.IsNaN(f.Lo) {
			t.Errorf("%s: %s %v; want a raw difference, no interval", f.Name, f.Verdict, f.Lo)
		}
	}
	if !strings.Contains(strings.Join(d.Notes, " "), "no interval can be given") {
		t.Errorf("notes %q; want it said that no interval can be given", d.Notes)
	}
}

// TestTraceDiffNewAndGone: a kernel on one side only is new or gone,
// named, whatever the noise.
func TestTraceDiffNewAndGone(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	d := DiffCaptures("a", synth(r, 3, map[string]float64{"GEMM": 100, "k:old_kernel": 5}, 0.01, "a"),
		"b", synth(r, 3, map[string]float64{"GEMM": 100, "k:extra_softmax": 7}, 0.01, "b"))
	if f := family(d, trace.FamilyKernel, "old_kernel"); f.Verdict != Gone {
		t.Errorf("old_kernel %s; want gone", f.Verdict)
	}
	if f := family(d, trace.FamilyKernel, "extra_softmax"); f.Verdict != New || f.CallsNew != 4 {
		t.Errorf("extra_softmax %s, calls %v; want new, 4 a step", f.Verdict, f.CallsNew)
	}
}

// TestTraceDiffWithoutSteps: captures that mark no steps are compared
// per capture, and that is said.
func TestTraceDiffWithoutSteps(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	a, b := synth(r, 3, map[string]float64{"GEMM": 100}, 0.01, "a"), synth(r, 3, map[string]float64{"GEMM": 100}, 0.01, "b")
	a[0].Steps = 0
	d := DiffCaptures("a", a, "b", b)
	if d.Per != "capture" || !strings.Contains(strings.Join(d.Notes, " "), "mark no profiler steps") {
		t.Errorf("per %q, notes %q; want per capture, said", d.Per, d.Notes)
	}
}

// TestFolderCapturesGroupsRanks: traces in subfolders are a capture a
// folder; loose ones are grouped where a rank comes again.
func TestFolderCapturesGroupsRanks(t *testing.T) {
	src, err := os.ReadFile("../trace/testdata/rank0.1796288149011725086.pt.trace.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range []string{"c1/rank0.1.pt.trace.json.gz", "c1/rank1.1.pt.trace.json.gz", "c2/rank0.2.pt.trace.json.gz"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(dir, f), src, 0o644)
	}
	caps, err := FolderCaptures(dir, nil, func(string) {})
	if err != nil || len(caps) != 2 || caps[0].Ranks != 2 || caps[1].Ranks != 1 {
		t.Fatalf("captures %+v, %v; want c1 of 2 ranks and c2 of 1", caps, err)
	}
	loose := t.TempDir()
	for i, f := range []string{"rank0.1.pt.trace.json.gz", "rank1.1.pt.trace.json.gz", "rank0.2.pt.trace.json.gz", "rank1.2.pt.trace.json.gz"} {
		p := filepath.Join(loose, f)
		os.WriteFile(p, src, 0o644)
		at := os.Getpid() // any fixed base
		os.Chtimes(p, timeAt(at, i), timeAt(at, i))
	}
	caps, err = FolderCaptures(loose, nil, func(string) {})
	if err != nil || len(caps) != 2 || caps[0].Ranks != 2 || caps[1].Ranks != 2 {
		t.Fatalf("loose captures %+v, %v; want two of 2 ranks", caps, err)
	}
	if _, err := FolderCaptures(t.TempDir(), nil, func(string) {}); err == nil || !strings.Contains(err.Error(), "holds no trace") {
		t.Errorf("an empty folder: %v; want it said that it holds no trace", err)
	}
}

func timeAt(base, i int) time.Time {
	return time.Unix(int64(1_700_000_000+base%1000), 0).Add(time.Duration(i) * time.Second)
}

// TestTraceDiffLeavesACutCaptureOut: three whole captures a side and, on
// the old side, one whose trace was cut short (its GEMM a quarter less a
// step, as a trace cut in half read): the cut one is left out and said,
// and GEMM's 10% rise is found beyond noise, as it is without it.
func TestTraceDiffLeavesACutCaptureOut(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	base := map[string]float64{"GEMM": 2000, "MoE": 3000, "k:nvjet_gemm": 2000}
	slow := map[string]float64{"GEMM": 2200, "MoE": 3000, "k:nvjet_gemm": 2200}
	old := synth(r, 3, base, 0.005, "old")
	cut := synth(r, 1, map[string]float64{"GEMM": 1500, "MoE": 2250, "k:nvjet_gemm": 1500}, 0.005, "old-cut")[0]
	cut.Cut = "rank 0: the trace ends mid-event"
	d := DiffCaptures("old", append(old, cut), "new", synth(r, 3, slow, 0.005, "new"))
	if g := family(d, trace.FamilyCategory, "GEMM"); g.Verdict != Worse {
		t.Errorf("GEMM %+v; want worse beyond noise", g)
	}
	if d.OldN != 3 || !slices.ContainsFunc(d.Notes, func(n string) bool {
		return strings.Contains(n, "old-cut (the old side) was read only in part") && strings.Contains(n, "left out")
	}) {
		t.Errorf("old side %d captures; notes %q", d.OldN, d.Notes)
	}
	// Every capture of a side cut: kept, and said.
	allCut := synth(r, 2, base, 0.005, "c")
	for i := range allCut {
		allCut[i].Cut = "cut"
	}
	d = DiffCaptures("old", allCut, "new", synth(r, 3, slow, 0.005, "new"))
	if d.OldN != 2 || !slices.ContainsFunc(d.Notes, func(n string) bool { return strings.Contains(n, "every capture of that side is") }) {
		t.Errorf("all cut: %d captures; notes %q", d.OldN, d.Notes)
	}
}

// TestTraceDiffNamesKernelsAlike: the old captures run two copies of one
// template, the new ones only one of them: the kept copy reads the same
// on both sides (not gone and new under two names), each name keeps the
// copy it runs, and the markdown gives the full names.
func TestTraceDiffNamesKernelsAlike(t *testing.T) {
	copy2 := "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&)::{lambda(int)#1}>(int)"
	copy4 := strings.Replace(copy2, "<128, 2,", "<128, 4,", 1)
	mk := func(name string, fams map[string]float64) trace.Capture {
		c := trace.Capture{Name: name, Ranks: 1, Steps: 10, StepUS: 500}
		for full, us := range fams {
			c.Families = append(c.Families, trace.Family{Kind: trace.FamilyKernel, Name: trace.Short(full), Full: full, US: us, Calls: 10})
			c.KernelUS += us
		}
		return c
	}
	var old, new []trace.Capture
	for i := range 3 {
		old = append(old, mk("old", map[string]float64{copy2: 1000 + float64(i), copy4: 500 + float64(i)}))
		new = append(new, mk("new", map[string]float64{copy2: 1000 + float64(i)}))
	}
	d := DiffCaptures("old", old, "new", new)
	var kernels []FamilyChange
	for _, f := range d.Families {
		if f.Kind == trace.FamilyKernel {
			kernels = append(kernels, f)
		}
	}
	if len(kernels) != 2 {
		t.Fatalf("kernel families %+v; want 2", kernels)
	}
	for _, f := range kernels {
		if !strings.HasPrefix(f.Name, "elementwise_kernel<direct_copy_kernel_cuda>") {
			t.Errorf("%q does not say the copy it runs", f.Name)
		}
		if f.Full == copy2 && f.Verdict != Noise {
			t.Errorf("the kept copy %q: %s; want within noise, on both sides", f.Name, f.Verdict)
		}
		if f.Full == copy4 && f.Verdict != Gone {
			t.Errorf("the dropped copy %q: %s; want gone", f.Name, f.Verdict)
		}
	}
	if md := d.Markdown(0); !strings.Contains(md, "The kernels' full names") || !strings.Contains(md, "elementwise_kernel<128, 4,") {
		t.Errorf("the markdown lacks the full names:\n%s", md)
	}
}
