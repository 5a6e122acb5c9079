package report

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/metrics"
	"github.com/greenlight-run/greenlight/runner"
)

// TestServerTable: a phase that used the scraped service gets its Server
// table (gauges' mean and peak, counters' growth, the server's tokens per
// second). (A result the server's rate does not bear out is stamped by
// the monitor's witness: daemon's TestClientBound.)
func TestServerTable(t *testing.T) {
	plan := testPlan(t)
	s := &metrics.Scraper{}
	for i := 0; i <= 60; i++ { // a minute of scrapes, 2,000 tokens a second
		s.Add(metrics.Sample{T: t0.Add(time.Duration(i) * time.Second), V: map[string]float64{
			metrics.Running: 64, metrics.Waiting: float64(i % 2 * 10), metrics.KVUsage: 0.9 + float64(i%2)*0.03,
			metrics.GenTok: 2000 * float64(i), metrics.Preemptions: float64(i / 20)}})
	}
	path := filepath.Join(t.TempDir(), "s.md")
	w := NewWriter(path, plan, testEnv(), nil, "")
	w.SetServers(map[string]ServerView{"serve": s})
	st := fullState(plan)
	bench := st.Phase("bench")
	bench.Started, bench.Ended = t0, t0.Add(time.Minute)
	step := func(tok float64) runner.StepState {
		return runner.StepState{Status: runner.Done, Started: t0, Ended: t0.Add(time.Minute),
			Results: []runner.Row{{Cols: []string{"output_token_throughput_tok_s"}, Values: []any{tok}}}}
	}
	bench.Steps = []runner.StepState{step(1400), step(1990)}
	bench.Steps[1].Index = 1
	if err := w.Write(st); err != nil {
		t.Fatal(err)
	}
	md := readFileT(t, path)
	for _, want := range []string{
		"### Server: serve, as its /metrics saw the phase",
		"| requests running | 64 | 64 | |",
		"| requests waiting | 4.918 | 10 | |",
		"| KV cache used | 91.48 % | 93 % | |",
		"| preemptions | | | 3 |",
		"| generation | | | 2000 tok/s |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the record lacks %q", want)
		}
	}
}
