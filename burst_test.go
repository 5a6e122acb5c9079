package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/supervise"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/report"
	"github.com/greenlight-run/greenlight/runner"
)

// burst is a step that appends n result rows to $GREENLIGHT_RESULTS (or
// $BURST_OUT) as fast as a benchmark would, each stamped with the time it
// was written.
func burst(n string) int {
	rows, err := strconv.Atoi(n)
	if err != nil {
		return 2
	}
	path := os.Getenv("GREENLIGHT_RESULTS")
	if path == "" {
		path = os.Getenv("BURST_OUT")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return 1
	}
	defer f.Close()
	for i := 0; i < rows; i++ {
		// One write per row, unbuffered, as print(..., flush=True) does.
		fmt.Fprintf(f, `{"i": %d, "t_ns": %d, "tok_s": %d, "kernel": "gemm_%d"}`+"\n", i, time.Now().UnixNano(), 50+i%17, i%9)
	}
	return 0
}

// BenchmarkResultBurst: one step writes N result rows in a burst. It
// reports the step's time alone and under greenlight (runner, report
// writer: the markdown with its summarised table and the CSV, every write
// fsynced), their ratio, and the delay from a row being appended to the
// CSV holding it being fsynced (p50, p99, max). Budget: ratio under 2,
// p99 under 100 ms, at 1k, 5k and 20k rows.
//
//	go test -run X -bench ResultBurst -benchtime 1x .
func BenchmarkResultBurst(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 1000, 5000, 20000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			var alone, under time.Duration
			var delays []time.Duration
			for i := 0; i < b.N; i++ {
				alone += burstAlone(b, exe, n)
				d, ds := burstUnder(b, exe, n)
				under += d
				delays = append(delays, ds...)
			}
			slices.Sort(delays)
			pct := func(p float64) float64 {
				return float64(delays[int(p*float64(len(delays)-1))].Microseconds()) / 1000
			}
			b.ReportMetric(float64(alone.Milliseconds())/float64(b.N), "ms-alone")
			b.ReportMetric(float64(under.Milliseconds())/float64(b.N), "ms-greenlight")
			b.ReportMetric(float64(under)/float64(alone), "ratio")
			b.ReportMetric(pct(0.5), "ms-p50")
			b.ReportMetric(pct(0.99), "ms-p99")
			b.ReportMetric(pct(1), "ms-max")
		})
	}
}

func burstAlone(b *testing.B, exe string, n int) time.Duration {
	out := filepath.Join(b.TempDir(), "rows.jsonl")
	start := time.Now()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), fmt.Sprintf("GREENLIGHT_TEST_BURST=%d", n), "BURST_OUT="+out)
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

func burstUnder(b *testing.B, exe string, n int) (time.Duration, []time.Duration) {
	dir := b.TempDir()
	c := filepath.Join(dir, "c.yaml")
	os.WriteFile(c, []byte(fmt.Sprintf(`name: burst
phases:
  - id: a
    steps:
      - run: |
          GREENLIGHT_TEST_BURST=%d exec %q
`, n, exe)), 0o644)
	plan, err := campaign.Load(c)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	r, err := runner.New(plan, runner.Options{Self: []string{binary(b), supervise.Command}})
	if err != nil {
		b.Fatal(err)
	}
	w := report.NewWriter(plan.Report, plan, report.Env{Inventory: gpu.Inventory{Source: "none"}}, nil, r.StateDir())
	type written struct {
		rows int
		at   time.Time
	}
	var mu sync.Mutex
	var writes []written
	w.OnWrite = func(st *runner.State, at time.Time) {
		rows := len(st.Phases[0].Steps[0].Results)
		mu.Lock()
		writes = append(writes, written{rows, at})
		mu.Unlock()
	}
	events := r.Subscribe()
	done := make(chan struct{})
	go func() { w.Run(events, nil); close(done) }()
	r.Start()
	finished := r.Subscribe()
	for e := range finished {
		if e.Kind == runner.CampaignFinished {
			break
		}
	}
	r.Close()
	<-done
	took := time.Since(start)
	// Each row's delay: from its stamp to the first write holding it.
	f, err := os.Open(filepath.Join(dir, "burst.a.csv"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header: step,recorded,i,t_ns,...
	var delays []time.Duration
	k := 0
	for row := 0; sc.Scan(); row++ {
		fields := splitCSV(sc.Text())
		i, _ := strconv.ParseInt(fields[2], 10, 64)
		tns, _ := strconv.ParseFloat(fields[3], 64)
		for k < len(writes) && writes[k].rows <= int(i) {
			k++
		}
		if k == len(writes) {
			b.Fatalf("row %d never reported written", i)
		}
		delays = append(delays, writes[k].at.Sub(time.Unix(0, int64(tns))))
	}
	if len(delays) != n {
		b.Fatalf("the CSV holds %d rows; want %d", len(delays), n)
	}
	return took, delays
}

func splitCSV(line string) []string {
	var out []string
	start := 0
	for i := 0; i < len(line); i++ {
		if line[i] == ',' {
			out = append(out, line[start:i])
			start = i + 1
		}
	}
	return append(out, line[start:])
}
