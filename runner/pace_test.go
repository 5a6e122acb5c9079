package runner

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// A service campaign with the stages of examples/kimi-k25-vllm.yaml.
func kimiService(t *testing.T, estimate string) *campaign.Plan {
	t.Helper()
	est := ""
	if estimate != "" {
		est = "\n      estimate: " + estimate
	}
	return loadCampaign(t, `
name: eta-replay
phases:
  - id: serve
    service:
      run: vllm serve
      ready: {log: 'Application startup complete'}`+est+`
      stages:
        - {name: process started, log: 'vLLM API server version', share: 0.01}
        - {name: engine starting, log: 'Initializing a V1 LLM engine', share: 0.04}
        - {name: loading weights, log: 'Loading safetensors checkpoint shards', share: 0.80}
        - {name: weights loaded, log: 'Loading weights took', share: 0.03}
        - {name: KV cache and CUDA graph capture, log: 'Capturing CUDA graph|Available KV cache memory', share: 0.10}
        - {name: API server starting, log: 'Starting vLLM API server', share: 0.01}
        - {name: ready, log: 'Application startup complete', share: 0.01}
`)
}

type logAt struct {
	at   time.Duration
	line string
}

// vllmReplay is a vLLM load of length total in vLLM's own log lines: the
// engine starting, 64 weight shards of uneven size with one 90 s stall
// (scaled with total), weights loaded, KV cache and 67 CUDA graph shapes,
// the API server. Its stages' true shares differ from the declared ones
// by a point or two, as a real load's do (1.5% for the process start,
// 80.5% for the weights, 14% after them, against 1, 80 and 15).
func vllmReplay(total time.Duration) []logAt {
	at := func(f float64) time.Duration { return time.Duration(f * float64(total)) }
	info := func(src, msg string) string { return fmt.Sprintf("INFO 12-02 14:00:00 [%s] %s", src, msg) }
	var out []logAt
	add := func(f float64, line string) { out = append(out, logAt{at(f), line}) }
	add(0.002, info("api_server.py:1897", "vLLM API server version 0.11.0"))
	add(0.015, info("core.py:74", "Initializing a V1 LLM engine (v0.11.0) with config: model='moonshotai/Kimi-K2.5', tensor_parallel_size=8"))
	// Weights: 0.055 to 0.86 of the load, uneven shards, a stall at shard 40.
	const shards = 64
	w := make([]float64, shards)
	sum := 0.0
	for i := range w {
		w[i] = 1 + 0.45*math.Sin(float64(i)*1.7)
		sum += w[i]
	}
	stall := 0.04 // 90 s of 36 min
	f := 0.055
	add(f, "(VllmWorker rank=0 pid=123) Loading safetensors checkpoint shards:   0% Completed | 0/64 [00:00<?, ?it/s]")
	for i := range w {
		f += (0.805 - stall) * w[i] / sum
		if i == 40 {
			f += stall
		}
		el := at(f - 0.055)
		add(f, fmt.Sprintf("\r(VllmWorker rank=0 pid=123) Loading safetensors checkpoint shards: %3d%% Completed | %d/%d [%s<%s, %.2fs/it]",
			(i+1)*100/shards, i+1, shards, mmss(el), "00:00", el.Seconds()/float64(i+1)))
	}
	add(0.86, info("gpu_model_runner.py:2000", fmt.Sprintf("Loading weights took %.2f seconds", at(0.805).Seconds())))
	add(0.885, info("gpu_worker.py:276", "Available KV cache memory: 21.47 GiB"))
	g := 0.895
	for i := 1; i <= 67; i++ {
		g += 0.075 / 67
		add(g, fmt.Sprintf("\rCapturing CUDA graph shapes: %3d%%|█████     | %d/67 [00:%02d<00:00, 20.1it/s]", i*100/67, i, i/20))
	}
	add(0.975, info("api_server.py:1830", "Starting vLLM API server 0 on http://0.0.0.0:8000"))
	add(0.99, info("launcher.py:44", "Application startup complete."))
	return out
}

// replayLoad feeds the replay to a starting service and returns its ETA
// at each fraction of the load's true length, and the state to learn from.
func replayLoad(t *testing.T, r *Runner, total time.Duration, fracs []float64) ([]ETA, *stepRun) {
	t.Helper()
	pr := r.phases[0]
	pr.state.Status = Running
	start := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	sr := &stepRun{r: r, pr: pr, step: pr.ph.AllSteps()[0], started: start, stage: -1}
	log := vllmReplay(total)
	var out []ETA
	next := 0
	for _, fr := range fracs {
		now := start.Add(time.Duration(fr * float64(total)))
		for ; next < len(log) && !start.Add(log[next].at).After(now); next++ {
			for _, part := range strings.Split(log[next].line, "\r") {
				if part != "" {
					sr.logLine([]byte(part), start.Add(log[next].at))
				}
			}
		}
		out = append(out, sr.serviceETA(now))
	}
	return out, sr
}

func newReplayRunner(t *testing.T, plan *campaign.Plan, stateDir string) *Runner {
	t.Helper()
	opts := testOptions(t)
	opts.StateDir = stateDir
	r, err := New(plan, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestServiceETALearnsThePace: the same 36-minute load replayed with the
// estimate right, 2x long, 2x short, absent, and 18x long (a compressed
// replay with the estimate left at 36m). At 50% and 75% of the load the
// ETA is within 10% of the truth, at 25% within 15% (a stall still ahead
// cannot be foreseen). A second load, with history from the first, is
// within 10% at 25, 50 and 75% whatever its estimate says.
func TestServiceETALearnsThePace(t *testing.T) {
	t.Parallel()
	fracs := []float64{0.25, 0.5, 0.75}
	limit := []float64{0.15, 0.10, 0.10}
	tests := []struct {
		name     string
		total    time.Duration
		estimate string
	}{
		{"estimate right", 36 * time.Minute, "36m"},
		{"estimate 2x long", 36 * time.Minute, "72m"},
		{"estimate 2x short", 36 * time.Minute, "18m"},
		{"no estimate", 36 * time.Minute, ""},
		{"compressed, estimate 36m", 2 * time.Minute, "36m"},
	}
	var table []string
	for _, tt := range tests {
		state := filepath.Join(t.TempDir(), "state")
		plan := kimiService(t, tt.estimate)
		r := newReplayRunner(t, plan, state)
		etas, sr := replayLoad(t, r, tt.total, fracs)
		row := fmt.Sprintf("%-26s", tt.name)
		for i, e := range etas {
			truth := time.Duration((1 - fracs[i]) * float64(tt.total))
			off := (float64(e.Remaining) - float64(truth)) / float64(truth)
			row += fmt.Sprintf(" %+6.1f%% (%s)", off*100, e.Source)
			if !e.Known || math.Abs(off) > limit[i] {
				t.Errorf("%s at %.0f%%: ETA %s (%s), truth %s: off by %+.1f%%; want within %.0f%%",
					tt.name, fracs[i]*100, e.Text(), e.Source, format.Duration(truth), off*100, limit[i]*100)
			}
		}
		table = append(table, row)
		// The load reached ready: learn it, then load again from history.
		ready := sr.started.Add(tt.total)
		r.store.hist.add(sr.step.Key, tt.total)
		sr.learnStages(ready)
		r.Close()
		r2 := newReplayRunner(t, plan, state)
		etas, _ = replayLoad(t, r2, tt.total, fracs)
		row = fmt.Sprintf("%-26s", "  second load, history")
		for i, e := range etas {
			truth := time.Duration((1 - fracs[i]) * float64(tt.total))
			off := (float64(e.Remaining) - float64(truth)) / float64(truth)
			row += fmt.Sprintf(" %+6.1f%% (%s)", off*100, e.Source)
			if !e.Known || math.Abs(off) > 0.10 {
				t.Errorf("%s, second load at %.0f%%: ETA %s (%s), truth %s: off by %+.1f%%; want within 10%%",
					tt.name, fracs[i]*100, e.Text(), e.Source, format.Duration(truth), off*100)
			}
		}
		table = append(table, row)
	}
	t.Logf("ETA error at 25%% / 50%% / 75%% of the load:\n%s", strings.Join(table, "\n"))
}

// TestServiceETAHoldsAndNeverZero: through the whole replay, sampled every
// second, the ETA never shows zero or a negative while the load runs,
// never rises by more than the 90 s stall or a tenth of what is left (a
// stall is held, not extrapolated), and with no estimate says so until
// something is measured.
func TestServiceETAHoldsAndNeverZero(t *testing.T) {
	t.Parallel()
	total := 36 * time.Minute
	var fracs []float64
	for s := 1; s < int(total.Seconds())-5; s++ {
		fracs = append(fracs, float64(s)/total.Seconds())
	}
	for _, est := range []string{"36m", "72m", ""} {
		r := newReplayRunner(t, kimiService(t, est), filepath.Join(t.TempDir(), "state"))
		etas, _ := replayLoad(t, r, total, fracs)
		var prev ETA
		for i, e := range etas {
			if !e.Known {
				if est != "" {
					t.Fatalf("estimate %q: no ETA at %.1f%%", est, fracs[i]*100)
				}
				if e.Text() != "no estimate" {
					t.Fatalf("no estimate, nothing measured: says %q", e.Text())
				}
				continue
			}
			if e.Remaining <= 0 {
				t.Fatalf("estimate %q: ETA %s at %.1f%% of a running load", est, e.Text(), fracs[i]*100)
			}
			// A stage or the first shards measured slower than expected
			// may raise it, by no more than a tenth of what is left.
			if prev.Known && e.Remaining > prev.Remaining+max(90*time.Second, prev.Remaining/10) {
				t.Errorf("estimate %q: ETA jumped from %s to %s at %.1f%%", est, prev.Text(), e.Text(), fracs[i]*100)
			}
			prev = e
		}
	}
}

// TestETAWithoutBasisSaysSo: a running step with no estimate anywhere, on
// its own or as part of a campaign, reads "no estimate", never "≥ 0s".
func TestETAWithoutBasisSaysSo(t *testing.T) {
	t.Parallel()
	for _, e := range []ETA{{}, {Known: true, Partial: true}, {Known: true, Partial: true, Remaining: 300 * time.Millisecond}} {
		if got := e.Text(); got != "no estimate" {
			t.Errorf("%+v.Text() = %q; want no estimate", e, got)
		}
	}
	if got := (ETA{Known: true, Partial: true, Remaining: 5 * time.Minute}).Text(); got != "≥ 5m00s" {
		t.Errorf("a lower bound reads %q; want ≥ 5m00s", got)
	}
	p := loadCampaign(t, "name: none\nphases:\n  - id: a\n    steps: [{run: 'sleep 1'}]\n")
	h := start(t, p, testOptions(t))
	e := h.kind(StepStarted, "a")
	if got := e.State.ETA.Text(); got != "no estimate" {
		t.Errorf("campaign ETA of a running step with no estimate: %q", got)
	}
	h.finished(10 * time.Second)
}

// TestLaterStepsTakeTheLearnedPace: the first of three steps estimated at
// 10 minutes each took 20; the one running and the one after are expected
// at about 20 each, and the source says the pace was learned.
func TestLaterStepsTakeTheLearnedPace(t *testing.T) {
	t.Parallel()
	p := loadCampaign(t, `
name: steps
phases:
  - id: sweep
    steps:
      - {run: a, estimate: 10m}
      - {run: b, estimate: 10m}
      - {run: c, estimate: 10m}
`)
	opts := testOptions(t)
	opts.StateDir = t.TempDir()
	r, err := New(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pr := r.phases[0]
	t0 := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	pr.state.Status, pr.state.Started, pr.state.Current = Running, t0, 1
	pr.state.Steps[0] = StepState{Status: Done, Started: t0, Ended: t0.Add(20 * time.Minute)}
	pr.state.Steps[1] = StepState{Index: 1, Status: Running, Started: t0.Add(20 * time.Minute)}
	sr := &stepRun{r: r, pr: pr, step: p.Phases[0].Steps[1], started: t0.Add(20 * time.Minute), stage: -1}
	sr.updateETA(t0.Add(25 * time.Minute))
	// Step b has 15 of its ~20 minutes left, c takes ~20: 35m, less the
	// little the guess still counts.
	if e := pr.state.ETA; e.Source != SourceLearned || e.Remaining < 31*time.Minute || e.Remaining > 36*time.Minute {
		t.Errorf("after a step that took 2x: %s from %s; want about 35m from the learned pace", e.Text(), e.Source)
	}
}

// TestWaitReasons: a phase that has not started says why it waits.
func TestWaitReasons(t *testing.T) {
	t.Parallel()
	p := loadCampaign(t, `
name: waits
phases:
  - id: serve
    gpus: [0, 1]
    service: {run: s, ready: {log: up}}
  - id: macro
    needs: [serve]
    steps: [{run: m}]
  - id: gemm
    gpus: [0]
    steps: [{run: g}]
  - id: later
    needs: [gemm]
    steps: [{run: l}]
  - id: nsys
    gpus: [3]
    gate: manual
    steps: [{run: n}]
`)
	opts := testOptions(t)
	opts.StateDir = t.TempDir()
	r, err := New(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	serve := r.phases[0]
	serve.state.Status = Running
	serve.cur = &stepRun{r: r, pr: serve, step: serve.ph.AllSteps()[0]}
	want := map[string]string{
		"macro": "waits for serve to be ready",
		"gemm":  "waits for GPU 0 held by serve",
		"later": "waits for gemm",
		"nsys":  "waits for your greenlight",
	}
	st := r.snapshot()
	for id, w := range want {
		if got := st.Phase(id).WaitReason; got != w {
			t.Errorf("%s: %q; want %q", id, got, w)
		}
	}
	r.q.paused, r.q.pauseWhy = true, "disk nearly full: 1 GiB free"
	if got := r.snapshot().Phase("nsys").WaitReason; got != "paused: disk nearly full: 1 GiB free" {
		t.Errorf("paused: %q", got)
	}
}

// TestFreezeWithNothingRunningSaysSo: f with no step running is refused
// with the reason, and nothing is left frozen for the next step.
func TestFreezeWithNothingRunningSaysSo(t *testing.T) {
	t.Parallel()
	p := loadCampaign(t, "name: idle\nphases:\n  - id: a\n    gate: manual\n    steps: [{run: 'true'}]\n")
	h := start(t, p, testOptions(t))
	h.kind(GateWaiting, "a")
	if err := h.r.Freeze(); err == nil || !strings.Contains(err.Error(), "no step is running") {
		t.Errorf("Freeze with nothing running = %v; want it refused", err)
	}
	if h.r.Snapshot().Frozen {
		t.Error("the campaign reads frozen with nothing frozen")
	}
}
