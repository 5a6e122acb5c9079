package main

import (
	"bytes"
	"fmt"
	"github.com/greenlight-run/greenlight/runner/link"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/demo"
	"github.com/greenlight-run/greenlight/internal/testutil"
)

// The binary is built the documented way (scripts/build), once, by the
// first test that needs it: a unit test of the root does not wait for cgo.
var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// binary is greenlight built by scripts/build.
func binary(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "greenlight-bin")
		if built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "greenlight")
		if out, err := exec.Command("./scripts/build", built.path).CombinedOutput(); err != nil {
			built.err = fmt.Errorf("scripts/build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// ownerEnv marks every process the tests start (greenlight, its runners,
// their steps): TestMain finds the runners that outlived the tests by it.
const ownerEnv = "GREENLIGHT_TEST_OWNER"

func TestMain(m *testing.M) {
	if n := os.Getenv("GREENLIGHT_TEST_BURST"); n != "" {
		os.Exit(burst(n)) // the test binary as a step that writes results fast
	}
	if port := os.Getenv("GREENLIGHT_TEST_SERVE"); port != "" {
		os.Exit(serveStandIn(port)) // the test binary as a vLLM server: /health, /metrics
	}
	if port := os.Getenv("GREENLIGHT_TEST_DCGM"); port != "" {
		os.Exit(dcgmStandIn(port)) // the test binary as a node's dcgm-exporter
	}
	if u := os.Getenv("GREENLIGHT_TEST_POST"); u != "" {
		os.Exit(postStandIn(u)) // the test binary as `curl -X POST URL`
	}
	if os.Getenv("GREENLIGHT_TEST_DECODE") != "" {
		os.Exit(decodeStandIn(os.Args[1:])) // the test binary as scripts/decode_load.py
	}
	testutil.WaitBoundParallel(8) // the demos and windows wait, they do not compute
	owner := strconv.Itoa(os.Getpid())
	os.Setenv(ownerEnv, owner)
	code := m.Run()
	// A test stops what it started: a runner still there a few seconds
	// after the last test (its campaign's end said, its results file
	// written) is a test that left it behind. It is named, killed, and
	// the run fails.
	var left []string
	testutil.Within(5*time.Second, func() bool { left = runnersOf(ownerEnv + "=" + owner); return len(left) == 0 })
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d runner(s) outlived the tests that started them:\n", len(left))
		for _, l := range left {
			fmt.Fprintf(os.Stderr, "  %s\n", l)
			if pid, err := strconv.Atoi(strings.Fields(l)[0]); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if code == 0 {
			code = 1
		}
	}
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// runnersOf lists the runner processes ("PID cmdline") whose environment
// holds mark.
func runnersOf(mark string) []string {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var out []string
	for _, p := range procs {
		cmd, err := os.ReadFile(p + "/cmdline")
		if err != nil || !bytes.Contains(cmd, []byte("\x00"+link.Command+"\x00")) {
			continue
		}
		env, err := os.ReadFile(p + "/environ")
		if err != nil || !bytes.Contains(append([]byte("\x00"), env...), []byte("\x00"+mark+"\x00")) {
			continue
		}
		out = append(out, filepath.Base(p)+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return out
}

// TestBinaryBindsLazily: with eager binding (BIND_NOW, FLAGS NOW) the
// binary dies at start wherever the NVML driver library is missing or old.
func TestBinaryBindsLazily(t *testing.T) {
	out, err := exec.Command("readelf", "-d", binary(t)).CombinedOutput()
	if err != nil {
		t.Fatalf("readelf -d: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "BIND_NOW") || strings.Contains(line, "(FLAGS)") && strings.Contains(line, "NOW") {
			t.Errorf("binary binds eagerly: %s", strings.TrimSpace(line))
		}
		if strings.Contains(line, "(FLAGS_1)") && strings.Contains(line, " NOW") {
			t.Errorf("binary binds eagerly: %s", strings.TrimSpace(line))
		}
	}
	// And it starts on this machine, which has no NVIDIA driver.
	if out, err := exec.Command(binary(t), "version").CombinedOutput(); err != nil {
		t.Errorf("greenlight version: %v\n%s", err, out)
	}
}

func runBin(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	return runBinEnv(t, dir, nil, args...)
}

// runBinEnv is runBin with env added to the environment (a parallel test
// cannot t.Setenv).
func runBinEnv(t *testing.T, dir string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}

func TestExitCodesForBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: x\nphases:\n  - id: a\n    steps:\n      - run: echo\n        timeout: soon\n"), 0o644)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--plain", bad}, 2, "bad.yaml:6:18: bad duration"},
		{[]string{"validate", bad}, 2, "hint:"},
		{[]string{"run", "--bogus", bad}, 2, "flag provided but not defined"},
		{[]string{"run", "--plain", filepath.Join(dir, "missing.yaml")}, 2, "cannot read the campaign file"},
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"run", "--gpu", "fake:x", bad}, 2, ""},
	}
	for _, tt := range tests {
		out, code := runBin(t, dir, tt.args...)
		if code != tt.code || !strings.Contains(out, tt.want) {
			t.Errorf("greenlight %v = exit %d, %q; want exit %d containing %q", tt.args, code, out, tt.code, tt.want)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("bad input left files behind: %v", ents)
	}
}

func TestRunPlainExitStatus(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.yaml")
	os.WriteFile(ok, []byte("name: ok\nphases:\n  - id: a\n    steps: [{run: 'echo \"{\\\"x\\\": 1}\" >> $GREENLIGHT_RESULTS'}]\n"), 0o644)
	out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", ok)
	if code != 0 || !strings.Contains(out, "campaign finished") {
		t.Errorf("ok campaign: exit %d\n%s", code, out)
	}
	report, _ := os.ReadFile(filepath.Join(dir, "ok.md"))
	if !strings.Contains(string(report), "| 1 |") || !strings.Contains(string(report), "Status:** finished") {
		t.Errorf("ok.md lacks the result row or the finished status:\n%s", report)
	}
	fail := filepath.Join(dir, "fail.yaml")
	os.WriteFile(fail, []byte("name: fail\nphases:\n  - id: a\n    steps: [{run: 'exit 3'}]\n"), 0o644)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", fail); code != 1 {
		t.Errorf("failing campaign: exit %d; want 1\n%s", code, out)
	}
}

func TestValidatePrintsPlan(t *testing.T) {
	t.Parallel()
	out, code := runBin(t, ".", "validate", "examples/kimi-k25-vllm.yaml")
	if code != 0 || !strings.Contains(out, "is valid") || !strings.Contains(out, "waits for a greenlight") {
		t.Errorf("validate kimi: exit %d\n%s", code, out)
	}
	out, code = runBin(t, ".", "validate", "examples/h200-smoke.yaml")
	if code != 0 {
		t.Errorf("validate h200-smoke: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "Every phase is ordered by needs") {
		t.Errorf("validate kimi does not say its phases run one at a time:\n%s", out)
	}
	dir := t.TempDir()
	c := writeCampaign(t, dir, "name: s\nphases:\n  - id: serve\n    gpus: [1, 2, 3]\n    service: {run: s, ready: {log: up}}\n  - id: gemm\n    gpus: [0]\n    steps: [{run: g}]\n  - id: flaky\n    gpus: [0, 3]\n    steps: [{run: f}]\n")
	out, _ = runBin(t, dir, "validate", c)
	for _, want := range []string{"serve and gemm may run together", "serve and flaky queue for GPU 3", "gemm and flaky queue for GPU 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("validate lacks %q:\n%s", want, out)
		}
	}
	out, code = runBin(t, ".", "validate", "examples/kimi-k25-two-nodes.yaml")
	if code != 0 || !strings.Contains(out, "after ray-worker") {
		t.Errorf("validate kimi-k25-two-nodes: exit %d\n%s", code, out)
	}
}

func TestDemoPlain(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo takes about a minute")
	}
	t.Parallel() // most of its minute is the demo's own waits
	dir := t.TempDir()
	start := time.Now()
	out, code := runBinEnv(t, dir, []string{"XDG_STATE_HOME=" + dir}, "demo", "--plain")
	if code != 0 {
		t.Fatalf("demo exit %d\n%s", code, out)
	}
	if d := time.Since(start); d > 2*time.Minute {
		t.Errorf("demo took %s; it must finish in under 2 minutes", d)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the demo left %v in its folder and the current one; want only its XDG state folder", ents)
	}
	report, err := os.ReadFile(filepath.Join(dir, "greenlight", "demo", "demo-results.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Status:** finished", "output_token_throughput_tok_s", "Where the GPU time went", "| rank 3 |", "TFLOP/s", "retried", "decode.nsys-rep", "Loading"} {
		if want == "Loading" {
			continue // in the log, not the report
		}
		if !strings.Contains(string(report), want) {
			t.Errorf("demo report lacks %q", want)
		}
	}
	if n := strings.Count(string(report), "a process not of this campaign"); n > 0 {
		t.Errorf("the demo's own steps are called foreign %d times", n)
	}
	if strings.Count(string(report), "<!-- greenlight:begin") != 6 {
		t.Errorf("demo report has %d blocks; want 6 (header and 5 phases)", strings.Count(string(report), "<!-- greenlight:begin"))
	}
}

func TestReportRebuiltFromStateDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := filepath.Join(dir, "c.yaml")
	os.WriteFile(c, []byte("name: rebuild\nphases:\n  - id: a\n    steps: [{run: 'echo \"{\\\"tok_s\\\": 61.5}\" >> $GREENLIGHT_RESULTS'}]\n"), 0o644)
	if out, code := runBin(t, dir, "run", "--plain", "--gpu", "none", c); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	report := filepath.Join(dir, "rebuild.md")
	os.Remove(report)
	out, code := runBin(t, dir, "report", c)
	if code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	b, _ := os.ReadFile(report)
	if !strings.Contains(string(b), "| 61.5 |") || !strings.Contains(string(b), "✅ done") {
		t.Errorf("rebuilt report lacks the result or the status:\n%s", b)
	}
}

// TestReportVersions: --versions lists the kept versions of the results
// file and --version N prints one back; a version not kept is exit 2.
func TestReportVersions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := filepath.Join(dir, "c.yaml")
	os.WriteFile(c, []byte("name: v\nphases:\n  - id: a\n    steps:\n      - run: |\n          true\n"), 0o644)
	state := filepath.Join(dir, "state")
	os.MkdirAll(filepath.Join(state, "versions"), 0o700)
	os.WriteFile(filepath.Join(state, "versions", "000007-20261203T170527.279Z-replaced.md"), []byte("# mine\nmy lost line\n"), 0o600)
	var out, errb strings.Builder
	if code := run([]string{"report", "--versions", "--state-dir", state, c}, &out, &errb); code != 0 {
		t.Fatalf("--versions: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "7 ") || !strings.Contains(out.String(), "replaced by a write") || !strings.Contains(out.String(), "2") {
		t.Errorf("--versions does not list version 7:\n%s", out.String())
	}
	out.Reset()
	if code := run([]string{"report", "--state-dir", state, "--version", "7", c}, &out, &errb); code != 0 || out.String() != "# mine\nmy lost line\n" {
		t.Errorf("--version 7: exit %d, printed %q", code, out.String())
	}
	if code := run([]string{"report", "--state-dir", state, "--version", "8", c}, &out, &errb); code != 2 {
		t.Errorf("--version 8 (not kept): exit %d, want 2", code)
	}
}

// TestDemoSetsTheLastOneAside: a new demo moves the last demo's folder to
// a dated name beside it, its results whole, rather than deleting it.
func TestDemoSetsTheLastOneAside(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "demo")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "demo.md"), []byte("my notes on the demo\n"), 0o644)
	old, err := demo.SetAside(dir, time.Date(2026, 12, 3, 7, 1, 2, 0, time.UTC))
	if err != nil || old != dir+".20261203-070102" {
		t.Fatalf("demo.SetAside = %q, %v", old, err)
	}
	if b, _ := os.ReadFile(filepath.Join(old, "demo.md")); string(b) != "my notes on the demo\n" {
		t.Errorf("the last demo's results were not kept: %q", b)
	}
	if again, err := demo.SetAside(dir, time.Now()); again != "" || err != nil {
		t.Errorf("nothing to set aside: %q, %v", again, err)
	}
}
