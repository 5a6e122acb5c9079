package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/runner/slurm/slurmtest"
	"github.com/greenlight-run/greenlight/runner/slurm/words"
)

// TestTwoNodeSlurmExample runs examples/kimi-k25-slurm.yaml as written on
// a simulated cluster of three 8-GPU nodes (slurmtest.StartNodes), from
// its login node (the controller's namespace), with stand-ins for what
// needs real GPUs: `ray` (says it started, then waits), `vllm serve` (an
// HTTP server with /health on the job's first node, reached from the
// login node at ${GREENLIGHT_NODE}), `python3 -c "import ray ..."` (counts
// the job's GPUs), scripts/decode_load.py and scripts/gemm_bench.py, and
// each node's dcgm-exporter (serving the H200 fixture under the node's
// name). The record names the jobs' nodes, and the server's GPUs are the
// 16 of its two nodes, read from their exporters as the job ran.
func TestTwoNodeSlurmExample(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The example asks for 100 GiB free before it starts: a tmpfs has
	// that to give (its size is a bound, not memory taken). Mounted before
	// the cluster starts: its daemons' mount namespaces copy the host's
	// mounts when made, and the nodes must share this folder.
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=200g"); err != nil {
		t.Skipf("cannot mount a tmpfs for the example's 100 GiB disk_free check: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	c := slurmtest.StartNodes(t, 3, 8, "h200=n[1-3]")
	example := mustRead(t, "examples/kimi-k25-slurm.yaml")
	os.WriteFile(filepath.Join(dir, "kimi-k25-slurm.yaml"), example, 0o644)
	os.MkdirAll(filepath.Join(dir, "scripts"), 0o755)
	for _, s := range []string{"decode_load.py", "gemm_bench.py"} {
		os.WriteFile(filepath.Join(dir, "scripts", s), mustRead(t, "examples/scripts/"+s), 0o644)
	}
	os.MkdirAll(filepath.Join(dir, "model"), 0o755)
	self, _ := os.Executable()
	bin := standIns(t, self)

	body := mustRead(t, "gpu/testdata/dcgm-exporter-h200x8.prom")
	os.WriteFile(filepath.Join(dir, "dcgm.prom"), body, 0o644)
	for i := 1; i <= c.Count; i++ {
		node := fmt.Sprintf("n%d", i)
		cmd := c.On(node, self)
		cmd.Env = append(cmd.Env, "GREENLIGHT_TEST_DCGM=9400", "GREENLIGHT_TEST_DCGM_NODE="+node, "GREENLIGHT_TEST_DCGM_BODY="+filepath.Join(dir, "dcgm.prom"))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}

	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cmd := c.Login(binary(t), "run", "--plain", "--interval", "500ms", "kimi-k25-slurm.yaml")
	cmd.Env = append(cmd.Env, "PATH="+bin+":"+c.Bin+":"+os.Getenv("PATH"), "MODEL_DIR="+filepath.Join(dir, "model"))
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Start()
	// A window attached while decode runs (from the host, through the
	// state dir's socket) shows the GPUs of the server's two nodes.
	screens := make(chan string, 1)
	go func() { screens <- windowDuring(t, dir, "decode") }()
	if err == nil {
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-ctx.Done():
			c.Login(binary(t), "stop", "kimi-k25-slurm.yaml").Run()
			err = <-done
		}
	}
	t.Logf("greenlight run:\n%s", lastLinesOf(out.String(), 40))
	if err != nil {
		t.Fatalf("greenlight run: %v", err)
	}
	record := string(mustRead(t, filepath.Join(dir, "kimi-k25-slurm.md")))
	section := func(id string) string {
		_, after, _ := strings.Cut(record, "<!-- greenlight:begin phase:"+id+" -->")
		body, _, _ := strings.Cut(after, "<!-- greenlight:end")
		return body
	}
	// serve: one job over two nodes, ended as greenlight asked (stopped
	// when no phase needed it: COMPLETED, not FAILED), its GPUs the 16 of
	// its two nodes.
	serve := section("serve")
	m := regexp.MustCompile(`Slurm job \d+ COMPLETED on (n\[\d-\d\]|n\d,n\d)`).FindStringSubmatch(serve)
	if m == nil || !strings.Contains(serve, "**Status:** ✅ done") {
		t.Fatalf("serve's block does not say it ran as one job over two nodes, done:\n%s", serve)
	}
	nodes := words.Hostnames(m[1])
	for _, n := range nodes {
		for g := range 8 {
			if !strings.Contains(serve, fmt.Sprintf("| %s:%d |", n, g)) {
				t.Errorf("serve's GPUs lack %s:%d (its job ran on %s):\n%s", n, g, m[1], serve)
			}
		}
	}
	if scr := <-screens; scr != "" {
		for _, n := range nodes {
			if !strings.Contains(scr, n+" 8 GPUs") {
				t.Errorf("the window does not show %s's GPUs (its job ran on %s):\n%s", n, m[1], scr)
			}
		}
	}
	// decode: on the login node, it reached the server at the job's node.
	if d := section("decode"); !regexp.MustCompile(`52 ✓ \(>= 45\)`).MatchString(d) {
		t.Errorf("decode's block lacks its throughput, met:\n%s", d)
	}
	// The server's own view, scraped at the node its job landed on.
	if d := section("decode"); !strings.Contains(d, "### Server: serve, as its /metrics saw the phase") || !strings.Contains(d, "| requests running |") {
		t.Errorf("decode's block lacks the server's /metrics, scraped at ${GREENLIGHT_NODE}:\n%s", d)
	}
	// gemm: a job of its own, on the node the server left free.
	if g := section("gemm"); !regexp.MustCompile(`Slurm job \d+ COMPLETED on n\d`).MatchString(g) || !strings.Contains(g, "650.5") {
		t.Errorf("gemm's block:\n%s", g)
	}
	// The jobs' nodes read as they came and went are no change of the
	// conditions.
	if strings.Contains(record, "conditions changed") {
		t.Errorf("the record says the conditions changed as jobs' nodes came and went:\n%s", record)
	}
}

// windowDuring attaches a window (greenlight run on the campaign, in tmux
// at 200x60) once the phase has started, and returns its screen a few
// seconds on; "" where tmux is not installed.
func windowDuring(t *testing.T, dir, phase string) string {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Log("tmux is not installed (.ci/run installs it): the window is not looked at")
		return ""
	}
	journal := filepath.Join(dir, ".greenlight", "kimi-k25-slurm", "journal.jsonl")
	if !testutil.Within(120*time.Second, func() bool {
		b, _ := os.ReadFile(journal)
		return strings.Contains(string(b), `"kind":"phase-start","phase":"`+phase+`"`)
	}) {
		return ""
	}
	s := &tmuxSession{t: t, socket: fmt.Sprintf("greenlight-nodes-%d", os.Getpid())}
	s.run("new-session", "-d", "-s", "gl", "-x", "200", "-y", "60",
		fmt.Sprintf("cd %s && export LANG=C.UTF-8; %s run kimi-k25-slurm.yaml; sleep 5", dir, binary(t)))
	defer exec.Command("tmux", "-L", s.socket, "kill-server").Run()
	var scr string
	testutil.Within(4*time.Second, func() bool {
		scr = s.screen()
		return strings.Count(scr, " 8 GPUs") >= 2
	})
	return scr
}

// standIns writes the stand-in commands into a folder for PATH.
func standIns(t *testing.T, self string) string {
	bin := t.TempDir()
	realPython, _ := exec.LookPath("python3")
	files := map[string]string{
		"ray": `#!/bin/sh
echo "ray $* on $(hostname)"
echo "Ray runtime started."
exec sleep 100000
`,
		"vllm": fmt.Sprintf(`#!/bin/sh
# vllm serve, stood in: the log lines the example's stages name, then an
# HTTP server on --port of every address of the node.
port=8000
while [ $# -gt 0 ]; do [ "$1" = --port ] && port=$2; shift; done
echo "Initializing a V1 LLM engine on $(hostname)"
echo "Loading safetensors checkpoint shards"
echo "Available KV cache memory: 80 GiB"
GREENLIGHT_TEST_SERVE=$port GREENLIGHT_TEST_SERVE_HOST=0.0.0.0 exec %q
`, self),
		"python3": fmt.Sprintf(`#!/bin/sh
if [ "$1" = -c ]; then
  case "$2" in *"import ray"*) echo $(( ${SLURM_JOB_NUM_NODES:-1} * 8 )); exit 0 ;; esac
fi
case "$1" in
scripts/decode_load.py) shift; GREENLIGHT_TEST_DECODE=1 exec %q "$@" ;;
scripts/gemm_bench.py) echo '{"shape": "down", "m": 4096, "tflops": 650.5}' >> "$GREENLIGHT_RESULTS"; exit 0 ;;
esac
exec %q "$@"
`, self, realPython),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// dcgmStandIn serves a node's dcgm-exporter: the fixture's metrics, under
// the node's host name.
func dcgmStandIn(port string) int {
	body, err := os.ReadFile(os.Getenv("GREENLIGHT_TEST_DCGM_BODY"))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	body = regexp.MustCompile(`Hostname="[^"]*"`).ReplaceAll(body, []byte(`Hostname="`+os.Getenv("GREENLIGHT_TEST_DCGM_NODE")+`"`))
	err = http.ListenAndServe(":"+port, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	fmt.Println(err)
	return 1
}

// decodeStandIn plays scripts/decode_load.py: it asks the server at
// --base whether it is healthy, and prints vLLM's throughput line.
func decodeStandIn(args []string) int {
	base := ""
	for i, a := range args {
		if a == "--base" && i+1 < len(args) {
			base = args[i+1]
		}
	}
	if _, err := url.Parse(base); base == "" || err != nil {
		fmt.Println("decode stand-in: no --base URL")
		return 2
	}
	resp, err := http.Get(base + "/health")
	if err != nil {
		fmt.Println("decode stand-in:", err)
		return 1
	}
	resp.Body.Close()
	time.Sleep(2500 * time.Millisecond) // the load's length: the server's /metrics is scraped meanwhile
	fmt.Printf("Output token throughput (tok/s):   52.00\n")
	return 0
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func lastLinesOf(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}
