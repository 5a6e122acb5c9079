package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/report"
)

// budgetCampaign is Kimi-K2.5 served tensor-parallel 8 (its config.json:
// hidden size 7168, 61 layers, bf16 activations), an interconnect phase
// that reads the tables given (cat of saved nccl-tests output), and a
// decode grid at batch 1, 8 and 64 whose TPOT is 19.8, 22 and 41 ms.
func budgetCampaign(t *testing.T, dir, name, extra string, tables ...string) (string, *record.Floor) {
	t.Helper()
	y := `name: ` + name + `
phases:
  - id: serve
    gpus: none
    service:
      run: |
        echo "vllm serve kimi --tensor-parallel-size 8"
        echo "(VllmWorker rank=1 pid=1410768) WARNING 05-02 07:54:19 [custom_all_reduce.py:136] Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs. To silence this warning, specify disable_custom_all_reduce=True explicitly."
        echo up; exec sleep 60
      ready: {log: up}
      model: kimi
  - id: interconnect
    gpus: none
    steps:
`
	for _, tb := range tables {
		y += `      - results: {format: nccl-tests}
        run: |
          cat ` + tb + `
`
	}
	y += `  - id: decode
    needs: [serve]
    after: [interconnect]
    gpus: none
    sweep: {c: [1, 8, 64]}
    floor:
      batch: c
      context: 1024
      tpot: mean_tpot_ms
    steps:
      - run: |
          case ${c} in 1) t=19.8;; 8) t=22;; *) t=41;; esac
          echo "{\"mean_tpot_ms\": $t}" >> "$GREENLIGHT_RESULTS"
` + extra
	c := filepath.Join(dir, name+".yaml")
	os.WriteFile(c, []byte(y), 0o644)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "fake:8:h100", c); code != 0 {
		t.Fatalf("%s: exit %d\n%s", name, code, out)
	}
	md := readFile(t, filepath.Join(dir, name+".md"))
	rec, err := record.Read(filepath.Join(dir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rec.Phases {
		if p.Floor != nil {
			return md, p.Floor
		}
	}
	t.Fatalf("%s: no floor in the record:\n%s", name, md)
	return "", nil
}

// TestDecodeBudget: each decode row's TPOT term by term against an 8-GPU
// curve of an 8× RTX PRO 6000 PCIe box with NCCL's defaults (24 µs flat
// to 64 KiB, 22.2 GB/s bus bandwidth at 1 MiB), checked by hand: a step
// makes 2 × 61 + 1 = 123 all-reduces of batch × 7168 × 2 bytes; batch 1
// (14 KiB) and 8 (112 KiB) are latency-bound, batch 64 (896 KiB) is
// bandwidth-bound; the terms add up to TPOT; the campaign's verdict says
// which batches each bound holds at; the record embeds the stacked bars.
func TestDecodeBudget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	kimiFolder(t, dir)
	table, _ := os.ReadFile("runner/testdata/all_reduce_perf_8_pcie.txt")
	os.WriteFile(filepath.Join(dir, "bus8.txt"), table, 0o644)
	// A capture on the same server at batch 8 (vllm bench's
	// max_concurrency in its row): one 2 ms all-reduce a profiler step,
	// 40% under the 3.335 ms predicted.
	md, fl := budgetCampaign(t, dir, "budget", `  - id: prof
    needs: [serve]
    after: [decode]
    gpus: none
    artifacts: ['traces/*.pt.trace.json']
    steps:
      - run: |
          echo '{"max_concurrency": 8, "mean_tpot_ms": 23}' >> "$GREENLIGHT_RESULTS"
          `+arTrace(0, 2001), "bus8.txt")
	// By hand, from the table's out-of-place times: log-log between the
	// sizes either side of the message.
	between := func(s, s0, t0, s1, t1 float64) float64 {
		return t0 * math.Pow(t1/t0, math.Log(s/s0)/math.Log(s1/s0))
	}
	want := []struct {
		batch   int
		tpot    float64
		callUS  float64
		bound   string
		message float64
	}{
		{1, 19.8, 24, "all-reduce latency", 14336},
		{8, 22, between(114688, 65536, 24, 131072, 27.91), "all-reduce latency", 114688},
		{64, 41, between(917504, 524288, 51.37, 1048576, 82.66), "all-reduce bandwidth", 917504},
	}
	if len(fl.Points) != 3 {
		t.Fatalf("floor points %+v", fl.Points)
	}
	for i, w := range want {
		pt := fl.Points[i]
		b := pt.Budget
		if b == nil || b.AllReduce == nil {
			t.Fatalf("batch %d: no all-reduce term: %+v", w.batch, b)
		}
		ar := b.AllReduce
		near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-6*math.Max(1, math.Abs(want)) }
		if ar.Calls != 123 || ar.GPUs != 8 || ar.MessageB != w.message || !near(ar.CallUS, w.callUS) || ar.LatencyUS != 24 {
			t.Errorf("batch %d: %d calls at %d GPUs, %v B a call, %v µs (latency %v); want 123 at 8, %v B, %v µs (24)", w.batch, ar.Calls, ar.GPUs, ar.MessageB, ar.CallUS, ar.LatencyUS, w.message, w.callUS)
		}
		if !near(ar.Ms, 123*w.callUS/1000) || !near(ar.LatencyMs, 123*24.0/1000) || !near(ar.BandwidthMs, 123*(w.callUS-24)/1000) {
			t.Errorf("batch %d: all-reduce %v ms (latency %v, bandwidth %v); want %v (%v, %v)", w.batch, ar.Ms, ar.LatencyMs, ar.BandwidthMs, 123*w.callUS/1000, 2.952, 123*(w.callUS-24)/1000)
		}
		if !near(b.FloorMs+ar.Ms+b.RestMs, w.tpot) || b.TPOTms != w.tpot {
			t.Errorf("batch %d: floor %v + all-reduce %v + rest %v ≠ TPOT %v", w.batch, b.FloorMs, ar.Ms, b.RestMs, w.tpot)
		}
		if b.Bound != w.bound {
			t.Errorf("batch %d: bound %q; want %q (%s)", w.batch, b.Bound, w.bound, b.Verdict)
		}
	}
	if tr := fl.Points[1].Budget.Traced; tr == nil || tr.Phase != "prof" || math.Abs(tr.Ms-2.001) > 1e-9 || math.Round(tr.GapPct) != -40 || tr.Words == "" {
		t.Errorf("batch 8's traced all-reduce: %+v; want prof's 2.001 ms, 40%% under the prediction, said", tr)
	}
	if fl.Points[0].Budget.Traced != nil || fl.Points[2].Budget.Traced != nil {
		t.Error("a capture at batch 8 stands beside another batch's row")
	}
	if want := "Decode: latency-bound all-reduce (software) at batch 1, 8; bandwidth-bound all-reduce (the bus) at batch 64"; fl.Verdict != want {
		t.Errorf("verdict %q; want %q", fl.Verdict, want)
	}
	for _, s := range []string{
		"**Decode: latency-bound all-reduce (software) at batch 1, 8; bandwidth-bound all-reduce (the bus) at batch 64.**",
		"- batch 1: all-reduce 2.952 of 19.8 ms a token (15%; 123 calls × 24 µs at 14 KiB), latency-bound",
		"(budget.decode.budget.svg)", // the stacked bars, embedded
		"  Traced: `prof`'s capture at batch 8, 2.001 ms of all-reduce kernels a profiler step against 3.335 ms predicted (-40%). ⚠ Over 20% apart: vLLM's custom all-reduce in use",
		"vLLM's own all-reduce: custom all-reduce off, \"Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs\" (serve's log); NCCL's all-reduce, which the curve measures, is what a step pays.",
		"mean_tpot_ms 19.8 ms at c=1 · Decode: latency-bound all-reduce (software) at batch 1, 8; bandwidth-bound all-reduce (the bus) at batch 64 |", // the header's key result
	} {
		if !strings.Contains(md, s) {
			t.Errorf("the record lacks %q:\n%s", s, md[max(0, strings.Index(md, "#### Where decode time goes")):])
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "budget.decode.budget.svg")); err != nil {
		t.Errorf("the budget chart: %v", err)
	}
}

// TestDecodeBudgetSaysWhatIsNotKnown: no curve at the serving GPU count,
// a curve of one size, a batch whose message is past the curve: each
// said, with why, and no all-reduce term made up.
func TestDecodeBudgetSaysWhatIsNotKnown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	kimiFolder(t, dir)
	two, _ := os.ReadFile("runner/testdata/all_reduce_perf.txt")
	os.WriteFile(filepath.Join(dir, "bus2.txt"), two, 0o644)
	eight, _ := os.ReadFile("runner/testdata/all_reduce_perf_8_pcie.txt")
	var head, one, short []string
	for _, l := range strings.Split(string(eight), "\n") {
		f := strings.Fields(l)
		switch {
		case strings.HasPrefix(l, "#") && len(one) == 0: // the header, not the table's end
			head = append(head, l)
		case len(f) > 0 && f[0] == "65536":
			one = append(one, l)
			short = append(short, l)
		case len(f) > 0 && len(f[0]) < 7: // up to 512 KiB
			short = append(short, l)
		}
	}
	os.WriteFile(filepath.Join(dir, "one.txt"), []byte(strings.Join(append(append([]string{}, head...), one...), "\n")+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "short.txt"), []byte(strings.Join(append(append([]string{}, head...), short...), "\n")+"\n"), 0o644)
	for _, c := range []struct {
		name, table, want string
		batches           []int // the rows with no all-reduce term
	}{
		{"no8", "bus2.txt", "no all-reduce curve at 8 GPUs ran (the serving GPUs, tensor-parallel 8 in serve; the campaign's curves: 2 GPUs", []int{1, 8, 64}},
		{"one", "one.txt", "has one size (64 KiB): a call's time between sizes cannot be told", []int{1, 8, 64}},
		{"short", "short.txt", "the message at batch 64, 896 KiB, is past the 8-GPU curve's largest (512 KiB", []int{64}},
	} {
		md, fl := budgetCampaign(t, dir, c.name, "", c.table)
		if !strings.Contains(md, c.want) {
			t.Errorf("%s: the record lacks %q:\n%s", c.name, c.want, md[max(0, strings.Index(md, "#### Where decode time goes")):])
		}
		for _, pt := range fl.Points {
			b := pt.Budget
			unknown := false
			for _, n := range c.batches {
				unknown = unknown || n == pt.Batch
			}
			if unknown && (b.AllReduce != nil || b.AllReduceUnknown == "" || b.Bound != "") {
				t.Errorf("%s: batch %d: a term %+v, bound %q; want none, and why", c.name, pt.Batch, b.AllReduce, b.Bound)
			}
			if !unknown && b.AllReduce == nil {
				t.Errorf("%s: batch %d has no all-reduce term: %s", c.name, pt.Batch, b.AllReduceUnknown)
			}
			if unknown && !strings.Contains(b.Verdict, "not known") {
				t.Errorf("%s: batch %d: verdict %q", c.name, pt.Batch, b.Verdict)
			}
		}
	}
}

// kimiFolder makes dir/kimi a model folder holding Kimi-K2.5's
// config.json (hidden size 7168, 61 layers), as a service's model: names.
func kimiFolder(t *testing.T, dir string) { modelFolder(t, dir, "kimi", "kimi-k2.5.json") }

// modelFolder is a model folder name under dir holding a config.json
// from decodefloor's fixtures.
func modelFolder(t *testing.T, dir, name, config string) {
	t.Helper()
	cfg, err := os.ReadFile("internal/decodefloor/testdata/" + config)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, name), 0o755)
	os.WriteFile(filepath.Join(dir, name, "config.json"), cfg, 0o644)
}

// runDecodeFloor runs campaign y (NAME.yaml in dir) on one fake H100 to
// its end and gives its decode phase's floor as the record has it.
func runDecodeFloor(t *testing.T, dir, name, y string) *record.Floor {
	t.Helper()
	c := filepath.Join(dir, name+".yaml")
	os.WriteFile(c, []byte(y), 0o644)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "fake:1:h100", c); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	rec, err := record.Read(filepath.Join(dir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rec.Phases {
		if p.ID == "decode" {
			return p.Floor
		}
	}
	return nil
}

// TestDecodeBudgetSplitByACapture: one GPU serves a dense model (no
// all-reduce); a capture at batch 8 whose trace marks its profiler steps
// on the GPU's timeline (25 ms, 20 ms of kernels in each) splits the
// rest of that row: the GPU work beyond the floor, the idle between
// kernels; a capture that marks no steps says so and splits nothing.
func TestDecodeBudgetSplitByACapture(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	modelFolder(t, dir, "llama", "llama-3-8b.json")
	trace := func(file string, gpuSteps bool) string {
		ann := "user_annotation"
		if gpuSteps {
			ann = "gpu_user_annotation"
		}
		return fmt.Sprintf(`mkdir -p traces; f=traces/%s.pt.trace.json
          { printf '{"traceEvents": ['
          for i in $(seq 0 9); do t=$(( i * 25000 ))
            printf '{"ph":"X","cat":"%s","name":"ProfilerStep#%%d","pid":0,"tid":7,"ts":%%d,"dur":25000},' $i $t
            printf '{"ph":"X","cat":"kernel","name":"nvjet_tst_gemm","pid":0,"tid":7,"ts":%%d,"dur":12000},' $t
            printf '{"ph":"X","cat":"kernel","name":"flash_fwd_kernel","pid":0,"tid":7,"ts":%%d,"dur":8000},' $(( t + 12000 ))
          done; printf '{"ph":"X","cat":"cpu_op","name":"end","pid":1,"tid":1,"ts":0,"dur":1}]}'; } > $f
`, file, ann)
	}
	y := `name: split
phases:
  - id: serve
    gpus: none
    service:
      run: |
        echo "vllm serve llama --tensor-parallel-size 1"
        echo up; exec sleep 60
      ready: {log: up}
      model: llama
  - id: decode
    needs: [serve]
    gpus: none
    sweep: {c: [1, 8]}
    floor:
      batch: c
      context: 1024
      tpot: mean_tpot_ms
    steps:
      - run: |
          case ${c} in 1) t=20;; *) t=25;; esac
          echo "{\"mean_tpot_ms\": $t}" >> "$GREENLIGHT_RESULTS"
  - id: prof
    needs: [serve]
    after: [decode]
    gpus: none
    artifacts: ['traces/rank0.pt.trace.json']
    steps:
      - run: |
          echo '{"max_concurrency": 8, "mean_tpot_ms": 25}' >> "$GREENLIGHT_RESULTS"
          ` + trace("rank0", true) + `
  - id: hostonly
    needs: [serve]
    after: [prof]
    gpus: none
    artifacts: ['traces/host.pt.trace.json']
    steps:
      - run: |
          echo '{"max_concurrency": 1, "mean_tpot_ms": 20}' >> "$GREENLIGHT_RESULTS"
          ` + trace("host", false)
	fl := runDecodeFloor(t, dir, "split", y)
	if fl == nil || len(fl.Points) != 2 {
		t.Fatalf("decode's floor: %+v", fl)
	}
	one, eight := fl.Points[0].Budget, fl.Points[1].Budget
	cs := eight.Captured
	if cs == nil {
		t.Fatalf("batch 8's budget has no captured step: %+v", eight)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-6*math.Max(1, math.Abs(want)) }
	// By hand: a 25 ms step, 20 ms of it kernels; the floor from the
	// config at batch 8; no all-reduce on one GPU.
	floor := fl.Points[1].FloorMs
	if cs.Phase != "prof" || !near(cs.StepMs, 25) || !near(cs.BusyMs, 20) || !near(cs.IdleMs, 5) || !near(cs.OtherMs, 20-floor) || !near(cs.GapPct, 0) {
		t.Errorf("batch 8 captured: %+v; want prof's 25 ms step, 20 busy, 5 idle, %v other", cs, 20-floor)
	}
	if !near(floor+cs.OtherMs+cs.IdleMs, eight.TPOTms) {
		t.Errorf("floor %v + other %v + idle %v ≠ TPOT %v", floor, cs.OtherMs, cs.IdleMs, eight.TPOTms)
	}
	if one.Captured != nil || !strings.Contains(one.RestBasis, "the capture hostonly's steps are timed on the host only") {
		t.Errorf("batch 1's capture marks its steps on the host alone: nothing split, and said: %+v", one)
	}
	if ar := eight.AllReduce; ar == nil || ar.Calls != 0 || ar.Ms != 0 || eight.Bound != "not the all-reduce" || !strings.Contains(ar.CallsBasis, "waits for a run on two GPUs or more") {
		t.Errorf("one GPU makes no all-reduce: %+v", eight)
	}
	// greenlight report from the state dir alone writes the same record.
	live := recordOf(t, dir, "split")
	os.Remove(filepath.Join(dir, "split.md"))
	os.Remove(filepath.Join(dir, "split.json"))
	if out, code := runBin(t, dir, "report", filepath.Join(dir, "split.yaml")); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	sameRecord(t, live, recordOf(t, dir, "split"))
	md := readFile(t, filepath.Join(dir, "split.md"))
	if want := fmt.Sprintf("  Captured: `prof`'s step at batch 8 spans 25 ms on the GPU (+0%% of the TPOT), 20 ms of it busy: beyond the floor (%s ms) and the all-reduce, %s ms of other GPU work", report.FormatNumber(floor), report.FormatNumber(20-floor)); !strings.Contains(md, want) {
		t.Errorf("the record lacks %q:\n%s", want, md[max(0, strings.Index(md, "#### Where decode time goes")):])
	}
}

// TestDecodeBudgetGEMMs: one GPU serves Llama-3-8B (its config.json:
// hidden 4096, 32 layers, 32 heads of 128, 8 KV heads, MLP 14336, vocab
// 128256); a roofline phase measured its GEMM shapes at M = 1 (all five)
// and M = 8 (all but lm_head). Each row's GEMM term is checked by hand:
// each shape's time a call less its bytes over the floor's bandwidth,
// times its calls (32 a layer's, 1 lm_head); the terms add up to TPOT; a
// shape not measured at the row's M is said in the rest; a batch no
// roofline measured (64) has no GEMM term, said why.
func TestDecodeBudgetGEMMs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	modelFolder(t, dir, "llama", "llama-3-8b.json")
	type shape struct {
		name     string
		m, n, k  int
		calls    int
		ms1, ms8 float64 // measured at M = 1 and 8; 0: not measured
	}
	shapes := []shape{
		{"qkv_proj", 0, 6144, 4096, 32, 0.0250, 0.0262},
		{"o_proj", 0, 4096, 4096, 32, 0.0180, 0.0190},
		{"gate_up_proj", 0, 28672, 4096, 32, 0.0950, 0.0990},
		{"down_proj", 0, 4096, 14336, 32, 0.0500, 0.0520},
		{"lm_head", 0, 128256, 4096, 1, 0.4100, 0},
	}
	rows := ""
	for _, s := range shapes {
		for m, ms := range map[int]float64{1: s.ms1, 8: s.ms8} {
			if ms > 0 {
				rows += fmt.Sprintf("          echo '{\"m\": %d, \"n\": %d, \"k\": %d, \"time_ms\": %g}' >> \"$GREENLIGHT_RESULTS\"\n", m, s.n, s.k, ms)
			}
		}
	}
	y := `name: gemms
phases:
  - id: roof
    gpus: none
    roofline:
      flops: 2*m*n*k
      bytes: 2*(m*k + k*n + m*n)
      seconds: time_ms / 1000
      dtype: bf16
    steps:
      - run: |
` + rows + `  - id: serve
    gpus: none
    service:
      run: |
        echo "vllm serve llama --tensor-parallel-size 1"
        echo up; exec sleep 60
      ready: {log: up}
      model: llama
  - id: decode
    needs: [serve]
    after: [roof]
    gpus: none
    sweep: {c: [1, 8, 64]}
    floor:
      batch: c
      context: 1024
      tpot: mean_tpot_ms
    steps:
      - run: |
          case ${c} in 1) t=9;; 8) t=10;; *) t=14;; esac
          echo "{\"mean_tpot_ms\": $t}" >> "$GREENLIGHT_RESULTS"
`
	fl := runDecodeFloor(t, dir, "gemms", y)
	c := filepath.Join(dir, "gemms.yaml")
	if fl == nil || len(fl.Points) != 3 || fl.GBs <= 0 {
		t.Fatalf("decode's floor: %+v", fl)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-6*math.Max(1, math.Abs(want)) }
	for i, m := range []int{1, 8} {
		b := fl.Points[i].Budget
		want, measured := 0.0, 0
		for _, s := range shapes {
			ms := map[int]float64{1: s.ms1, 8: s.ms8}[m]
			if ms == 0 {
				continue
			}
			bytes := 2 * float64(m*s.k+s.k*s.n+m*s.n)
			want += float64(s.calls) * (ms*1000 - bytes/(fl.GBs*1e9)*1e6) / 1000
			measured++
		}
		g := b.GEMM
		if g == nil {
			t.Fatalf("batch %d: no GEMM term (%s)", m, b.GEMMUnknown)
		}
		if !near(g.Ms, want) || len(g.Shapes) != measured || len(g.Phases) != 1 || g.Phases[0] != "roof" {
			t.Errorf("batch %d: GEMMs %v ms over %d shapes from %v; want %v over %d from roof", m, g.Ms, len(g.Shapes), g.Phases, want, measured)
		}
		if !near(b.FloorMs+g.Ms+b.RestMs, b.TPOTms) {
			t.Errorf("batch %d: floor %v + GEMMs %v + rest %v ≠ TPOT %v", m, b.FloorMs, g.Ms, b.RestMs, b.TPOTms)
		}
		if !strings.Contains(b.Verdict, "the GEMMs "+report.FormatNumber(g.Ms)+" ms above their floor") {
			t.Errorf("batch %d's verdict: %q", m, b.Verdict)
		}
	}
	if miss := strings.Join(fl.Points[1].Budget.GEMM.Missing, "; "); !strings.Contains(miss, "lm_head 8×128256×4096") || !strings.Contains(fl.Points[1].Budget.RestBasis, "lm_head 8×128256×4096") {
		t.Errorf("batch 8's unmeasured lm_head: missing %q, rest %q", miss, fl.Points[1].Budget.RestBasis)
	}
	if b := fl.Points[2].Budget; b.GEMM != nil || !strings.Contains(b.GEMMUnknown, "at M = 64") || !near(b.FloorMs+b.RestMs, b.TPOTms) {
		t.Errorf("batch 64, measured at no M of its own: %+v", b)
	}
	// status --json and status say the same budget and verdict, read from
	// the record, not worked out again.
	out, code := runBin(t, dir, "status", "--json", c)
	var st struct {
		Phases []struct {
			ID    string        `json:"id"`
			Floor *record.Floor `json:"floor"`
		} `json:"phases"`
	}
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("status --json: exit %d, %v\n%s", code, err, out)
	}
	for _, p := range st.Phases {
		if p.ID == "decode" && (p.Floor == nil || p.Floor.Verdict != fl.Verdict || p.Floor.Points[0].Budget.GEMM == nil || p.Floor.Points[0].Budget.GEMM.Ms != fl.Points[0].Budget.GEMM.Ms) {
			t.Errorf("status --json's decode floor: %+v; want the record's, verdict %q", p.Floor, fl.Verdict)
		}
	}
	if out, _ := runBin(t, dir, "status", c); !strings.Contains(out, fl.Verdict+" (the record's budget") {
		t.Errorf("status does not say the verdict %q:\n%s", fl.Verdict, out)
	}
	// greenlight report from the state dir alone writes the same record,
	// GEMM term and all.
	live := recordOf(t, dir, "gemms")
	os.Remove(filepath.Join(dir, "gemms.md"))
	os.Remove(filepath.Join(dir, "gemms.json"))
	if out, code := runBin(t, dir, "report", c); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	sameRecord(t, live, recordOf(t, dir, "gemms"))
	md := readFile(t, filepath.Join(dir, "gemms.md"))
	for _, s := range []string{"| GEMMs above floor |", "  GEMMs: ", "qkv_proj 1×6144×4096 25 µs against", "The GEMMs' part is not known apart"} {
		if !strings.Contains(md, s) {
			t.Errorf("the record lacks %q:\n%s", s, md[max(0, strings.Index(md, "#### Where decode time goes")):])
		}
	}
}
