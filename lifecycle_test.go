package main

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/modelload"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

// The model-based lifecycle test: a campaign that uses the features whose
// facts must outlive a runner (a sweep with repeats, a swept service with
// metrics:, a vllm-bench reader, conditions, a capture, a baseline) is driven
// through seeded random sequences of run, stop, kill -9 of the runner,
// kill -9 of a step's supervisor, skip of a phase and of a point, retry,
// a grid edit, report and --fresh, then run to its end. After each
// sequence:
//
//   - every unit ran to its end once, but where its run did not end done
//     (a stop or a skip cut it, its supervisor died) or its phase was
//     retried: the units' ledger against the journal;
//   - the record's rows are the CSVs' and NAME.json's, one a unit done;
//   - greenlight report rebuilds the same record (NAME.md, NAME.json, the
//     CSVs and the charts), but for the time it was written;
//   - every skip and stop the sequence made is said in the record;
//   - nothing of the campaign is left running.
//
// A failure prints its seed; -lifecycle.seed replays one, -lifecycle.n
// runs more.
var (
	lifeN    = flag.Int("lifecycle.n", 12, "sequences of the lifecycle test")
	lifeSeed = flag.Uint64("lifecycle.seed", 0, "replay this one sequence of the lifecycle test")
	lifeFrom = flag.Uint64("lifecycle.from", 1000, "the first seed of -lifecycle.n sequences")
)

// serveStandIn plays vLLM's server on port: /health answers, /metrics
// counts the tokens generated since it started. It runs until killed.
// It listens on this machine only, or on GREENLIGHT_TEST_SERVE_HOST.
func serveStandIn(port string) int {
	host := cmp.Or(os.Getenv("GREENLIGHT_TEST_SERVE_HOST"), "127.0.0.1")
	// A model's load, in vLLM's words: the port answers after it.
	if ms, _ := strconv.Atoi(os.Getenv("GREENLIGHT_TEST_LOAD_MS")); ms > 0 {
		fmt.Println("Loading safetensors checkpoint shards: 1/2")
		time.Sleep(time.Duration(ms) * time.Millisecond)
		fmt.Printf("Loading weights took %.2f seconds\n", float64(ms)/1000)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		fmt.Println("listen:", err)
		return 1
	}
	fmt.Println("Application startup complete.")
	start := time.Now()
	var hits atomic.Int64
	http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			n := hits.Add(1)
			fmt.Fprintf(w, "vllm:num_requests_running %d\nvllm:num_requests_waiting 0\nvllm:generation_tokens_total %d\n", n%3, int(time.Since(start).Seconds()*1000))
		}
		// vLLM's profiler: the folder is set once, at the server's start
		// (VLLM_TORCH_PROFILER_DIR); each stop writes a trace there.
		if dir := os.Getenv("GREENLIGHT_TEST_TRACE_DIR"); r.URL.Path == "/stop_profile" && dir != "" {
			b, err := os.ReadFile(os.Getenv("GREENLIGHT_TEST_TRACE_SRC"))
			if err == nil {
				os.MkdirAll(dir, 0o755)
				err = os.WriteFile(filepath.Join(dir, fmt.Sprintf("rank0.%d.pt.trace.json.gz", time.Now().UnixNano())), b, 0o644)
			}
			if err != nil {
				http.Error(w, err.Error(), 500)
			}
		}
	}))
	return 0
}

// lifeCampaign is the campaign a sequence drives; m is gemm's grid.
func lifeCampaign(port int, m []int) string {
	ms := make([]string, len(m))
	for i, v := range m {
		ms[i] = strconv.Itoa(v)
	}
	exe, _ := os.Executable()
	trace, _ := filepath.Abs("trace/testdata/rank0.1796288149011725086.pt.trace.json.gz")
	return fmt.Sprintf(`name: life
baseline: base.json
conditions:
  commands: [echo v1]
phases:
  - id: serve
    sweep: {seqs: [1, 2]}
    service:
      run: |
        echo "seqs ${seqs}"; GREENLIGHT_TEST_LOAD_MS=%[7]d GREENLIGHT_TEST_TRACE_DIR=svtraces GREENLIGHT_TEST_TRACE_SRC=%[6]q GREENLIGHT_TEST_SERVE=%[1]d exec %[2]q
      ready: {http: "http://127.0.0.1:%d/health", timeout: 30s}
      metrics: {url: "http://127.0.0.1:%d/metrics"}
      model: model
      stages:
        - {name: process started, log: 'seqs', share: 0.1}
        - {name: loading weights, log: 'Loading safetensors checkpoint shards', share: 0.9}
  - id: decode
    needs: [serve]
    sweep: {c: [1, 2]}
    repeat: 2
    artifacts: ['bench/*.json']
    steps:
      - results: {format: vllm-bench}
        run: |
          d=$(basename $(dirname "$GREENLIGHT_RESULTS")); u="$GREENLIGHT_PHASE c=${c} r=$GREENLIGHT_REPEAT"
          echo "start $d $u pid=$$ t=$(date +%%s%%N)" >> ledger; sleep 0.15
          printf '============ Serving Benchmark Result ============\nSuccessful requests:  8\nOutput token throughput (tok/s):  %%d.5\n==================================================\n' $(( ${c} * 100 + $GREENLIGHT_REPEAT ))
          mkdir -p bench; echo "{\"output_throughput\": $(( ${c} * 100 + $GREENLIGHT_REPEAT )).5, \"c\": ${c}}" > bench/$GREENLIGHT_PHASE-$d.json
          echo "end $d $u pid=$$" >> ledger
  - id: cap
    needs: [serve]
    gpus: none
    capture: {ranks: 1, stall: 2s}
    artifacts: ['svtraces/*.pt.trace.json.gz']
    steps:
      - wait_quiet: 300ms
        run: |
          d=$(basename $(dirname "$GREENLIGHT_RESULTS")); u="$GREENLIGHT_PHASE run"
          echo "start $d $u pid=$$ t=$(date +%%s%%N)" >> ledger
          GREENLIGHT_TEST_POST=http://127.0.0.1:%[1]d/stop_profile %[2]q
          echo "end $d $u pid=$$" >> ledger
  - id: share
    needs: [gemm]
    gpus: none
    artifacts: ['bench/*.json']
    steps:
      - results: {format: vllm-bench}
        run: |
          d=$(basename $(dirname "$GREENLIGHT_RESULTS")); u="share run"
          echo "start $d $u pid=$$ t=$(date +%%s%%N)" >> ledger; sleep 0.1
          printf '============ Serving Benchmark Result ============\nSuccessful requests:  8\nOutput token throughput (tok/s):  77.5\n==================================================\n'
          mkdir -p bench; echo '{"output_throughput": 77.5}' > bench/share-$d.json
          echo "end $d $u pid=$$" >> ledger
  - id: gemm
    gpus: none
    sweep: {m: [%[5]s]}
    repeat: 2
    steps:
      - run: |
          d=$(basename $(dirname "$GREENLIGHT_RESULTS")); u="gemm m=${m} r=$GREENLIGHT_REPEAT"
          echo "start $d $u pid=$$ t=$(date +%%s%%N)" >> ledger; sleep 0.15
          echo "{\"tflops\": $(( ${m} * 10 + $GREENLIGHT_REPEAT ))}" >> "$GREENLIGHT_RESULTS"
          echo "end $d $u pid=$$" >> ledger
  - id: limit
    gpus: none
    search: {axis: load, range: [1, 16], slo: {lat: "<= 50"}, resolution: 50%%}
    repeat: 2
    steps:
      - run: |
          d=$(basename $(dirname "$GREENLIGHT_RESULTS")); u="limit load=${load} r=$GREENLIGHT_REPEAT"
          echo "start $d $u pid=$$ t=$(date +%%s%%N)" >> ledger; sleep 0.1
          echo "{\"lat\": $(( ${load} * 6 ))}" >> "$GREENLIGHT_RESULTS"
          echo "end $d $u pid=$$" >> ledger
  - id: prof
    needs: [gemm]
    gpus: none
    capture: {ranks: 2, stall: 2s}
    artifacts: ['traces/*.pt.trace.json.gz']
    steps:
      - wait_quiet: 300ms
        run: |
          d=$(basename $(dirname "$GREENLIGHT_RESULTS")); u="prof run"
          echo "start $d $u pid=$$ t=$(date +%%s%%N)" >> ledger
          mkdir -p traces; for r in 0 1; do cp %[6]q traces/rank$r.pt.trace.json.gz; done
          echo "end $d $u pid=$$" >> ledger
`, port, exe, port, port, strings.Join(ms, ", "), trace, lifeLoad.Milliseconds())
}

// lifeLoad is how long the stand-in server's model load lasts.
const lifeLoad = 800 * time.Millisecond

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	seeds := []uint64{}
	if *lifeSeed != 0 {
		seeds = append(seeds, *lifeSeed)
	} else {
		for i := range *lifeN {
			seeds = append(seeds, *lifeFrom+uint64(i))
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			l := &life{t: t, rng: rand.New(rand.NewPCG(seed, seed)), seed: seed, dir: t.TempDir(), port: freePort(t), m: []int{1, 2, 3}}
			defer func() {
				t.Logf("ops: %s", strings.Join(l.ops, " "))
				if t.Failed() {
					t.Logf("replay: go test -run 'TestLifecycle/%d$' -lifecycle.seed %d .\nops: %s", seed, seed, strings.Join(l.ops, " "))
				}
			}()
			l.sequence()
		})
	}
}

// life is one sequence and what the test knows of it.
type life struct {
	t     *testing.T
	rng   *rand.Rand
	seed  uint64
	dir   string
	port  int
	m     []int
	c     string // the campaign file
	ops   []string
	stops int             // stops made since the last --fresh
	skips map[string]bool // phases skipped, and not run again since (retry, an edit of gemm, --fresh)
	// loads whose runner was killed once it had seen them loading
	// ("serve.1 a1"), since the last --fresh
	midLoads map[string]time.Time // when the runner was killed
}

// lifeBaseline is the record of an earlier gemm run the campaign
// compares against.
const lifeBaseline = `{"kind": "greenlight-results", "schema": 1,
 "campaign": {"name": "life", "file": "c.yaml", "report": "life.md", "state": "finished", "written": "2026-12-01T10:00:00Z"},
 "phases": [{"id": "gemm", "status": "done", "axes": ["m"], "repeat": 2}],
 "rows": [
  {"phase": "gemm", "step": 1, "point": "m=1", "repeat": 1, "time": "2026-12-01T10:00:00Z", "values": {"m": 1, "repeat": 1, "tflops": 11}},
  {"phase": "gemm", "step": 2, "point": "m=1", "repeat": 2, "time": "2026-12-01T10:00:01Z", "values": {"m": 1, "repeat": 2, "tflops": 12}},
  {"phase": "gemm", "step": 3, "point": "m=2", "repeat": 1, "time": "2026-12-01T10:00:02Z", "values": {"m": 2, "repeat": 1, "tflops": 21}},
  {"phase": "gemm", "step": 4, "point": "m=2", "repeat": 2, "time": "2026-12-01T10:00:03Z", "values": {"m": 2, "repeat": 2, "tflops": 22}}]}
`

func (l *life) write() {
	if err := os.WriteFile(filepath.Join(l.dir, "base.json"), []byte(lifeBaseline), 0o644); err != nil {
		l.t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(l.dir, "model"), 0o755)
	os.WriteFile(filepath.Join(l.dir, "model", "model.safetensors"), make([]byte, 64<<10), 0o644)
	l.c = filepath.Join(l.dir, "c.yaml")
	if err := os.WriteFile(l.c, []byte(lifeCampaign(l.port, l.m)), 0o644); err != nil {
		l.t.Fatal(err)
	}
}

func (l *life) bin(args ...string) (string, int) {
	l.t.Helper()
	return runBin(l.t, l.dir, args...)
}

func (l *life) stateDir() string { return filepath.Join(l.dir, ".greenlight", "life") }

func (l *life) ledger() []string {
	b, _ := os.ReadFile(filepath.Join(l.dir, "ledger"))
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func (l *life) ends() int {
	n := 0
	for _, line := range l.ledger() {
		if strings.HasPrefix(line, "end ") {
			n++
		}
	}
	return n
}

func (l *life) sequence() {
	l.write()
	nops := 3 + l.rng.IntN(4)
	for range nops {
		switch op := l.rng.IntN(10); {
		case op < 6:
			l.runThenDisrupt()
		case op == 6:
			l.op("report")
			if out, code := l.bin("report", l.c); code != 0 && !strings.Contains(out, "has not run") && !strings.Contains(out, "no journal") {
				l.t.Errorf("report: exit %d\n%s", code, out)
			}
		case op == 7:
			ph := []string{"gemm", "decode.1"}[l.rng.IntN(2)]
			l.op("retry:" + ph)
			if _, code := l.bin("retry", l.c, ph); code == 0 {
				delete(l.skips, ph)
			}
			l.awaitNoRunner()
		case op == 8:
			l.op("edit")
			if len(l.m) < 5 {
				l.m = append(l.m, len(l.m)+1)
				l.write()
				delete(l.skips, "gemm") // an edited phase runs again
			}
		case op == 9:
			l.op("fresh")
			l.awaitNoRunner()
			os.Rename(filepath.Join(l.dir, "ledger"), filepath.Join(l.dir, fmt.Sprintf("ledger.%d", len(l.ops))))
			if out, code := l.bin("run", "--fresh", "--plain", "--gpu", "none", "--detach", l.c); code != 0 {
				l.t.Logf("run --fresh --detach: exit %d\n%s", code, out)
			}
			l.stops, l.skips, l.midLoads = 0, nil, nil
			l.awaitNoRunner()
		}
	}
	l.op("finish")
	if out, code := l.bin("run", "--plain", "--gpu", "none", l.c); code != 0 && code != 1 {
		l.t.Fatalf("the last run: exit %d\n%s", code, out)
	}
	l.check()
}

func (l *life) op(s string) { l.ops = append(l.ops, s) }

// runThenDisrupt runs the campaign until a few more units end, then does
// one of the disruptions to it.
func (l *life) runThenDisrupt() {
	cmd := exec.Command(binary(l.t), "run", "--plain", "--gpu", "none", l.c)
	cmd.Dir = l.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		l.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	if l.rng.IntN(4) == 0 && l.killMidLoad() {
		cmd.Process.Kill()
		<-done
		l.awaitNoRunner()
		return
	}
	want := l.ends() + 1 + l.rng.IntN(4)
	ok := testutil.Within(20*time.Second, func() bool {
		select {
		case <-done:
			return true
		default:
		}
		return l.ends() >= want
	})
	select {
	case <-done:
		l.op("run(ended)")
		if code := cmd.ProcessState.ExitCode(); code > 1 {
			l.t.Fatalf("run: exit %d\n%s", code, out.String())
		}
		return // the campaign ended before: nothing to disrupt
	default:
	}
	if !ok {
		l.t.Fatalf("no unit ended in 20 s:\n%s", out.String())
	}
	stopAsked, stoppedBefore := false, l.stoppedInJournal()
	switch d := l.rng.IntN(6); d {
	case 0:
		l.op("stop")
		stopAsked = true
		l.bin("stop", l.c)
	case 1:
		l.op("kill-runner")
		l.killRunner()
	case 2:
		l.op("kill-supervisor")
		l.killSupervisor()
	case 3:
		ph := []string{"gemm", "decode.1", "decode.2"}[l.rng.IntN(3)]
		l.op("skip:" + ph)
		if out, code := l.bin("skip", l.c, ph); code == 0 && !strings.Contains(out, "already") {
			if l.skips == nil {
				l.skips = map[string]bool{}
			}
			l.skips[ph] = true
		}
	case 4:
		pt := fmt.Sprintf("m=%d", l.m[l.rng.IntN(len(l.m))])
		l.op("skip-point:" + pt)
		l.bin("skip", "--point", pt, l.c, "gemm")
	case 5:
		// A supervisor killed, then the runner in the moment after it has
		// started the unit's next try: the next runner re-adopts that try.
		l.op("kill-supervisor-then-runner")
		before := l.tries()
		l.killSupervisor()
		testutil.Within(5*time.Second, func() bool { return l.tries() > before })
		l.killRunner()
	}
	// The window goes; the runner (unless killed or stopped) goes on,
	// and the next op takes it as it is: stop it, so that every op
	// starts from a campaign no runner runs.
	cmd.Process.Kill()
	<-done
	if l.rng.IntN(2) == 0 {
		l.bin("stop", l.c)
	}
	l.awaitNoRunner()
	// A stop that came as the campaign ended stopped nothing: the record
	// says the stops that stopped a step.
	if stopAsked && l.stoppedInJournal() > stoppedBefore {
		l.stops++
	}
}

// stoppedInJournal counts the journal's phases ended by a stop.
func (l *life) stoppedInJournal() int {
	b, _ := os.ReadFile(filepath.Join(l.stateDir(), "journal.jsonl"))
	return strings.Count(string(b), `"reason":"campaign stopped"`)
}

// killMidLoad kills the runner -9 while a service's model loads, once the
// runner has had the time to see the load's stage: the next runner takes
// the load over, and its Load row must keep what was seen (checkLoads).
// False when no load was seen under way.
func (l *life) killMidLoad() bool {
	var loading string
	testutil.Within(5*time.Second, func() bool {
		// The log of the service's start the journal names last, not
		// ended: an older one is of a stopped attempt, its load cut.
		var newest, phase string
		j, _ := os.ReadFile(filepath.Join(l.stateDir(), "journal.jsonl"))
		for _, line := range strings.Split(string(j), "\n") {
			var r struct{ Kind, Phase, Dir string }
			if json.Unmarshal([]byte(line), &r) != nil || !strings.HasPrefix(r.Phase, "serve.") {
				continue
			}
			switch {
			case r.Kind == "step-start":
				newest, phase = r.Dir+".log", r.Phase
			case r.Kind == "step-end" && r.Phase == phase:
				newest = ""
			}
		}
		b, _ := os.ReadFile(newest)
		if strings.Contains(string(b), "Loading safetensors") && !strings.Contains(string(b), "Loading weights took") {
			loading = newest
			return true
		}
		return false
	})
	if loading == "" {
		return false
	}
	// The runner notes a stage as it sees it (stages.jsonl in the
	// step's folder); a busy machine may keep it from seeing it before
	// the kill, and then no runner knew when it began.
	kept := filepath.Join(strings.TrimSuffix(loading, ".log"), "stages.jsonl")
	noted := func() bool { // its line written, not only the file made: a kill between the two loses it
		b, err := os.ReadFile(kept)
		return err == nil && bytes.Contains(b, []byte(`"stage":1`))
	}
	seen := time.Now()
	testutil.Within(time.Second, func() bool {
		return noted() || time.Since(seen) > lifeLoad*3/5
	})
	b, _ := os.ReadFile(loading)
	if strings.Contains(string(b), "Loading weights took") {
		return false // the load ended first
	}
	phase := filepath.Base(filepath.Dir(loading))
	attempt, _, _ := strings.Cut(filepath.Base(loading), "-")
	wasNoted := noted() // seen before the kill: the runner noted the stage
	l.op("kill-runner-mid-load:" + phase)
	killed := time.Now()
	l.killRunner()
	if !wasNoted {
		return true
	}
	if l.midLoads == nil {
		l.midLoads = map[string]time.Time{}
	}
	l.midLoads[phase+" "+attempt] = killed
	return true
}

// runnerPID is the pid the state dir's lock names, when a runner holds it.
func (l *life) runnerPID() int {
	b, err := os.ReadFile(filepath.Join(l.stateDir(), "lock"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return 0
	}
	if state, _, ok := supervise.ProcStat(pid); !ok || state == 'Z' {
		return 0
	}
	return pid
}

func (l *life) killRunner() {
	if pid := l.runnerPID(); pid > 0 {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// tries counts the journal's starts of a step's try after its first.
func (l *life) tries() int {
	n := 0
	b, _ := os.ReadFile(filepath.Join(l.stateDir(), "journal.jsonl"))
	for _, line := range strings.Split(string(b), "\n") {
		var r jrec
		if json.Unmarshal([]byte(line), &r) == nil && r.Kind == "step-start" && r.Attempt > 1 {
			n++
		}
	}
	return n
}

// killSupervisor kills the supervisor of a running step that is not a
// service's.
func (l *life) killSupervisor() {
	for _, pid := range l.campaignPIDs() {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if bytes.Contains(cmd, []byte("supervise")) && !l.isService(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			return
		}
	}
}

func (l *life) isService(pid int) bool {
	env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	return bytes.Contains(env, []byte("GREENLIGHT_PHASE=serve"))
}

// campaignPIDs are the live processes that carry the campaign's mark.
func (l *life) campaignPIDs() []int {
	want := []byte(supervise.EnvState + "=" + l.stateDir() + "\x00")
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var out []int
	for _, p := range procs {
		env, err := os.ReadFile(p + "/environ")
		if err != nil || !bytes.Contains(append(env, 0), want) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(p))
		if state, _, ok := supervise.ProcStat(pid); ok && state != 'Z' {
			out = append(out, pid)
		}
	}
	return out
}

// awaitNoRunner waits until no runner holds the campaign: a stopped or
// killed runner is gone, or one left running (a kill of its window) is
// stopped.
func (l *life) awaitNoRunner() {
	if !testutil.Within(30*time.Second, func() bool { return l.runnerPID() == 0 }) {
		l.bin("stop", l.c)
		if !testutil.Within(30*time.Second, func() bool { return l.runnerPID() == 0 }) {
			l.t.Fatalf("the runner (pid %d) did not end", l.runnerPID())
		}
	}
}

var pidSuffix = regexp.MustCompile(` pid=\d+$`)

// startedAt is a start line's clock (ns since the epoch): a run that
// began before the campaign's start (its journal's first record) is an
// earlier campaign's, set aside by --fresh.
var startedAt = regexp.MustCompile(` t=(\d+)$`)

var ledgerLine = regexp.MustCompile(`^(start|end) a(\d+)-s(\d+)-t(\d+)(?:-\d+)? (\S+) (.*)$`)

func (l *life) check() {
	t := l.t
	l.awaitNoRunner()
	// Nothing of the campaign left running.
	if !testutil.Within(10*time.Second, func() bool { return len(l.campaignPIDs()) == 0 }) {
		t.Errorf("processes of the campaign left running after its end: %v", l.campaignPIDs())
		for _, pid := range l.campaignPIDs() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	l.checkLedger()
	l.checkRecord()
	l.checkLoads()
}

// checkLoads: each load that became ready is one Load row (the journal's
// service-ready records of the phases), however the runners that watched
// it came and went, and each row's time to ready holds the whole load
// (the stand-in's lifeLoad), a runner's absence included.
func (l *life) checkLoads() {
	t := l.t
	loads, err := runner.ReadLoads(l.stateDir())
	if err != nil {
		t.Fatalf("loads: %v", err)
	}
	readies := map[string]int{} // a ready service re-adopted is journaled ready again
	b, _ := os.ReadFile(filepath.Join(l.stateDir(), "journal.jsonl"))
	for _, line := range strings.Split(string(b), "\n") {
		var r struct {
			Kind, Phase string
			Attempt     int
		}
		if json.Unmarshal([]byte(line), &r) == nil && r.Kind == "service-ready" {
			readies[fmt.Sprintf("%s a%d", r.Phase, r.Attempt)] = 1
		}
	}
	rows := map[string]int{}
	for _, ld := range loads {
		rows[fmt.Sprintf("%s a%d", ld.Phase, ld.Attempt)]++
		if ld.ReadyS < lifeLoad.Seconds() {
			t.Errorf("the load of %s (attempt %d) was ready in %.2f s; the server's load alone took %s", ld.Phase, ld.Attempt, ld.ReadyS, lifeLoad)
		}
		// A load taken over midway: its stage began when the killed
		// runner saw it, before the kill, not when the next runner read
		// the log again: the first stage's mark ends before the kill.
		if killed, ok := l.midLoads[fmt.Sprintf("%s a%d", ld.Phase, ld.Attempt)]; ok {
			start := ld.T.Add(-time.Duration(ld.ReadyS * float64(time.Second)))
			i := slices.IndexFunc(ld.Marks, func(m modelload.StageTime) bool { return m.Name == "process started" })
			if i < 0 || start.Add(time.Duration(ld.Marks[i].Seconds*float64(time.Second))).After(killed) {
				t.Errorf("the load of %s (attempt %d), taken over midway: marks %+v from its start at %s; want loading weights begun before the runner was killed at %s",
					ld.Phase, ld.Attempt, ld.Marks, start.Format("15:04:05.000"), killed.Format("15:04:05.000"))
			}
		}
	}
	if !maps.Equal(rows, readies) {
		t.Errorf("Load rows %v; want one a load that became ready, as the journal says: %v\nloads: %+v", rows, readies, loads)
	}
}

// checkLedger: a unit's run ended (its "end" line) more than once only
// where the journal says a run of it did not end done, or its phase was
// retried, or the grid was edited.
func (l *life) checkLedger() {
	t := l.t
	ends := map[string]int{}
	started := map[string]bool{}
	since := l.journalStart()
	for _, line := range l.ledger() {
		at := startedAt.FindStringSubmatch(line)
		line = startedAt.ReplaceAllString(line, "")
		m := ledgerLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		// A run is its start and its end in this ledger, by one process (its
		// pid): a run a killed runner left going that ends after --fresh set
		// the ledger aside is the old campaign's, even where the new
		// campaign's run of the unit has the same folder (a1-s3-t1). So is
		// one whose shell was slow to start and wrote its start into the new
		// ledger, before --fresh stopped it: it began before this campaign.
		run := strings.TrimPrefix(strings.TrimPrefix(line, "start "), "end ")
		if at != nil && !since.IsZero() {
			if ns, err := strconv.ParseInt(at[1], 10, 64); err == nil && time.Unix(0, ns).Before(since) {
				continue
			}
		}
		unit := pidSuffix.ReplaceAllString(m[6], "")
		switch {
		case m[1] == "start":
			started[run] = true
		case m[1] == "end" && started[run]:
			ends[m[5]+" "+unit]++
		}
	}
	cut := map[string]int{} // phase -> runs that ended but not done, and retries
	recs := journalOf(t, l.stateDir())
	for _, r := range recs {
		switch {
		case r.Kind == "step-end" && r.Status != "done":
			cut[r.Phase]++
		case r.Kind == "retry":
			cut[r.Phase] += 100
		case r.Kind == "phase-start" && r.Attempt > 1:
			cut[r.Phase] += 100 // a new attempt (edited grid, retry, a failure run again)
		}
	}
	for unit, n := range ends {
		phase := strings.Fields(unit)[0]
		if n > 1 && cut[phase] == 0 {
			t.Errorf("unit %s ran to its end %d times, and no run of %s was cut or retried", unit, n, phase)
		}
		if n > 1+cut[phase] {
			t.Errorf("unit %s ran to its end %d times; %s had %d runs cut", unit, n, phase, cut[phase])
		}
	}
}

// journalStart is the time of the journal's first record: the campaign's
// start since any --fresh; zero without a journal.
func (l *life) journalStart() time.Time {
	f, err := os.Open(filepath.Join(l.stateDir(), "journal.jsonl"))
	if err != nil {
		return time.Time{}
	}
	defer f.Close()
	var first struct{ T time.Time }
	json.NewDecoder(f).Decode(&first)
	return first.T
}

type jrec struct {
	Kind    string `json:"kind"`
	Phase   string `json:"phase"`
	Step    int    `json:"step"`
	Attempt int    `json:"attempt"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
}

func journalOf(t *testing.T, stateDir string) []jrec {
	b, err := os.ReadFile(filepath.Join(stateDir, "journal.jsonl"))
	if err != nil {
		t.Fatalf("journal: %v", err)
	}
	var out []jrec
	for _, line := range bytes.Split(b, []byte("\n")) {
		var r jrec
		if json.Unmarshal(line, &r) == nil {
			out = append(out, r)
		}
	}
	return out
}

// checkRecord: the record's rows are the CSVs' and NAME.json's; report
// rebuilds the same record; the skips and stops are said.
func (l *life) checkRecord() {
	t := l.t
	files := l.recordFiles()
	if len(files) == 0 {
		t.Fatal("no record written")
	}
	live := map[string]string{}
	for _, f := range files {
		live[f] = normalise(f, readFile(t, filepath.Join(l.dir, f)))
	}
	// The rows: NAME.json's per phase, the CSV's.
	var rec struct {
		Phases []lifePhase `json:"phases"`
		Rows   []struct {
			Phase string `json:"phase"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(l.dir, "life.json"))), &rec); err != nil {
		t.Fatalf("life.json: %v", err)
	}
	for _, p := range rec.Phases {
		n := 0
		for _, r := range rec.Rows {
			if r.Phase == p.ID {
				n++
			}
		}
		f, err := os.Open(filepath.Join(l.dir, "life."+p.ID+".csv"))
		if err != nil {
			if n > 0 {
				t.Errorf("%s has %d rows in life.json and no CSV", p.ID, n)
			}
			continue
		}
		rows, _ := csv.NewReader(f).ReadAll()
		f.Close()
		if len(rows)-1 != n {
			t.Errorf("%s: %d rows in its CSV, %d in life.json", p.ID, len(rows)-1, n)
			l.keep(map[string]string{"life.md": readFile(t, filepath.Join(l.dir, "life.md")), "life.json": readFile(t, filepath.Join(l.dir, "life.json"))})
		}
	}
	md := live["life.md"]
	for ph := range l.skips {
		if st := statusOf(rec.Phases, ph); st != "skipped" {
			t.Errorf("%s was skipped, and reads %q in the record", ph, st)
			l.keep(map[string]string{"life.md": md})
		}
	}
	// The search, however stopped, killed and resumed on the way, finds
	// the same limit: lat = 6 x load, its SLO 50.
	if st := statusOf(rec.Phases, "limit"); st == "done" && !strings.Contains(md, "**load 8** is the largest that meets the SLO (lat <= 50); 12 fails") {
		t.Errorf("the search's limit is not load 8 in [8, 12):\n%s", md)
		l.keep(map[string]string{"life.md": md})
	}
	// Artifacts belong to the step that made them: the copies of decode
	// and share write into one folder, the server one trace folder for
	// both copies of cap; no file is listed by two phases, and each bench
	// file by the phase that wrote it.
	owner := map[string]string{}
	for _, p := range rec.Phases {
		for _, a := range artifactsListed(phaseBlock(md, p.ID)) {
			if o, ok := owner[a]; ok {
				t.Errorf("%s is listed as an artifact of both %s and %s", a, o, p.ID)
				l.keep(map[string]string{"life.md": md})
			}
			owner[a] = p.ID
			if base := filepath.Base(a); strings.HasSuffix(base, ".json") && !strings.HasPrefix(base, p.ID+"-") {
				var said []string // what the journal says of the file and of the two phases' steps
				b, _ := os.ReadFile(filepath.Join(l.stateDir(), "journal.jsonl"))
				for _, line := range strings.Split(string(b), "\n") {
					if strings.Contains(line, base) || strings.Contains(line, `"kind":"step-`) && !strings.Contains(line, `"step-pid"`) ||
						strings.Contains(line, `"kind":"phase-`) || strings.Contains(line, `"kind":"adopted"`) {
						said = append(said, line)
					}
				}
				t.Errorf("%s lists %s, which another phase wrote; the journal:\n%s", p.ID, a, strings.Join(said, "\n"))
				l.keep(map[string]string{"life.md": md})
			}
		}
	}
	if said := strings.Count(md, "stopped by you"); said < l.stops {
		t.Errorf("the record says %d stops; the sequence made %d", said, l.stops)
	}
	// One truth: the markdown's figures, NAME.json and status --json
	// read one results model, valid against the repo's schemas.
	checkParity(t, l.dir, l.c, "life")
	// report rebuilds the same record.
	if out, code := l.bin("report", l.c); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	for _, f := range l.recordFiles() {
		if _, ok := live[f]; !ok {
			t.Errorf("report wrote %s, which the runner did not", f)
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(l.dir, f))
		if err != nil {
			t.Errorf("report dropped %s", f)
			continue
		}
		if got := normalise(f, string(b)); got != live[f] {
			t.Errorf("report rebuilt %s differently:\n%s", f, firstDiff(live[f], got))
			l.keep(map[string]string{f + ".runner": live[f], f + ".report": got})
		}
	}
}

// recordFiles are the record's files beside the campaign file.
func (l *life) recordFiles() []string {
	var out []string
	for _, pat := range []string{"life.md", "life.json", "life.*.csv", "life.*.svg"} {
		m, _ := filepath.Glob(filepath.Join(l.dir, pat))
		for _, f := range m {
			out = append(out, filepath.Base(f))
		}
	}
	slices.Sort(out)
	return out
}

var writtenAt = regexp.MustCompile(`"written": "[^"]*"`)

// normalise leaves out what may differ between two writes of one
// record: the time it was written.
func normalise(name, s string) string {
	if strings.HasSuffix(name, ".json") {
		var v any
		if json.Unmarshal([]byte(s), &v) == nil {
			b, _ := json.MarshalIndent(v, "", " ")
			s = string(b)
		}
		return writtenAt.ReplaceAllString(s, `"written": ""`)
	}
	return s
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  runner: %s\n  report: %s", i+1, x, y)
		}
	}
	return "(same lines)"
}

// keep copies what a failed sequence leaves to $LIFECYCLE_KEEP, to be read
// whole: the files given, the state dir and the ledger.
func (l *life) keep(files map[string]string) {
	dir := os.Getenv("LIFECYCLE_KEEP")
	if dir == "" {
		return
	}
	os.MkdirAll(dir, 0o755)
	for name, body := range files {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	exec.Command("cp", "-r", l.stateDir(), filepath.Join(dir, "state")).Run()
	exec.Command("cp", filepath.Join(l.dir, "ledger"), dir).Run()
}

type lifePhase struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

func statusOf(phases []lifePhase, id string) string {
	for _, p := range phases {
		if p.ID == id {
			return p.Status
		}
	}
	return "(not in the record)"
}

// artifactsListed are the files a phase block's Artifacts list gives as
// the phase's (not those said to be matched but not its).
func artifactsListed(block string) []string {
	i := strings.Index(block, "### Artifacts")
	if i < 0 {
		return nil
	}
	sec := block[i+len("### Artifacts"):]
	if j := strings.Index(sec, "\n###"); j >= 0 {
		sec = sec[:j]
	}
	if j := strings.Index(sec, "Matched by its"); j >= 0 {
		sec = sec[:j]
	}
	var out []string
	for _, m := range regexp.MustCompile("(?m)^- `([^`]+)`: ").FindAllStringSubmatch(sec, -1) {
		out = append(out, m[1])
	}
	return out
}
