package runner

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/internal/format"
)

// vllmLoad returns the times at which each of 64 shards finished in a
// 36-minute load: shards of uneven size (±45%) and one stall of 90 s.
func vllmLoad() (done []time.Duration, total time.Duration) {
	const shards = 64
	weights := make([]float64, shards)
	sum := 0.0
	for i := range weights {
		weights[i] = 1 + 0.45*math.Sin(float64(i)*1.7) // uneven, deterministic
		sum += weights[i]
	}
	stall := 90 * time.Second
	work := 36*time.Minute - stall
	var t time.Duration
	for i, w := range weights {
		t += time.Duration(float64(work) * w / sum)
		if i == 40 {
			t += stall // the filesystem hiccups
		}
		done = append(done, t)
	}
	return done, t
}

// tqdmLine is what vLLM prints for shard progress, \r-separated on stderr.
func tqdmLine(i, n int, el, left time.Duration) string {
	return fmt.Sprintf("\rLoading safetensors checkpoint shards: %3d%% Completed | %d/%d [%s<%s, %.2fs/it]",
		i*100/n, i, n, mmss(el), mmss(left), el.Seconds()/float64(max(i, 1)))
}

func mmss(d time.Duration) string {
	s := int(d.Seconds())
	return fmt.Sprintf("%02d:%02d", s/60, s%60)
}

// TestETAThroughA36MinuteLoad replays the load's log lines with a fake
// clock and checks the ETA at 25%, 50% and 75% of the real duration.
func TestETAThroughA36MinuteLoad(t *testing.T) {
	t.Parallel()
	done, total := vllmLoad()
	start := time.Date(2026, 12, 2, 14, 0, 0, 0, time.UTC)
	var p progressTrack
	next := 0
	feed := func(now time.Time) {
		for next < len(done) && start.Add(done[next]).Before(now) {
			// One chunk of stderr: the \r redraws split as the runner splits them.
			chunk := tqdmLine(next+1, 64, done[next], 0)
			for _, part := range strings.Split(chunk, "\r") {
				if d, tot, ok := parseProgress(nil, part); ok {
					p.observe(start.Add(done[next]), d, tot)
				}
			}
			next++
		}
	}
	for _, frac := range []float64{0.25, 0.5, 0.75} {
		now := start.Add(time.Duration(frac * float64(total)))
		feed(now)
		e := stepETA(now, start, &p, 0, 36*time.Minute, 0)
		truth := total - now.Sub(start)
		errRel := math.Abs(float64(e.Remaining-truth)) / float64(truth)
		if e.Source != SourceProgress || !e.Known || errRel > 0.10 {
			t.Errorf("at %.0f%%: ETA %s (%s), truth %s: off by %.1f%%; want log progress within 10%%",
				frac*100, format.Duration(e.Remaining), e.Source, format.Duration(truth), errRel*100)
		} else {
			t.Logf("at %.0f%%: ETA %s, truth %s, off by %.1f%%, rate %s, %v/%v", frac*100, format.Duration(e.Remaining), format.Duration(truth), errRel*100, e.Rate, e.Done, e.Total)
		}
	}
}

// TestETADuringStallHolds: while no shard finishes, the ETA stops falling
// at what the remaining shards take; it never counts down to zero.
func TestETADuringStallHolds(t *testing.T) {
	t.Parallel()
	start := time.Unix(0, 0)
	var p progressTrack
	for i := 0; i <= 32; i++ {
		p.observe(start.Add(time.Duration(i)*30*time.Second), float64(i), 64)
	}
	last := start.Add(32 * 30 * time.Second)
	floor := 31 * 30 * time.Second
	for _, stall := range []time.Duration{0, time.Minute, 10 * time.Minute, 40 * time.Minute} {
		e := stepETA(last.Add(stall), start, &p, 0, 0, 0)
		if !e.Known || e.Remaining < floor || e.Remaining > 32*30*time.Second {
			t.Errorf("stalled %s: ETA %s; want between %s and 16m", stall, format.Duration(e.Remaining), format.Duration(floor))
		}
	}
}

func TestETAFromHistoryIgnoresOutlier(t *testing.T) {
	t.Parallel()
	hist := []time.Duration{10 * time.Minute, 11 * time.Minute, 45 * time.Minute, 10*time.Minute + 30*time.Second, 11 * time.Minute}
	typ := typical(hist)
	if typ != 11*time.Minute {
		t.Fatalf("typical(%v) = %s; want the median 11m, not the mean", hist, typ)
	}
	start := time.Unix(0, 0)
	real := 11 * time.Minute
	for _, frac := range []float64{0.25, 0.5, 0.75} {
		now := start.Add(time.Duration(frac * float64(real)))
		e := stepETA(now, start, nil, typ, 20*time.Minute, 0)
		truth := real - now.Sub(start)
		if e.Source != SourceHistory || math.Abs(float64(e.Remaining-truth)) > 0.1*float64(truth) {
			t.Errorf("at %.0f%%: ETA %s from %s; truth %s", frac*100, format.Duration(e.Remaining), e.Source, format.Duration(truth))
		}
	}
}

func TestETAOverrunAndNothingKnown(t *testing.T) {
	t.Parallel()
	start := time.Unix(0, 0)
	e := stepETA(start.Add(9*time.Minute), start, nil, 0, 5*time.Minute, 0)
	if e.Known || e.Over != 4*time.Minute || e.Source != SourceEstimate {
		t.Errorf("overrun: %+v; want over by 4m from the estimate, no remaining time", e)
	}
	e = stepETA(start.Add(time.Minute), start, nil, 0, 0, 0)
	if e.Known || e.Source != "" || e.Remaining != 0 {
		t.Errorf("nothing known: %+v; want no estimate", e)
	}
}

func TestParseProgressFormats(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line        string
		done, total float64
		ok          bool
	}{
		{"Loading safetensors checkpoint shards:  45% Completed | 29/64 [12:10<14:20, 11.4s/it]", 29, 64, true},
		{"Capturing CUDA graph shapes:  60%|██████    | 40/67 [00:02<00:01, 20.1it/s]", 40, 67, true},
		{" 37%|███▋      | 37/100 [00:03<00:06,  9.8it/s]", 37, 100, true},
		{"gemm: 95%| 94/98 [lm_head M=512]", 95, 100, true},
		{"INFO 12-02 14:00:00 [core.py:74] loading 3/4 of something", 0, 0, false},
	}
	for _, tt := range tests {
		d, tot, ok := parseProgress(nil, tt.line)
		if ok != tt.ok || d != tt.done || tot != tt.total {
			t.Errorf("parseProgress(%q) = %v, %v, %v; want %v, %v, %v", tt.line, d, tot, ok, tt.done, tt.total, tt.ok)
		}
	}
}

func TestCampaignETASimulatesTheQueue(t *testing.T) {
	t.Parallel()
	m := time.Minute
	phases := []simPhase{
		{id: "serve", service: true, running: true, remaining: 14 * m, known: true},
		{id: "gemm", gpus: []int{0}, remaining: 10 * m, known: true},
		{id: "macro", needs: []string{"serve"}, remaining: 8 * m, known: true},
		{id: "nsys", needs: []string{"macro"}, remaining: 45 * m, known: true, waiting: true},
	}
	// serve holds every GPU while it loads: gemm waits for it, then gemm
	// (GPU 0) and macro (all GPUs) cannot overlap either.
	e := campaignETA(phases)
	want := 14*m + 10*m + 8*m + 45*m
	if !e.Known || e.Remaining != want || !e.Waiting {
		t.Errorf("campaign ETA %s (waiting %v); want %s with a gate waiting", format.Duration(e.Remaining), e.Waiting, format.Duration(want))
	}
	// Disjoint GPUs overlap.
	e = campaignETA([]simPhase{{id: "a", gpus: []int{0}, remaining: 10 * m, known: true}, {id: "b", gpus: []int{1}, remaining: 7 * m, known: true}})
	if e.Remaining != 10*m {
		t.Errorf("disjoint phases: %s; want 10m", format.Duration(e.Remaining))
	}
	// A swept service's points (on Slurm: no GPU of this machine held)
	// run in turn: each load after the previous point's benchmark.
	e = campaignETA([]simPhase{
		{id: "serve.1", service: true, slurm: true, remaining: 36 * m, known: true},
		{id: "bench.1", needs: []string{"serve.1"}, slurm: true, remaining: 5 * m, known: true},
		{id: "serve.2", service: true, slurm: true, after: []string{"serve.1", "bench.1"}, remaining: 36 * m, known: true},
		{id: "bench.2", needs: []string{"serve.2"}, slurm: true, remaining: 5 * m, known: true},
	})
	if want := 2 * (36*m + 5*m); e.Remaining != want {
		t.Errorf("two service points: %s; want %s", format.Duration(e.Remaining), format.Duration(want))
	}
}

// TestHistorySurvivesRestart: the second run of a campaign knows how long
// its step took the first time.
func TestHistorySurvivesRestart(t *testing.T) {
	t.Parallel()
	p := loadCampaign(t, "name: hist\nphases:\n  - id: a\n    steps: [{run: 'sleep 0.5'}]\n")
	opts := testOptions(t)
	opts.StateDir = t.TempDir()
	h := start(t, p, opts)
	h.finished(10 * time.Second)
	h.r.Close()
	p2 := loadCampaign(t, "name: hist\nphases:\n  - id: a\n    steps: [{run: 'sleep 0.5'}]\n")
	p2.Phases[0].Steps[0].Key = p.Phases[0].Steps[0].Key // same command, other temp folder
	p2.Phases[0].Hash = "changed"                        // run it again
	r, err := New(p2, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	e := r.snapshot().Phases[0].ETA
	if e.Source != SourceHistory || e.Remaining < 400*time.Millisecond || e.Remaining > 2*time.Second {
		t.Errorf("second run's ETA %+v; want about 0.5s from history", e)
	}
}

// TestETAFromBatchedProgress: a fast step's bar is read four times a
// second, so many of its lines arrive in one read with one time. The rate
// still comes from the log (it read as "from estimate" on an H200).
func TestETAFromBatchedProgress(t *testing.T) {
	t.Parallel()
	start := time.Unix(0, 0)
	var p progressTrack
	pct := 0
	for read := 1; read <= 8; read++ {
		at := start.Add(time.Duration(read) * 250 * time.Millisecond)
		for i := 0; i < 3; i++ { // three redraws a read, 1% each
			pct++
			p.observe(at, float64(pct), 100)
		}
	}
	now := start.Add(2 * time.Second)
	e := stepETA(now, start, &p, 0, 90*time.Second, 0)
	// 24% in 2 s: 76% left at 12%/s is about 6.3 s.
	if e.Source != SourceProgress || e.Remaining < 5*time.Second || e.Remaining > 8*time.Second {
		t.Errorf("ETA %s from %s; want about 6s from log progress", e.Text(), e.Source)
	}
}
