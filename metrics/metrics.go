// Package metrics reads a server's own view: vLLM's Prometheus /metrics,
// scraped every few seconds while the phases that use the server run,
// kept as a bounded history and summarised over a phase's or a step's
// span (requests running and waiting, KV-cache usage, preemptions,
// tokens generated per second). Both generations of vLLM's metric names
// are known.
//
// metrics imports nothing of ours.
package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Series are the values a scrape keeps, by our name.
const (
	Running     = "running"           // requests running
	Waiting     = "waiting"           // requests waiting
	KVUsage     = "kv_usage"          // KV cache usage, 0..1
	Preemptions = "preemptions"       // counter
	PromptTok   = "prompt_tokens"     // counter
	GenTok      = "generation_tokens" // counter
	PrefixHits  = "prefix_hits"       // counter
	PrefixQuery = "prefix_queries"    // counter
	Success     = "requests_finished" // counter: requests the server finished
	Rejected    = "requests_rejected" // counter: requests it turned away at admission
	Aborted     = "requests_aborted"  // counter: requests it aborted
	// WaitingForRoom are the requests waiting for a slot or KV cache
	// (vLLM's num_requests_waiting_by_reason, reason capacity), not for
	// a step's deferral: a cap's own count where the server says it.
	WaitingForRoom = "waiting_capacity"
)

// known maps vLLM's names, newest first, then SGLang's (its
// --enable-metrics page) and TensorRT-LLM's (trtllm-serve's
// /prometheus/metrics, trtllm_; trtllm: through Dynamo), to ours; a
// counter's family may be named with or without its _total. A name may
// select one label's value (`family{label="value"}`): only those samples
// are summed. TensorRT-LLM's page has no running or waiting gauge: a cap
// is not told from it.
var known = map[string][]string{
	Running:        {"vllm:num_requests_running", "sglang:num_running_reqs"},
	Waiting:        {"vllm:num_requests_waiting", "sglang:num_queue_reqs"},
	KVUsage:        {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"},
	Preemptions:    {"vllm:num_preemptions_total", "vllm:num_preemptions"},
	PromptTok:      {"vllm:prompt_tokens_total", "vllm:prompt_tokens", "sglang:prompt_tokens_total"},
	GenTok:         {"vllm:generation_tokens_total", "vllm:generation_tokens", "sglang:generation_tokens_total"},
	PrefixHits:     {"vllm:prefix_cache_hits_total", "vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits"},
	PrefixQuery:    {"vllm:prefix_cache_queries_total", "vllm:prefix_cache_queries", "vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries"},
	Success:        {"vllm:request_success_total", "vllm:request_success", "sglang:num_requests_total", "trtllm_request_success_total", "trtllm:request_success_total"},
	Rejected:       {"vllm:admission_rejections_total", "vllm:admission_rejections"},
	Aborted:        {"sglang:num_aborted_requests_total"},
	WaitingForRoom: {`vllm:num_requests_waiting_by_reason{reason="capacity"}`},
}

// family is a known name's family and the label it selects ("" for all).
func family(n string) (name, label, value string) {
	name, sel, ok := strings.Cut(n, "{")
	if !ok {
		return n, "", ""
	}
	label, value, _ = strings.Cut(strings.TrimSuffix(sel, "}"), "=")
	return name, label, strings.Trim(value, `"`)
}

// ours is the lines of a page that belong to the families Parse reads:
// their HELP and TYPE lines and their samples (a counter's under its name
// with or without _total); a line of another family is dropped unread.
func ours(page []byte, extra []string) []byte {
	want := map[string]bool{}
	add := func(n string) {
		n, _, _ = family(n)
		base := strings.TrimSuffix(n, "_total")
		want[base], want[base+"_total"] = true, true
	}
	for _, names := range known {
		for _, n := range names {
			add(n)
		}
	}
	for _, n := range extra {
		add(n)
	}
	var out []byte
	for len(page) > 0 {
		line, rest, _ := bytes.Cut(page, []byte("\n"))
		page = rest
		name := line
		if rest, ok := bytes.CutPrefix(line, []byte("# ")); ok {
			f := bytes.Fields(rest)
			if len(f) < 2 {
				continue
			}
			name = f[1]
		} else if i := bytes.IndexAny(line, "{ \t"); i >= 0 {
			name = line[:i]
		}
		if want[string(name)] {
			out = append(append(out, line...), '\n')
		}
	}
	return out
}

// Counters are the series that only grow (a restart of the server resets
// them: a drop is counted as a new start).
var Counters = map[string]bool{Preemptions: true, PromptTok: true, GenTok: true, PrefixHits: true, PrefixQuery: true,
	Success: true, Rejected: true, Aborted: true}

// Parse reads a /metrics page into our series (summed over their label
// sets: engines, models) and any extra series named, by their own name.
//
// Only the lines of those families are handed to the text parser: a busy
// server's page is mostly histogram buckets we never read (a 470 KiB page
// parsed whole took 13 ms, a cost paid every 0.5 s while a row runs).
// A page with none of them is parsed whole, so that one that is no
// metrics page at all is said malformed.
func Parse(r io.Reader, extra []string) (map[string]float64, error) {
	page, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	lines := ours(page, extra)
	if len(lines) == 0 {
		lines = page
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(lines))
	if err != nil {
		return nil, fmt.Errorf("malformed metrics: %v", err)
	}
	sum := func(n string) (float64, bool) {
		name, label, value := family(n)
		fam, ok := fams[name]
		if !ok {
			return 0, false
		}
		total, any := 0.0, label == ""
		for _, m := range fam.GetMetric() {
			if label != "" {
				if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == label && l.GetValue() == value }) {
					continue
				}
				any = true
			}
			switch {
			case m.GetGauge() != nil:
				total += m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				total += m.GetCounter().GetValue()
			case m.GetUntyped() != nil:
				total += m.GetUntyped().GetValue()
			}
		}
		return total, any
	}
	out := map[string]float64{}
	for ours, names := range known {
		for _, n := range names {
			if v, ok := sum(n); ok {
				out[ours] = v
				break
			}
		}
	}
	for _, n := range extra {
		if v, ok := sum(n); ok {
			out[n] = v
		}
	}
	return out, nil
}

// Sample is one scrape: the series read, or why it read none (Err).
type Sample struct {
	T   time.Time
	V   map[string]float64
	Err string // "HTTP 404", "no answer in 2s", "body over 16 MiB: cut, no vLLM series in it"
}

// Scraper reads one URL every Interval while Active says so (every
// FastInterval while Fast says so: a serving row runs on it), one request
// at a time, and keeps the last MaxSamples scrapes.
type Scraper struct {
	URL      string
	Extra    []string
	Interval time.Duration
	Active   func() bool // nil: always
	// Fast, when set and true, scrapes every FastInterval: the server's
	// running and waiting requests are read often enough to hold a
	// row's load against (a 60 s row at 0.5 s is 120 readings).
	Fast         func() bool
	FastInterval time.Duration
	// Where is the URL now, for a service whose URL is known only once it
	// runs (a Slurm job's node: ${GREENLIGHT_NODE}); nil: URL.
	Where func() string

	// Keep, when set, is a file each scrape is appended to as a JSON
	// line: the server's view outlives the runner, and the record is
	// rebuilt from it (Load).
	Keep string

	mu      sync.Mutex
	samples []Sample
	fails   []Sample // the scrapes that read nothing, with why
	lastErr string
	kept    *os.File
}

// MaxSamples bounds the history: 4 hours at one scrape every 0.5 s, 16
// at one every 2 s.
const MaxSamples = 28800

// Run scrapes until ctx ends.
func (s *Scraper) Run(ctx context.Context) {
	client := &http.Client{Timeout: s.slow()}
	next := time.Now()
	for {
		if s.Active == nil || s.Active() {
			s.scrape(ctx, client)
		}
		// The next scrape one interval after this one began; one that
		// took longer than the interval is followed at once, never two
		// at a time.
		next = next.Add(s.every())
		if now := time.Now(); next.Before(now) {
			next = now
		}
		t := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// slow is the interval between scrapes while no serving row runs.
func (s *Scraper) slow() time.Duration {
	if s.Interval <= 0 {
		return 2 * time.Second
	}
	return s.Interval
}

// every is the interval to the next scrape: FastInterval while Fast says
// a serving row runs, else Interval.
func (s *Scraper) every() time.Duration {
	if s.Fast != nil && s.FastInterval > 0 && s.Fast() {
		return s.FastInterval
	}
	return s.slow()
}

// maxBody is the most of a /metrics page read.
const maxBody = 16 << 20

func (s *Scraper) scrape(ctx context.Context, client *http.Client) {
	s.Add(s.read(ctx, client))
}

// read is one scrape: what the page says, or why it says nothing, in
// words a person acts on (each failure kept and counted, not only the last).
func (s *Scraper) read(ctx context.Context, client *http.Client) Sample {
	now := time.Now()
	url := s.URL
	if s.Where != nil {
		url = s.Where()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Sample{T: now, Err: err.Error()}
	}
	resp, err := client.Do(req)
	if err != nil {
		var ne interface{ Timeout() bool }
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			return Sample{T: now, Err: fmt.Sprintf("no answer in %s", client.Timeout)}
		case errors.Is(err, syscall.ECONNREFUSED):
			return Sample{T: now, Err: "connection refused (nothing listens there)"}
		}
		return Sample{T: now, Err: err.Error()}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Sample{T: now, Err: "HTTP " + strconv.Itoa(resp.StatusCode)}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return Sample{T: now, Err: "body cut: " + err.Error()}
	}
	over := len(body) > maxBody
	if over {
		body = body[:bytes.LastIndexByte(body[:maxBody], '\n')+1] // whole lines only
	}
	v, err := Parse(bytes.NewReader(body), s.Extra)
	switch {
	case over && (err != nil || !hasVLLM(v)):
		return Sample{T: now, Err: "body over 16 MiB: cut, no vLLM series in it"}
	case err != nil:
		return Sample{T: now, Err: err.Error()}
	case !hasVLLM(v) && len(v) == 0:
		return Sample{T: now, Err: "no vLLM series in the page"}
	}
	return Sample{T: now, V: v}
}

// hasVLLM says a scrape read one of the series we know.
func hasVLLM(v map[string]float64) bool {
	for k := range known {
		if _, ok := v[k]; ok {
			return true
		}
	}
	return false
}

// Add keeps a sample, or a failed scrape (Err), as Run does (tests too),
// and appends it to Keep.
func (s *Scraper) Add(sm Sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keep(sm)
	s.add(sm)
}

func (s *Scraper) add(sm Sample) {
	if sm.Err != "" {
		s.fails = append(s.fails, sm)
		if len(s.fails) > MaxSamples {
			s.fails = append(s.fails[:0:0], s.fails[len(s.fails)-MaxSamples:]...)
		}
		s.lastErr = sm.Err
		return
	}
	s.samples = append(s.samples, sm)
	if len(s.samples) > MaxSamples {
		s.samples = append(s.samples[:0:0], s.samples[len(s.samples)-MaxSamples:]...)
	}
	s.lastErr = ""
}

// Stat is one series over a window: a gauge's mean and peak, a counter's
// growth.
type Stat struct {
	Mean, Peak float64 // gauges
	Delta      float64 // counters
	N          int
}

// Summary is a window of the server's view.
type Summary struct {
	From, To time.Time // the first and last scrape in the window
	Scrapes  int
	Every    time.Duration // the median time between the window's scrapes: its cadence; 0 under two
	MaxGap   time.Duration // the longest time between two of them (the monitor away, the server silent)
	Series   map[string]Stat
	Failed   map[string]int // scrapes in the window that read nothing, by why
}

// FailedSaid is the failed scrapes in words, most frequent first:
// "HTTP 404 (12), no answer in 2s (1)"; "" when none failed.
func (s Summary) FailedSaid() string {
	type why struct {
		text string
		n    int
	}
	var ws []why
	for t, n := range s.Failed {
		ws = append(ws, why{t, n})
	}
	slices.SortFunc(ws, func(a, b why) int {
		if a.n != b.n {
			return b.n - a.n
		}
		return strings.Compare(a.text, b.text)
	})
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = fmt.Sprintf("%s (%d)", w.text, w.n)
	}
	return strings.Join(parts, ", ")
}

// GenRate is tokens generated per second over the window; ok false when
// the window has no two scrapes with the counter.
func (s Summary) GenRate() (float64, bool) {
	st, ok := s.Series[GenTok]
	d := s.To.Sub(s.From).Seconds()
	if !ok || st.N < 2 || d <= 0 {
		return 0, false
	}
	return st.Delta / d, true
}

// Window summarises the scrapes within [from, to].
func (s *Scraper) Window(from, to time.Time) Summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Summary{Series: map[string]Stat{}}
	for _, f := range s.fails {
		if !f.T.Before(from) && !f.T.After(to) {
			if out.Failed == nil {
				out.Failed = map[string]int{}
			}
			out.Failed[f.Err]++
		}
	}
	last := map[string]float64{}
	var gaps []time.Duration
	for _, sm := range s.samples {
		if sm.T.Before(from) || sm.T.After(to) {
			continue
		}
		if out.Scrapes == 0 {
			out.From = sm.T
		} else {
			gaps = append(gaps, sm.T.Sub(out.To))
		}
		out.To = sm.T
		out.Scrapes++
		for k, v := range sm.V {
			st := out.Series[k]
			if Counters[k] {
				if prev, seen := last[k]; seen {
					if v >= prev {
						st.Delta += v - prev
					} else {
						st.Delta += v // the server restarted: its counter began again
					}
				}
				last[k] = v
			} else {
				st.Mean += v
				st.Peak = math.Max(st.Peak, v)
			}
			st.N++
			out.Series[k] = st
		}
	}
	if len(gaps) > 0 {
		slices.Sort(gaps)
		out.Every, out.MaxGap = gaps[len(gaps)/2], gaps[len(gaps)-1]
	}
	for k, st := range out.Series {
		if !Counters[k] && st.N > 0 {
			st.Mean /= float64(st.N)
			out.Series[k] = st
		}
	}
	return out
}

// Err is why the last scrape failed; "" when it did not.
func (s *Scraper) Err() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// Line is the server's state now, for a line in the window: the last
// scrape's gauges, tokens generated per second between the last two,
// preemptions since the first scrape kept, and the last n scrapes' tokens/s
// (oldest first). A series the server does not export is NaN.
type Line struct {
	At                   time.Time
	Running, Waiting, KV float64
	TokS, Preemptions    float64
	History              []float64
	Err                  string // why the last scrape failed
}

// Line is the scraper's Line with up to n points of history.
func (s *Scraper) Line(n int) Line {
	s.mu.Lock()
	defer s.mu.Unlock()
	nan := math.NaN()
	l := Line{Running: nan, Waiting: nan, KV: nan, TokS: nan, Preemptions: nan, Err: s.lastErr}
	if len(s.samples) == 0 {
		return l
	}
	last := s.samples[len(s.samples)-1]
	l.At = last.T
	get := func(sm Sample, k string) float64 {
		if v, ok := sm.V[k]; ok {
			return v
		}
		return nan
	}
	l.Running, l.Waiting, l.KV = get(last, Running), get(last, Waiting), get(last, KVUsage)
	if p := get(last, Preemptions); !math.IsNaN(p) {
		l.Preemptions = max(0, p-get(s.samples[0], Preemptions))
		if math.IsNaN(l.Preemptions) {
			l.Preemptions = p
		}
	}
	rate := func(a, b Sample) float64 {
		d := b.T.Sub(a.T).Seconds()
		x, y := get(a, GenTok), get(b, GenTok)
		if d <= 0 || math.IsNaN(x) || math.IsNaN(y) || y < x {
			return nan
		}
		return (y - x) / d
	}
	from := max(1, len(s.samples)-n)
	for i := from; i < len(s.samples); i++ {
		l.History = append(l.History, rate(s.samples[i-1], s.samples[i]))
	}
	if len(l.History) > 0 {
		l.TokS = l.History[len(l.History)-1]
	}
	return l
}
