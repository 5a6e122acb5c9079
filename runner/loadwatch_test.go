package runner

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/testutil"
	"github.com/greenlight-run/greenlight/runner/modelload"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

// vllmStartup are a vLLM server's own timing lines, as it prints them.
const vllmStartup = `(VllmWorker rank=0 pid=1) INFO 10-06 11:41:02 [default_loader.py:267] Loading weights took 1021.40 seconds
INFO 10-06 11:41:03 [gpu_model_runner.py:2653] Model loading took 72.1234 GiB and 1030.512 seconds
INFO 10-06 11:42:11 [gpu_worker.py:298] Memory profiling takes 12.45 seconds
(EngineCore_DP0 pid=212) INFO 10-06 12:00:40 [gpu_model_runner.py:3480] Graph capturing finished in 25 secs, took 0.31 GiB
INFO 10-06 12:00:41 [core.py:210] init engine (profile, create kv cache, warmup model) took 95.30 seconds
INFO:     Application startup complete.`

// modelDir is a model folder of 4 shards on a disk the page cache can
// drop (the package's own folder: the test's temp dir may be a tmpfs).
func modelDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(".", "model-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	buf := make([]byte, 4<<20)
	for i := range 4 {
		rand.Read(buf)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("model-%05d-of-00004.safetensors", i+1)), buf, 0o644)
	}
	abs, _ := filepath.Abs(dir)
	return abs
}

// TestTheLoadMeasured: a service naming its model, prewarm on, its folder
// cold: the folder is read in before the phase starts, and the load is
// kept with the prewarm (16 MiB read, the folder cold before it), its
// page-cache count at the start (warm), and each stage vLLM's own lines
// time.
func TestTheLoadMeasured(t *testing.T) {
	t.Parallel()
	model := modelDir(t)
	if err := modelload.Evict(model); err != nil {
		t.Fatal(err)
	}
	if r, _ := modelload.Measure(t.Context(), model); r.Word() != "cold" {
		t.Skipf("this filesystem keeps evicted pages (%s): no cold start to measure", r)
	}
	log := filepath.Join(t.TempDir(), "vllm.log")
	os.WriteFile(log, []byte(vllmStartup+"\n"), 0o644)
	p := loadCampaign(t, fmt.Sprintf(`
name: load
phases:
  - id: serve
    service:
      run: |
        cat %s; sleep 30
      ready: {log: "Application startup complete", timeout: 20s}
      model: %s
      prewarm: true
  - id: use
    needs: [serve]
    steps:
      - run: |
          true
`, log, model))
	opts := testOptions(t)
	opts.StateDir = filepath.Join(t.TempDir(), "state")
	h := start(t, p, opts)
	st := h.finished(30 * time.Second)
	if s := st.Phase("use"); s.Status != Done {
		t.Fatalf("use = %s %q", s.Status, s.Reason)
	}
	loads, err := ReadLoads(opts.StateDir)
	if err != nil || len(loads) != 1 {
		t.Fatalf("loads = %+v, %v; want one", loads, err)
	}
	l := loads[0]
	if l.Cache == nil || l.Cache.Word() != "warm" || l.Cache.Bytes != 16<<20 {
		t.Errorf("the start's page cache: %+v; want warm (prewarmed), 16 MiB counted", l.Cache)
	}
	if l.Prewarm == nil || l.Prewarm.Read != 16<<20 || l.Prewarm.Before.Word() != "cold" || l.Warmth() != "warm (prewarmed)" {
		t.Errorf("prewarm: %+v (%s); want 16 MiB read from a cold folder, the load warm", l.Prewarm, l.Warmth())
	}
	got := map[string]float64{}
	for _, s := range l.Server {
		got[s.Name] = s.Seconds
	}
	want := map[string]float64{"loading weights": 1021.4, "model loading": 1030.512, "memory profiling": 12.45, "graph capture": 25, "engine init": 95.3}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("stage %s = %v; want %v (all: %v)", k, got[k], v, l.Server)
		}
	}
	said := false
	for _, e := range h.seen {
		said = said || e.Kind == Progress && strings.HasPrefix(e.Message, "serve: the model at the start: warm: 100% of 17 MB in the page cache")
	}
	if !said {
		t.Error("the start's page-cache count was not said in a line")
	}
	if r, _ := modelload.Measure(t.Context(), model); r.Word() != "warm" {
		t.Errorf("after the prewarm the folder is %s", r)
	}
	b, _ := os.ReadFile(filepath.Join(opts.StateDir, "steps", "serve", "prewarm-a1", "log"))
	if !strings.Contains(string(b), "greenlight: prewarm: done: read 17 MB") {
		t.Errorf("the prewarm's log does not say it:\n%s", b)
	}
	said = false
	for _, e := range h.seen {
		said = said || e.Kind == Progress && strings.HasPrefix(e.Message, "serve: prewarm: done: read 17 MB")
	}
	if !said {
		t.Error("the prewarm's end was not said in a line")
	}
}

// TestWarmLoadETAFromWarmHistory: once a cold load and a warm one were
// measured, a warm start's ETA is the warm loads', not the cold ones'.
func TestWarmLoadETAFromWarmHistory(t *testing.T) {
	p := loadCampaign(t, `
name: eta
phases:
  - id: serve
    service:
      run: |
        sleep 100
      ready: {log: up}
      model: /models/k2
`)
	r := newReplayRunner(t, p, filepath.Join(t.TempDir(), "state"))
	defer r.Close()
	step := &p.Phase("serve").Service.Step
	r.store.hist.add(step.Key, 36*time.Minute)
	r.store.hist.add(warmthKey(step.Key, "cold"), 36*time.Minute)
	r.store.hist.add(warmthKey(step.Key, "warm"), 2*time.Minute)
	for _, c := range []struct {
		word string
		want time.Duration
	}{{"warm", 2 * time.Minute}, {"cold", 36 * time.Minute}, {"partly warm", 0}} {
		sr := &stepRun{r: r, step: step, load: &loadWatch{cache: make(chan modelload.Residency, 1)}}
		share := map[string]int64{"warm": 95, "cold": 2, "partly warm": 50}[c.word]
		sr.load.cache <- modelload.Residency{Files: 1, Bytes: 100, Resident: share}
		key := sr.loadKey()
		got := r.store.hist.typical(key)
		if c.want == 0 {
			if key != step.Key {
				t.Errorf("a partly warm start, never measured: key %q; want the step's own", key)
			}
			continue
		}
		if got != c.want {
			t.Errorf("a %s start: history %s; want %s", c.word, got, c.want)
		}
	}
}

// TestPrewarmLinesAreItsBar: the supervisor's prewarm lines are the
// service's "prewarm" stage with a bar in GB; its last line lets the bar
// go, so the load's own ETA does not start at 100%.
func TestPrewarmLinesAreItsBar(t *testing.T) {
	p := loadCampaign(t, "name: b\nphases:\n  - id: serve\n    service:\n      run: |\n        sleep 100\n      ready: {log: up}\n      model: /models/k2\n      prewarm: true\n")
	pr := &phaseRun{ph: p.Phase("serve"), state: PhaseState{Steps: []StepState{{}}}}
	sr := &stepRun{pr: pr, load: &loadWatch{}}
	t0 := time.Now()
	sr.loadLine([]byte("greenlight: prewarm: reading /models/k2 into the page cache before the service starts"), t0)
	sr.loadLine([]byte("greenlight: prewarm: 10.0/40.0 GB read, 2.00 GB/s"), t0.Add(5*time.Second))
	sr.loadLine([]byte("greenlight: prewarm: 20.0/40.0 GB read, 2.00 GB/s"), t0.Add(10*time.Second))
	if st := pr.state.Steps[0].Stage; st != "prewarm" || sr.prog.done != 20 || sr.prog.total != 40 || !strings.HasSuffix(sr.prog.rateText(), " GB/s") {
		t.Errorf("stage %q, bar %v/%v, rate %q; want prewarm, 20/40, in GB/s", st, sr.prog.done, sr.prog.total, sr.prog.rateText())
	}
	sr.loadLine([]byte("greenlight: prewarm: done: read 40.0 GB in 20.0 s (2.00 GB/s); before it the folder was cold"), t0.Add(20*time.Second))
	if st := pr.state.Steps[0].Stage; st != "" || sr.prog.seen {
		t.Errorf("after the prewarm: stage %q, bar still seen %v", st, sr.prog.seen)
	}
}

// TestLoadTakenOverMidway: the runner killed -9 while a service loads
// (its page-cache count done, the server not ready): the next runner
// re-adopts the load and still writes its Load row once, with the count
// the start had, the server's timing lines and the time from the start.
func TestLoadTakenOverMidway(t *testing.T) {
	t.Parallel()
	model := modelDir(t)
	if err := modelload.Evict(model); err != nil {
		t.Fatal(err)
	}
	if r, _ := modelload.Measure(t.Context(), model); r.Word() != "cold" {
		t.Skipf("this filesystem keeps evicted pages (%s): no cold start to measure", r)
	}
	dir := t.TempDir()
	log, gate := filepath.Join(dir, "vllm.log"), filepath.Join(dir, "gate")
	os.WriteFile(log, []byte(vllmStartup+"\n"), 0o644)
	path := filepath.Join(dir, "c.yaml")
	p := writeCampaign(t, path, fmt.Sprintf(`
name: midway
phases:
  - id: serve
    service:
      run: |
        grep -v startup %[1]s; while [ ! -e %[2]s ]; do sleep 0.05; done; echo "INFO:     Application startup complete."; sleep 30
      ready: {log: "Application startup complete", timeout: 60s}
      model: %[3]s
  - id: use
    needs: [serve]
    steps:
      - run: |
          true
`, log, gate, model))
	state := filepath.Join(dir, "state")
	killRunnerWhen(t, p.File, state, "counted the model's page cache", func() bool {
		m, _ := filepath.Glob(filepath.Join(state, "steps", "serve", "*", cacheFile))
		return len(m) == 1
	})
	time.Sleep(300 * time.Millisecond) // a load that goes on while no runner watches
	h := startAgain(t, p, state)
	os.WriteFile(gate, nil, 0o644)
	st := h.finished(30 * time.Second)
	if s := st.Phase("use"); s.Status != Done {
		t.Fatalf("use = %s %q", s.Status, s.Reason)
	}
	loads, err := ReadLoads(state)
	if err != nil || len(loads) != 1 {
		t.Fatalf("loads = %+v, %v; want one", loads, err)
	}
	l := loads[0]
	if l.Cache == nil || l.Cache.Word() != "cold" {
		t.Errorf("the start's page cache: %+v; want the count the start had (cold)", l.Cache)
	}
	if len(l.Server) != 5 {
		t.Errorf("server stages %+v; want the 5 of vLLM's lines", l.Server)
	}
	if l.ReadyS < 0.3 {
		t.Errorf("ready after %.2f s; want the time from the step's start, the runner's absence included", l.ReadyS)
	}
}

// TestPrewarmHoldsNoGPU: a service's prewarm runs while another phase
// holds the GPU the service needs, and the phase's wait says so: the
// folder is read in before that phase ends, and the service starts only
// after it.
func TestPrewarmHoldsNoGPU(t *testing.T) {
	t.Parallel()
	model := modelDir(t)
	modelload.Evict(model)
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	p := loadCampaign(t, fmt.Sprintf(`
name: nogpu
phases:
  - id: busy
    gpus: [0]
    steps:
      - run: |
          while [ ! -e %[1]s ]; do sleep 0.05; done
  - id: serve
    gpus: [0]
    service:
      run: |
        echo up; sleep 30
      ready: {log: up}
      model: %[2]s
      prewarm: true
  - id: use
    needs: [serve]
    gpus: none
    steps:
      - run: |
          true
`, gate, model))
	opts := testOptions(t)
	opts.StateDir = filepath.Join(t.TempDir(), "state")
	h := start(t, p, opts)
	warmed := filepath.Join(opts.StateDir, "steps", "serve", "prewarm-a1", supervise.PrewarmFile)
	testutil.Eventually(t, 10*time.Second, "the prewarm's end while busy holds GPU 0", func() bool {
		_, err := os.Stat(warmed)
		return err == nil
	})
	st := h.r.Snapshot()
	if s := st.Phase("serve"); s.Status != Pending || !strings.Contains(s.WaitReason, "waits for GPU 0 held by busy") {
		t.Errorf("serve = %s, %q; want pending, waiting for GPU 0 held by busy", s.Status, s.WaitReason)
	}
	os.WriteFile(gate, nil, 0o644)
	end := h.finished(30 * time.Second)
	if s := end.Phase("use"); s.Status != Done {
		t.Fatalf("use = %s %q", s.Status, s.Reason)
	}
	if r, _ := modelload.Measure(t.Context(), model); r.Word() != "warm" {
		t.Errorf("after the prewarm the folder is %s", r)
	}
}

// TestPrewarmWords: the wait of a phase whose model is being read in
// says the bytes, the rate and the time left, in GB.
func TestPrewarmWords(t *testing.T) {
	w := &prewarmRun{dir: t.TempDir(), started: time.Now()}
	t0 := time.Now()
	os.WriteFile(filepath.Join(w.dir, "log"), []byte("greenlight: prewarm: reading /m into the page cache\ngreenlight: prewarm: 2.0/8.6 GB read, 2.00 GB/s\n"), 0o644)
	w.follow(t0)
	f, _ := os.OpenFile(filepath.Join(w.dir, "log"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("greenlight: prewarm: 4.0/8.6 GB read, 2.00 GB/s\n")
	f.Close()
	w.follow(t0.Add(time.Second))
	got := w.words(t0.Add(time.Second))
	if !strings.Contains(got, "4.0/8.6 GB") || !strings.Contains(got, "GB/s") || !strings.Contains(got, "left") || !strings.Contains(got, "no GPU held") {
		t.Errorf("words %q; want the GB read of the whole, a rate in GB/s, the time left", got)
	}
}

// TestLoadKilledMidStage: a prewarmed load whose runner is killed -9 at
// "loading weights": the next runner re-adopts the load (no reload) and
// its Load row keeps the prewarm the start had, and the stage reached
// before the kill began when it was seen, not when the log was read
// again (before: the prewarm was forgotten, and the stage's time shrank
// to what followed the re-adoption, its ETA starting over).
func TestLoadKilledMidStage(t *testing.T) {
	t.Parallel()
	model := modelDir(t)
	modelload.Evict(model)
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o644) }) // a failure leaves no load waiting
	path := filepath.Join(dir, "c.yaml")
	p := writeCampaign(t, path, fmt.Sprintf(`
name: midstage
phases:
  - id: serve
    service:
      run: |
        echo starting; echo "Loading safetensors checkpoint shards: 5/8"; while [ ! -e %[1]s ]; do sleep 0.05; done; echo "init engine took 0.1 seconds"; echo "INFO:     Application startup complete."; sleep 30
      ready: {log: "Application startup complete", timeout: 60s}
      model: %[2]s
      prewarm: true
      stages:
        - {name: process started, log: 'starting', share: 0.05}
        - {name: loading weights, log: 'Loading safetensors checkpoint shards', share: 0.75}
        - {name: engine init, log: 'init engine', share: 0.2}
  - id: use
    needs: [serve]
    steps:
      - run: |
          true
`, gate, model))
	state := filepath.Join(dir, "state")
	// Killed once the runner has seen the stage's line: it notes it in
	// the step's folder (a runner that does not is given 15 s: under the
	// race detector with every package's tests beside it, CI's runner once
	// took over 3 s, was killed before its note, and the test blamed the
	// mark).
	var printed time.Time
	killRunnerWhen(t, p.File, state, "seen the stage loading weights", func() bool {
		if !printed.IsZero() {
			m, _ := filepath.Glob(filepath.Join(state, "steps", "serve", "a1-*", stagesFile))
			return len(m) == 1 || time.Since(printed) > 15*time.Second
		}
		b, _ := os.ReadFile(filepath.Join(state, "journal.jsonl"))
		if !strings.Contains(string(b), `"kind":"step-pid"`) {
			return false
		}
		m, _ := filepath.Glob(filepath.Join(state, "steps", "serve", "a1-*.log"))
		if len(m) != 1 {
			return false
		}
		if log, _ := os.ReadFile(m[0]); strings.Contains(string(log), "5/8") {
			printed = time.Now()
		}
		return false
	})
	absent := time.Now()
	testutil.Eventually(t, 5*time.Second, "a second of the load while no runner watches", func() bool {
		return time.Since(absent) > time.Second
	})
	h := startAgain(t, p, state)
	os.WriteFile(gate, nil, 0o644)
	st := h.finished(30 * time.Second)
	if s := st.Phase("use"); s.Status != Done {
		t.Fatalf("use = %s %q", s.Status, s.Reason)
	}
	loads, err := ReadLoads(state)
	if err != nil || len(loads) != 1 {
		t.Fatalf("loads = %+v, %v; want one", loads, err)
	}
	l := loads[0]
	if l.Prewarm == nil || l.Prewarm.Read == 0 || l.Warmth() != "warm (prewarmed)" {
		t.Errorf("prewarm %+v, warmth %q; want the prewarm the start had", l.Prewarm, l.Warmth())
	}
	var weights float64 = -1
	for _, m := range l.Marks {
		if m.Name == "loading weights" {
			weights = m.Seconds
		}
	}
	if weights < 1 {
		t.Errorf("loading weights lasted %.2f s by its mark (marks %+v); want from when it was seen, the runner's absence (over 1 s) included", weights, l.Marks)
	}
}

// TestWarmthSaysAnEvictedPrewarm: a prewarm whose pages were taken back
// before the start is not called warm.
func TestWarmthSaysAnEvictedPrewarm(t *testing.T) {
	pre := &modelload.Prewarmed{Read: 100, Before: modelload.Residency{Bytes: 100}}
	at := &modelload.Residency{Bytes: 100, Resident: 62, Files: 1}
	l := Load{Prewarm: pre, Cache: at}
	if w := l.Warmth(); !strings.HasPrefix(w, at.Word()+": prewarmed, but 38 % of the folder was back out") {
		t.Errorf("warmth %q; want what the start found and why", w)
	}
	l.Cache = &modelload.Residency{Bytes: 100, Resident: 100, Files: 1}
	if w := l.Warmth(); w != "warm (prewarmed)" {
		t.Errorf("warmth %q; want warm (prewarmed)", w)
	}
}

// TestLoadKeptBeforeItsReadyWasJournaled: a runner killed between keeping
// a service's load and journaling it ready (here: the journal's ready
// record taken out after the kill) left the row; the next runner re-adopts
// the server, finds it ready and keeps no second row: one load, its ready
// time the first runner's.
func TestLoadKeptBeforeItsReadyWasJournaled(t *testing.T) {
	t.Parallel()
	model := modelDir(t)
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	path := filepath.Join(dir, "c.yaml")
	p := writeCampaign(t, path, fmt.Sprintf(`
name: kept
phases:
  - id: serve
    service:
      run: |
        echo "INFO:     Application startup complete."; sleep 30
      ready: {log: "Application startup complete", timeout: 60s}
      model: %[2]s
  - id: use
    needs: [serve]
    steps:
      - run: |
          while [ ! -e %[1]s ]; do sleep 0.05; done
`, gate, model))
	state := filepath.Join(dir, "state")
	killRunnerWhen(t, p.File, state, "kept the service's load and journaled it ready", func() bool {
		loads, _ := ReadLoads(state)
		b, _ := os.ReadFile(filepath.Join(state, "journal.jsonl"))
		return len(loads) == 1 && strings.Contains(string(b), `"kind":"service-ready"`)
	})
	first, _ := ReadLoads(state)
	// As if the kill came between the two: no ready in the journal.
	jp := filepath.Join(state, "journal.jsonl")
	b, _ := os.ReadFile(jp)
	var kept []string
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if !strings.Contains(l, `"kind":"service-ready"`) {
			kept = append(kept, l)
		}
	}
	os.WriteFile(jp, []byte(strings.Join(kept, "")), 0o644)
	h := startAgain(t, p, state)
	os.WriteFile(gate, nil, 0o644)
	st := h.finished(30 * time.Second)
	if s := st.Phase("use"); s.Status != Done {
		t.Fatalf("use = %s %q", s.Status, s.Reason)
	}
	loads, err := ReadLoads(state)
	if err != nil || len(loads) != 1 || len(first) != 1 || loads[0].ReadyS != first[0].ReadyS {
		t.Fatalf("loads = %+v, %v; want the first runner's one (%+v)", loads, err, first)
	}
}
