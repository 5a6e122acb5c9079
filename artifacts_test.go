package main

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/runner/state"
)

// Artifacts belong to the step that made them (runner/claims.go): phases
// that share an artifacts folder, and copies of a phase under a swept
// service whose server writes every setting's traces into one folder,
// each keep their own files; `greenlight report` pairs, summarises and
// lists exactly as the runner did.

// postStandIn is `curl -X POST URL`: exit 0 on a 2xx answer.
func postStandIn(u string) int {
	resp, err := http.Post(u, "text/plain", nil)
	if err != nil {
		fmt.Println("post:", err)
		return 1
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		fmt.Println("post:", resp.Status)
		return 1
	}
	return 0
}

// benchBlock is vllm bench's printed block for a throughput, as a step's
// shell prints it.
func benchBlock(tput string) string {
	return `printf '============ Serving Benchmark Result ============\nSuccessful requests:  8\nOutput token throughput (tok/s):  %s\n==================================================\n' "` + tput + `"`
}

// csvRows reads a phase's CSV: its header and rows.
func csvRows(t *testing.T, path string) (header []string, rows [][]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(path), err)
	}
	defer f.Close()
	all, err := csv.NewReader(f).ReadAll()
	if err != nil || len(all) == 0 {
		t.Fatalf("%s: %v (%d lines)", filepath.Base(path), err, len(all))
	}
	return all[0], all[1:]
}

func column(t *testing.T, header []string, row []string, name string) string {
	t.Helper()
	for i, h := range header {
		if h == name && i < len(row) {
			return row[i]
		}
	}
	t.Fatalf("no column %q in %v", name, header)
	return ""
}

// phaseBlock is a phase's block of the record.
func phaseBlock(md, id string) string {
	begin := "<!-- greenlight:begin phase:" + id + " -->"
	i := strings.Index(md, begin)
	if i < 0 {
		return ""
	}
	j := strings.Index(md[i:], "<!-- greenlight:end phase:"+id+" -->")
	if j < 0 {
		return md[i:]
	}
	return md[i : i+j]
}

// recordOf is every file of a record beside its campaign file, normalised
// (the time it was written left out).
func recordOf(t *testing.T, dir, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, pat := range []string{name + ".md", name + ".json", name + ".*.csv", name + ".*.svg"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, f := range m {
			out[filepath.Base(f)] = normalise(filepath.Base(f), readFile(t, f))
		}
	}
	return out
}

// sameRecord says how report's rebuild differs from the runner's record.
func sameRecord(t *testing.T, live, rebuilt map[string]string) {
	t.Helper()
	for f, body := range live {
		got, ok := rebuilt[f]
		switch {
		case !ok:
			t.Errorf("report dropped %s", f)
		case got != body:
			t.Errorf("report rebuilt %s differently:\n%s", f, firstDiff(body, got))
		}
	}
	for f := range rebuilt {
		if _, ok := live[f]; !ok {
			t.Errorf("report wrote %s, which the runner did not", f)
		}
	}
}

// TestPhasesShareABenchFolder: two phases list one artifacts glob, each
// runs vllm bench with --save-result into it. Each row pairs its block
// with its own file; report rebuilds the same record.
func TestPhasesShareABenchFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := filepath.Join(dir, "share.yaml")
	step := func(file, tput, ttft string) string {
		return `      - results: {format: vllm-bench}
        run: |
          mkdir -p bench
          ` + benchBlock(tput) + `
          echo '{"output_throughput": ` + tput + `, "mean_ttft_ms": ` + ttft + `, "num_prompts": 8}' > bench/` + file + `
`
	}
	os.WriteFile(c, []byte(`name: share
phases:
  - id: a
    gpus: none
    artifacts: ['bench/*.json']
    steps:
`+step("a.json", "111.5", "11")+`  - id: b
    needs: [a]
    gpus: none
    artifacts: ['bench/*.json']
    steps:
`+step("b.json", "222.5", "22")), 0o644)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	for _, want := range []struct{ phase, file, tput, ttft, other string }{{"a", "a.json", "111.5", "11", "b.json"}, {"b", "b.json", "222.5", "22", "a.json"}} {
		header, rows := csvRows(t, filepath.Join(dir, "share."+want.phase+".csv"))
		if len(rows) != 1 {
			t.Errorf("%s: %d rows, want its one run's: %v", want.phase, len(rows), rows)
			continue
		}
		if got := column(t, header, rows[0], "file"); got != want.file {
			t.Errorf("%s's row is labelled file %q, want %q", want.phase, got, want.file)
		}
		if got := column(t, header, rows[0], "output_token_throughput_tok_s"); got != want.tput {
			t.Errorf("%s's row has throughput %s, want %s", want.phase, got, want.tput)
		}
		if got := column(t, header, rows[0], "mean_ttft_ms"); got != want.ttft {
			t.Errorf("%s's row has mean_ttft_ms %s (its file's), want %s", want.phase, got, want.ttft)
		}
		md := readFile(t, filepath.Join(dir, "share.md"))
		block := phaseBlock(md, want.phase)
		if !strings.Contains(block, "bench/"+want.file) || strings.Contains(block, "bench/"+want.other+"`: ") {
			t.Errorf("%s's Artifacts should list bench/%s and not bench/%s:\n%s", want.phase, want.file, want.other, block)
		}
	}
	live := recordOf(t, dir, "share")
	if out, code := runBin(t, dir, "report", c); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	sameRecord(t, live, recordOf(t, dir, "share"))
}

// TestCaptureUnderASweptServiceSharesTheTraceFolder: a server whose
// profiler folder is set once, at its start, writes each setting's trace
// into one folder; the profile phase's copy under each setting summarises
// and lists its own trace and --save-result file alone, its flush counts
// its own, nothing is said deleted that is there, and report rebuilds the
// same record.
func TestCaptureUnderASweptServiceSharesTheTraceFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe, _ := os.Executable()
	fixture, _ := filepath.Abs("trace/testdata/rank0.1796288149011725086.pt.trace.json.gz")
	port := freePort(t)
	post := func(path string) string {
		return fmt.Sprintf("GREENLIGHT_TEST_POST=http://127.0.0.1:%d/%s %q", port, path, exe)
	}
	c := filepath.Join(dir, "sw.yaml")
	os.WriteFile(c, []byte(fmt.Sprintf(`name: sw
phases:
  - id: serve
    sweep: {max_num_seqs: [128, 256]}
    service:
      run: |
        echo "max_num_seqs ${max_num_seqs}"
        GREENLIGHT_TEST_TRACE_DIR=traces GREENLIGHT_TEST_TRACE_SRC=%q GREENLIGHT_TEST_SERVE=%d exec %q
      ready: {http: "http://127.0.0.1:%d/health", timeout: 30s}
  - id: profile
    needs: [serve]
    gpus: none
    capture: {ranks: 1, stall: 5s}
    artifacts: ['traces/*.pt.trace.json.gz', 'bench/*.json']
    steps:
      - results: {format: vllm-bench}
        wait_quiet: 500ms
        run: |
          %s
          mkdir -p bench
          %s
          echo "{\"output_throughput\": ${max_num_seqs}.5, \"max_num_seqs\": ${max_num_seqs}}" > bench/vllm-$(date +%%s%%N).json
          %s
  - id: decode
    needs: [serve]
    gpus: none
    sweep: {c: [1, 2]}
    steps:
      - results: {format: vllm-bench}
        run: |
          %s
`, fixture, port, exe, port, post("start_profile"), benchBlock("${max_num_seqs}.5"), post("stop_profile"), benchBlock("$(( ${c} * 100 + ${max_num_seqs} ))"))), 0o644)
	out, code := runBin(t, dir, "validate", c)
	if code != 0 || !strings.Contains(out, "Warning: the copies of profile under each setting of serve share artifacts: traces/*.pt.trace.json.gz, bench/*.json") {
		t.Errorf("validate should warn that the copies share their folders (exit %d):\n%s", code, out)
	}
	out, code = runBin(t, dir, "run", "--plain", "--gpu", "none", c)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	// Each copy's flush counts its own trace, not the other setting's.
	if n := strings.Count(out, ": flushing traces: 1 of 1 ranks"); n != 2 || strings.Contains(out, "flushing traces: 2 of 1 ranks") {
		t.Errorf("each copy's flush should count its one trace (%d said so):\n%s", n, out)
	}
	// and its own bytes: the second setting's line read both traces'.
	if sizes := regexp.MustCompile(`: flushing traces: 1 of 1 ranks · ([^·\n]+)`).FindAllStringSubmatch(out, -1); len(sizes) == 2 && sizes[0][1] != sizes[1][1] {
		t.Errorf("each copy's flush should count its own trace's bytes (%q, then %q):\n%s", sizes[0][1], sizes[1][1], out)
	}
	traces, _ := filepath.Glob(filepath.Join(dir, "traces", "*.pt.trace.json.gz"))
	if len(traces) != 2 {
		t.Fatalf("the server wrote %d traces, want one a setting", len(traces))
	}
	md := readFile(t, filepath.Join(dir, "sw.md"))
	if strings.Contains(md, "was deleted after it was summarised") {
		t.Errorf("a trace that is there is said deleted:\n%s", md)
	}
	for _, seqs := range []string{"128", "256"} {
		block := phaseBlock(md, "profile."+seqs)
		if block == "" {
			t.Fatalf("no block for profile.%s:\n%s", seqs, md)
		}
		if !strings.Contains(block, "From 1 trace (rank 0)") {
			t.Errorf("profile.%s should summarise its own one trace:\n%s", seqs, block)
		}
		if n := len(regexp.MustCompile("`[^`]*traces/rank0\\.[0-9]+\\.pt\\.trace\\.json\\.gz`: ").FindAllString(block, -1)); n != 1 {
			t.Errorf("profile.%s lists %d traces among its artifacts, want 1:\n%s", seqs, n, block)
		}
		if n := len(regexp.MustCompile("`[^`]*bench/vllm-[0-9]+\\.json`: ").FindAllString(block, -1)); n != 1 {
			t.Errorf("profile.%s lists %d bench files among its artifacts, want 1:\n%s", seqs, n, block)
		}
		header, rows := csvRows(t, filepath.Join(dir, "sw.profile."+seqs+".csv"))
		if len(rows) != 1 {
			t.Errorf("profile.%s: %d rows, want 1: %v", seqs, len(rows), rows)
			continue
		}
		if got := column(t, header, rows[0], "output_token_throughput_tok_s"); got != seqs+".5" {
			t.Errorf("profile.%s's row has throughput %s, want %s.5", seqs, got, seqs)
		}
	}
	live := recordOf(t, dir, "sw")
	if out, code := runBin(t, dir, "report", c); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	sameRecord(t, live, recordOf(t, dir, "sw"))
	if out, code := runBin(t, dir, "note", c, "looked at"); code != 0 {
		t.Fatalf("note: exit %d\n%s", code, out)
	}
	noted := recordOf(t, dir, "sw")
	delete(noted, "sw.md")
	delete(live, "sw.md")
	sameRecord(t, live, noted)

	// --fresh sets the whole record aside: every chart and CSV it embeds
	// or links, each artifact, the links of the record set aside rewritten
	// to where they are now; the folder keeps no file no record embeds.
	if out, code := runBin(t, dir, "run", "--fresh", "--plain", "--gpu", "none", c); code != 0 {
		t.Fatalf("run --fresh: exit %d\n%s", code, out)
	}
	asides, _ := filepath.Glob(filepath.Join(dir, "sw.2*"))
	if len(asides) != 1 {
		t.Fatalf("--fresh made %d folders: %v", len(asides), asides)
	}
	checkLinks(t, asides[0], "sw.md", dir)
	checkLinks(t, dir, "sw.md", "")
	if charts, _ := filepath.Glob(filepath.Join(asides[0], "sw.decode.*.svg")); len(charts) == 0 {
		t.Errorf("the across-settings charts were not set aside with the record that embeds them")
	}
}

// checkLinks: every local link and embed of the record resolves to a file
// beside it, every chart and CSV named after it beside it is linked, and
// (outside not "") no path in it names an artifact (traces/, bench/) under
// outside, where the old run's files were.
func checkLinks(t *testing.T, dir, name, outside string) {
	t.Helper()
	md := readFile(t, filepath.Join(dir, name))
	linked := map[string]bool{}
	for _, m := range regexp.MustCompile(`\]\(([^)\s]+)\)|src="([^"]+)"`).FindAllStringSubmatch(md, -1) {
		target := m[1] + m[2]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "#") {
			continue
		}
		linked[filepath.Base(target)] = true
		if _, err := os.Stat(filepath.Join(dir, target)); err != nil {
			t.Errorf("%s links %s, which is not there: %v", filepath.Join(dir, name), target, err)
		}
	}
	base := strings.TrimSuffix(name, ".md")
	for _, pat := range []string{base + ".*.svg", base + ".*.csv"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, f := range m {
			if !linked[filepath.Base(f)] {
				t.Errorf("%s is beside %s, which does not link or embed it", filepath.Base(f), filepath.Join(dir, name))
			}
		}
	}
	if outside == "" {
		return
	}
	for _, m := range regexp.MustCompile("`(/[^`]+)`").FindAllStringSubmatch(md, -1) {
		rel, _ := filepath.Rel(outside, m[1])
		if strings.HasPrefix(rel, "traces/") || strings.HasPrefix(rel, "bench/") {
			t.Errorf("%s still names %s, where the old run's file no longer is", filepath.Join(dir, name), m[1])
		}
	}
}

// TestRetriedPhaseListsItsArtifactsByAttempt: a bench phase that wrote its
// --save-result file and failed, retried, lists that file under its
// earlier attempt, not among the retry's own; report rebuilds the same.
func TestRetriedPhaseListsItsArtifactsByAttempt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := writeCampaign(t, dir, `name: again
phases:
  - id: bench
    gpus: none
    artifacts: ['bench/*.json']
    steps:
      - run: |
          mkdir -p bench
          if [ -e failed-once ]; then n=second; else n=first; fi
          echo '{"output_throughput": 1}' > bench/$n.json
          [ -e failed-once ] || { touch failed-once; exit 3; }
`)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c); code == 0 {
		t.Fatalf("run: exit 0, want the phase to fail\n%s", out)
	}
	if out, code := runBin(t, dir, "retry", c, "bench"); code != 0 {
		t.Fatalf("retry: exit %d\n%s", code, out)
	}
	var md string
	testutil.Eventually(t, 20*time.Second, "the retry to finish and its runner to end", func() bool {
		md = readFile(t, filepath.Join(dir, "again.md"))
		_, held := state.LockHolder(filepath.Join(dir, ".greenlight", "again"))
		return !held && strings.Contains(md, "Status:** finished") && strings.Contains(md, "second.json")
	})
	block := phaseBlock(md, "bench")
	at := strings.Index(block, "### Artifacts")
	if at < 0 {
		t.Fatalf("no artifacts in bench's block:\n%s", md)
	}
	arts := block[at:]
	mine, earlier, found := strings.Cut(arts, "From earlier attempts of this phase (this is attempt 2")
	if !found || !strings.Contains(mine, "bench/second.json`") || strings.Contains(mine, "first.json") ||
		!regexp.MustCompile("bench/first\\.json`: [^\\n]* · attempt 1, step 1, try 1\\n").MatchString(earlier) {
		t.Errorf("the retry's artifacts should list its own file, then the failed attempt's under its attempt:\n%s", arts)
	}
	live := recordOf(t, dir, "again")
	os.Remove(filepath.Join(dir, "again.md"))
	if out, code := runBin(t, dir, "report", c); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	sameRecord(t, live, recordOf(t, dir, "again"))
}
