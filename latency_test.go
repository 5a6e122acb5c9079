package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/supervise"

	"github.com/fsnotify/fsnotify"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/report"
	"github.com/greenlight-run/greenlight/runner"
)

// BenchmarkResultToDisk measures how long a result takes from the moment
// a step appends it to $GREENLIGHT_RESULTS to the moment the results file
// on disk (written with fsync and rename) shows it. Budget: 100 ms.
//
//	go test -run XXX -bench ResultToDisk -benchtime 3x .
func BenchmarkResultToDisk(b *testing.B) {
	var total, worst time.Duration
	n := 0
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		c := filepath.Join(dir, "c.yaml")
		os.WriteFile(c, []byte(`name: latency
phases:
  - id: a
    steps:
      - run: |
          for i in $(seq 1 20); do echo "{\"i\": $i, \"t\": $(date +%s%N)}" >> $GREENLIGHT_RESULTS; sleep 0.1; done
`), 0o644)
		plan, err := campaign.Load(c)
		if err != nil {
			b.Fatal(err)
		}
		r, err := runner.New(plan, runner.Options{Self: []string{binary(b), supervise.Command}})
		if err != nil {
			b.Fatal(err)
		}
		w := report.NewWriter(plan.Report, plan, report.Env{Inventory: gpu.Inventory{Source: "none"}}, nil, r.StateDir())
		events := r.Subscribe()
		done := make(chan struct{})
		go func() { w.Run(events, nil); close(done) }()
		watch, _ := fsnotify.NewWatcher()
		watch.Add(dir)
		seen := map[string]bool{}
		row := regexp.MustCompile(`\| (\d+) \| (\d{19}) \|`)
		r.Start()
		stop := time.After(20 * time.Second)
	loop:
		for len(seen) < 20 {
			select {
			case <-watch.Events:
				now := time.Now()
				data, _ := os.ReadFile(plan.Report)
				for _, m := range row.FindAllStringSubmatch(string(data), -1) {
					if seen[m[1]] {
						continue
					}
					seen[m[1]] = true
					ns, _ := strconv.ParseInt(m[2], 10, 64)
					d := now.Sub(time.Unix(0, ns))
					total += d
					worst = max(worst, d)
					n++
				}
			case <-stop:
				break loop
			}
		}
		watch.Close()
		r.Close()
		<-done
		if len(seen) < 20 {
			b.Fatalf("only %d of 20 results reached the file", len(seen))
		}
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(n), "ms-mean")
	b.ReportMetric(float64(worst.Milliseconds()), "ms-max")
}
