package metrics

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestBothGenerations: vLLM's metrics of either name generation read
// into the same series.
func TestBothGenerations(t *testing.T) {
	v1, _ := os.ReadFile("testdata/vllm-v1.txt")
	got, err := Parse(strings.NewReader(strings.Replace(string(v1), "GEN", "5e5", 1)), []string{"vllm:time_to_first_token_seconds_count"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{Running: 64, Waiting: 12, KVUsage: 0.93, Preemptions: 3, PromptTok: 1.2e6, GenTok: 5e5, PrefixHits: 2e5, PrefixQuery: 8e5}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("v1 %s = %v, want %v", k, got[k], v)
		}
	}
	v0, _ := os.ReadFile("testdata/vllm-v0.txt")
	old, err := Parse(strings.NewReader(string(v0)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if old[KVUsage] != 0.41 || old[Running] != 32 || old[GenTok] != 9000 {
		t.Errorf("v0 read as %v", old)
	}
	if _, err := Parse(strings.NewReader("not { metrics"), nil); err == nil {
		t.Error("garbage read as metrics")
	}
}

// TestOtherServersAndReasons: SGLang's page reads into the same series;
// vLLM's requests finished (over every finished_reason), turned away at
// admission, and waiting for room (num_requests_waiting_by_reason's
// capacity alone, not its deferred) are read; a label the page does not
// have is no series, not zero.
func TestOtherServersAndReasons(t *testing.T) {
	sg := `# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m",tp_rank="0"} 24
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="m",tp_rank="0"} 8
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="m"} 0.97
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="m"} 7.5e6
# TYPE sglang:num_requests_total counter
sglang:num_requests_total{model_name="m"} 1200
# TYPE sglang:num_aborted_requests_total counter
sglang:num_aborted_requests_total{model_name="m"} 3
`
	got, err := Parse(strings.NewReader(sg), nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]float64{Running: 24, Waiting: 8, KVUsage: 0.97, GenTok: 7.5e6, Success: 1200, Aborted: 3} {
		if got[k] != v {
			t.Errorf("SGLang %s = %v; want %v", k, got[k], v)
		}
	}
	vl := `# TYPE vllm:request_success_total counter
vllm:request_success_total{finished_reason="stop",model_name="m"} 90
vllm:request_success_total{finished_reason="length",model_name="m"} 10
# TYPE vllm:admission_rejections_total counter
vllm:admission_rejections_total{model_name="m"} 4
# TYPE vllm:num_requests_waiting_by_reason gauge
vllm:num_requests_waiting_by_reason{reason="capacity",model_name="m"} 6
vllm:num_requests_waiting_by_reason{reason="deferred",model_name="m"} 2
`
	got, err = Parse(strings.NewReader(vl), nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]float64{Success: 100, Rejected: 4, WaitingForRoom: 6} {
		if got[k] != v {
			t.Errorf("vLLM %s = %v; want %v", k, got[k], v)
		}
	}
	trt := "# TYPE trtllm_request_success_total counter\ntrtllm_request_success_total{finished_reason=\"stop\",model_name=\"m\"} 41\n"
	if got, err := Parse(strings.NewReader(trt), nil); err != nil || got[Success] != 41 {
		t.Errorf("TensorRT-LLM's requests finished = %v (%v); want 41", got[Success], err)
	}
	got, _ = Parse(strings.NewReader(strings.ReplaceAll(vl, `reason="capacity"`, `reason="other"`)), nil)
	if _, has := got[WaitingForRoom]; has {
		t.Errorf("no capacity reason on the page, yet waiting for room = %v", got[WaitingForRoom])
	}
}

// TestScrapeWindow: a fixture server whose generation counter grows 2,000
// tokens a scrape; the scraper, one request at a time, gives the window's
// gauges and the server's tokens per second.
func TestScrapeWindow(t *testing.T) {
	v1, _ := os.ReadFile("testdata/vllm-v1.txt")
	var n, open, most atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c := open.Add(1); c > most.Load() {
			most.Store(c)
		}
		defer open.Add(-1)
		gen := 2000 * n.Add(1)
		fmt.Fprint(w, strings.Replace(string(v1), "GEN", fmt.Sprint(gen), 1))
	}))
	defer srv.Close()
	s := &Scraper{URL: srv.URL, Interval: 50 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	go s.Run(ctx)
	for n.Load() < 6 {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	sum := s.Window(start, time.Now())
	if sum.Scrapes < 5 || sum.Series[Running].Mean != 64 || sum.Series[KVUsage].Peak != 0.93 {
		t.Fatalf("window %+v", sum)
	}
	rate, ok := sum.GenRate()
	per := sum.To.Sub(sum.From).Seconds() / float64(sum.Scrapes-1)
	if !ok || math.Abs(rate-2000/per) > 1 {
		t.Errorf("generation %v tok/s; want 2000 tokens per %.3f s", rate, per)
	}
	if most.Load() > 1 {
		t.Errorf("%d requests were open at once; want one at most", most.Load())
	}
}

// TestCounterAcrossARestart: a counter that drops (the server restarted)
// counts from zero again, not as negative growth.
func TestCounterAcrossARestart(t *testing.T) {
	s := &Scraper{}
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	for i, v := range []float64{100, 300, 50, 150} {
		s.Add(Sample{T: t0.Add(time.Duration(i) * time.Second), V: map[string]float64{GenTok: v}})
	}
	if d := s.Window(t0, t0.Add(time.Hour)).Series[GenTok].Delta; d != 200+50+100 {
		t.Errorf("growth %v; want 350 (200, then 50 from a restart, then 100)", d)
	}
}

// TestLine: the window's line is the last scrape's gauges, tokens/s
// between the last two scrapes (and each pair before, as history),
// preemptions since the first scrape kept; a series not exported is NaN.
func TestLine(t *testing.T) {
	s := &Scraper{}
	if l := s.Line(10); !math.IsNaN(l.TokS) || !l.At.IsZero() {
		t.Errorf("no scrape yet: %+v", l)
	}
	t0 := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	for i, gen := range []float64{1000, 5000, 13000} {
		s.Add(Sample{T: t0.Add(time.Duration(2*i) * time.Second), V: map[string]float64{Running: 64, Waiting: 12, KVUsage: 0.93, GenTok: gen, Preemptions: float64(5 + i)}})
	}
	l := s.Line(10)
	if l.Running != 64 || l.Waiting != 12 || l.KV != 0.93 || l.TokS != 4000 || l.Preemptions != 2 {
		t.Errorf("line %+v", l)
	}
	if len(l.History) != 2 || l.History[0] != 2000 || l.History[1] != 4000 {
		t.Errorf("history %v, want [2000 4000]", l.History)
	}
	if h := s.Line(1).History; len(h) != 1 || h[0] != 4000 {
		t.Errorf("one point of history: %v", h)
	}
}

// TestKeptScrapesLoadBack: scrapes kept in a file are the same history
// loaded back (a runner started again, greenlight report): the same
// window summary; a torn last line is left out.
func TestKeptScrapesLoadBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics", "serve.jsonl")
	s := &Scraper{Keep: path}
	t0 := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	for i := range 10 {
		s.Add(Sample{T: t0.Add(time.Duration(i) * 2 * time.Second), V: map[string]float64{Running: float64(i), GenTok: float64(100 * i), KVUsage: math.NaN()}})
	}
	s.Close()
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"t":"2026-12-04T09:01:00Z","v":{"runn`)
	f.Close()
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	from, to := t0.Add(3*time.Second), t0.Add(15*time.Second)
	got, want := back.Window(from, to), s.Window(from, to)
	if got.Scrapes != want.Scrapes || got.Scrapes != 6 || got.Series[Running] != want.Series[Running] || got.Series[GenTok] != want.Series[GenTok] {
		t.Errorf("loaded back: %+v; kept: %+v", got, want)
	}
}

// TestScrapeFailuresSaid: each failed scrape is kept with its reason in
// words and counted over a window: a 404, a page over 16 MiB whose vLLM
// series lie past the cut, a server that never answers.
func TestScrapeFailuresSaid(t *testing.T) {
	big := strings.Repeat("# filler line of a very long page\n", 600000) + "vllm:num_requests_running 3\n"
	mux := http.NewServeMux()
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, big) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { time.Sleep(500 * time.Millisecond) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, c := range []struct{ path, want string }{
		{"/missing", "HTTP 404 (2)"},
		{"/big", "body over 16 MiB: cut, no vLLM series in it (2)"},
		{"/slow", "no answer in 200ms (2)"},
	} {
		s := &Scraper{URL: srv.URL + c.path}
		timeout := 200 * time.Millisecond
		if c.path == "/big" {
			timeout = time.Minute // 20 MB read under -race on a busy machine
		}
		client := &http.Client{Timeout: timeout}
		from := time.Now()
		s.scrape(context.Background(), client)
		s.scrape(context.Background(), client)
		sum := s.Window(from, time.Now())
		if sum.Scrapes != 0 || sum.FailedSaid() != c.want {
			t.Errorf("%s: %d scrapes, failed %q; want %q", c.path, sum.Scrapes, sum.FailedSaid(), c.want)
		}
	}
}

// TestCadence: a scraper reads at its fast interval while a serving row
// runs (Fast) and at its slow one otherwise, and a window says its
// cadence: the median time between its scrapes, not their mean (a gap
// while nothing ran does not stretch it).
func TestCadence(t *testing.T) {
	serving := false
	s := &Scraper{Interval: 2 * time.Second, FastInterval: 500 * time.Millisecond, Fast: func() bool { return serving }}
	if got := s.every(); got != 2*time.Second {
		t.Errorf("no row runs: every %s; want 2s", got)
	}
	if serving = true; s.every() != 500*time.Millisecond {
		t.Errorf("a row runs: every %s; want 500ms", s.every())
	}
	if got := (&Scraper{}).every(); got != 2*time.Second {
		t.Errorf("no interval set: every %s; want 2s", got)
	}
	at := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	for i, gap := range []time.Duration{0, 500, 500, 500, 500, 30000, 500, 500} {
		at = at.Add(gap * time.Millisecond)
		s.Add(Sample{T: at, V: map[string]float64{Running: float64(i)}})
	}
	if sum := s.Window(at.Add(-time.Hour), at); sum.Every != 500*time.Millisecond || sum.Scrapes != 8 {
		t.Errorf("cadence %s over %d scrapes; want 500ms over 8", sum.Every, sum.Scrapes)
	}
}

// BenchmarkParseAServingPage: one scrape's parse of a /metrics page of
// a busy server (about 470 KiB: twelve histograms of 40 buckets on each
// of 8 engines beside the gauges and counters), the cost the runner pays
// every 0.5 s while a serving row runs, against the page parsed whole:
//
//	go test -run X -bench ParseAServingPage ./metrics
func BenchmarkParseAServingPage(b *testing.B) {
	v1, _ := os.ReadFile("testdata/vllm-v1.txt")
	page := strings.Replace(string(v1), "GEN", "4.2e+07", 1)
	var sb strings.Builder
	for _, h := range []string{"e2e_request_latency", "time_per_output_token", "request_queue_time", "request_prefill_time", "request_decode_time",
		"request_inference_time", "iteration_tokens", "request_prompt_tokens", "request_generation_tokens", "request_max_num_generation_tokens", "request_params_n", "inter_token_latency"} {
		fmt.Fprintf(&sb, "# HELP vllm:%s_seconds a histogram.\n# TYPE vllm:%s_seconds histogram\n", h, h)
		for e := range 8 {
			for q := range 40 {
				fmt.Fprintf(&sb, "vllm:%s_seconds_bucket{engine=\"%d\",le=\"%g\",model_name=\"moonshotai/Kimi-K2-Instruct\"} %d.0\n", h, e, 0.001*math.Pow(1.4, float64(q)), q*31)
			}
		}
	}
	page += sb.String()
	b.Run("ours", func(b *testing.B) { // Parse: our families' lines only
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Parse(strings.NewReader(page), nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("whole", func(b *testing.B) { // the page parsed whole, as before
		b.SetBytes(int64(len(page)))
		b.ReportAllocs()
		for b.Loop() {
			p := expfmt.NewTextParser(model.UTF8Validation)
			if _, err := p.TextToMetricFamilies(strings.NewReader(page)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
