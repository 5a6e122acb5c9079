package runner

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// detailed writes a --save-result --save-detailed file: requests in
// slots, each slot's next request starting when its last ended (a
// closed loop), every request ttft then tokens-1 gaps of itl.
func detailed(slots, perSlot int, ttft, itl float64, tokens int, extra map[string]any) []byte {
	var starts, ttfts []float64
	var itls [][]float64
	var errs []string
	e2el := ttft + float64(tokens-1)*itl
	for j := 0; j < perSlot; j++ {
		for k := 0; k < slots; k++ {
			starts = append(starts, float64(j)*e2el+float64(k)*1e-3)
			ttfts = append(ttfts, ttft)
			gaps := make([]float64, tokens-1)
			for g := range gaps {
				gaps[g] = itl
			}
			itls = append(itls, gaps)
			errs = append(errs, "")
		}
	}
	n := slots * perSlot
	dur := float64(perSlot) * e2el
	m := map[string]any{"max_concurrency": slots, "completed": n, "duration": dur, "request_throughput": float64(n) / dur,
		"start_times": starts, "ttfts": ttfts, "itls": itls, "errors": errs}
	for k, v := range extra {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return b
}

func loadOf(t *testing.T, b []byte) map[string]any {
	t.Helper()
	cols, vals, ok := savedResult(strings.NewReader(string(b)))
	if !ok {
		t.Fatalf("not read: %.200s", b)
	}
	out := map[string]any{}
	for i, c := range cols {
		out[c] = vals[i]
	}
	return out
}

// TestAchievedConcurrency: 16 slots, TTFT 100 ms, ITL 20 ms over 200
// tokens (4.08 s a request), 10 rounds: 16 requests in flight, within 2%
// of the analytic value; decode-only 16 × 3.98/4.08; Little's law from
// vLLM's throughput beside it; p99 by nearest rank.
func TestAchievedConcurrency(t *testing.T) {
	got := loadOf(t, detailed(16, 10, 0.1, 0.02, 200, nil))
	window := 10*4.08 + 15e-3
	want := map[string]float64{
		ColAchieved:    160 * 4.08 / window,
		ColDecodeInFlt: 160 * 3.98 / window,
		ColRate:        160 / window,
		ColLittle:      160 / (10 * 4.08) * 4.08,
		ColE2ELP99:     4080,
		ColRequests:    160,
	}
	for c, w := range want {
		v, _ := got[c].(float64)
		if math.Abs(v-w) > 1e-6*w {
			t.Errorf("%s = %v; want %v", c, got[c], w)
		}
	}
	if a := got[ColAchieved].(float64); math.Abs(a-16)/16 > 0.02 {
		t.Errorf("achieved %v; want within 2%% of 16", a)
	}
	if b := got[ColLoadBasis].(string); !strings.Contains(b, "time-weighted over 40.8 s") {
		t.Errorf("basis %q", b)
	}
}

// TestQueueInclusiveLatency: the case of vllm issue 54101 (a client at
// concurrency 1 against a 500 ms service scheduled at 10 requests/s): the
// requests' own latency is 500 ms, the queue-inclusive p99 about 3.3 s.
func TestQueueInclusiveLatency(t *testing.T) {
	n := 71
	var queues []float64
	for i := 0; i < n; i++ {
		queues = append(queues, 3.3*float64(i)/float64(n-1)) // grows to 3.3 s at the last
	}
	b := detailed(1, n, 0.5, 0, 1, map[string]any{"queue_times": queues})
	got := loadOf(t, b)
	if p := got[ColE2ELP99].(float64); p != 500 {
		t.Errorf("own p99 %v ms; want 500", p)
	}
	if p := got[ColE2ELP99Queue].(float64); math.Abs(p-3800) > 1 {
		t.Errorf("queue-inclusive p99 %v ms; want 3800 (3.3 s queued + 0.5 s)", p)
	}
	if b := got[ColLoadBasis].(string); !strings.Contains(b, "p99 of 71 requests is their slowest (nearest rank)") {
		t.Errorf("basis %q", b)
	}
}

// TestRequestLoadBadInput: NaN in the file, lists of unequal length, no
// start_times, a failed request, a clock that goes back: each said,
// nothing made up.
func TestRequestLoadBadInput(t *testing.T) {
	good := string(detailed(2, 3, 0.1, 0.02, 10, nil))
	nan := strings.Replace(good, `"ttfts":[0.1,`, `"ttfts":[NaN,`, 1)
	got := loadOf(t, []byte(nan))
	if b := got[ColLoadBasis].(string); !strings.Contains(b, "1 NaN or Infinity value(s) in the file read as missing") || !strings.Contains(b, "1 request(s) with a missing or non-number time left out") || got[ColRequests] != 5.0 {
		t.Errorf("NaN: %v", got)
	}
	var m map[string]any
	json.Unmarshal([]byte(good), &m)
	m["itls"] = m["itls"].([]any)[:4]
	b, _ := json.Marshal(m)
	got = loadOf(t, b)
	if _, has := got[ColAchieved]; has || !strings.Contains(got[ColLoadBasis].(string), "itls has 4 entries and ttfts 6: the lists do not line up") {
		t.Errorf("unequal: %v", got)
	}
	json.Unmarshal([]byte(good), &m)
	delete(m, "start_times")
	m["errors"] = []any{"", "", "", "", "", "connection reset by peer"}
	b, _ = json.Marshal(m)
	got = loadOf(t, b)
	if _, has := got[ColAchieved]; has || got[ColLittle] == nil || !strings.Contains(got[ColLoadBasis].(string), "no start_times") || !strings.Contains(got[ColLoadBasis].(string), "1 failed request(s) left out") {
		t.Errorf("no starts, a failure: %v", got)
	}
	json.Unmarshal([]byte(good), &m)
	st := m["start_times"].([]any)
	st[3] = st[3].(float64) - 5
	b, _ = json.Marshal(m)
	if got = loadOf(t, b); !strings.Contains(got[ColLoadBasis].(string), "start_times go back") {
		t.Errorf("clock back: %v", got)
	}
	// A file with no per-request lists adds nothing.
	if got = loadOf(t, []byte(`{"completed": 3, "duration": 1.5}`)); len(got) != 2 {
		t.Errorf("a plain --save-result: %v", got)
	}
}

// BenchmarkRequestLoad: a million requests, linear.
func BenchmarkRequestLoad(b *testing.B) {
	for _, n := range []int{1000, 100000, 1000000} {
		file := detailed(100, n/100, 0.1, 0.02, 3, nil)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for range b.N {
				savedResult(strings.NewReader(string(file)))
			}
		})
	}
}

// TestLoadStamps: a row at 12 of 16 requested is under-driven; one whose
// achieved concurrency and Little's law are 10% apart is inconsistent; a
// clean row has no stamp.
func TestLoadStamps(t *testing.T) {
	row := func(req, achieved, little float64) Row {
		return Row{Cols: []string{"max_concurrency", ColAchieved, ColLittle}, Values: []any{req, achieved, little}}
	}
	if s := LoadStamps(row(16, 15.8, 15.9)); len(s) != 0 {
		t.Errorf("a clean row stamped %q", s)
	}
	if s := LoadStamps(row(16, 12, 12.1)); len(s) != 1 || !strings.Contains(s[0], "under-driven, 12 requests in flight time-weighted of the 16 requested (75%)") {
		t.Errorf("under-driven: %q", s)
	}
	if s := LoadStamps(row(16, 15.8, 17.4)); len(s) != 1 || !strings.HasPrefix(s[0], "timing inconsistent") {
		t.Errorf("inconsistent: %q", s)
	}
}

// TestQuantileInterval: a p99's distribution-free 95% interval needs 367
// requests (0.99^367 < 0.025 < 0.99^366); at 1,000 it is the 983rd to the
// 997th; and drawn again and again from a known distribution it covers
// the true p99 at least 95% of the time.
func TestQuantileInterval(t *testing.T) {
	xs := make([]float64, 366)
	for i := range xs {
		xs[i] = float64(i)
	}
	if _, _, _, _, need, ok := QuantileInterval(xs, 0.99, 0.95); ok || need != 367 {
		t.Errorf("366 values: ok %v, need %d; want none told, 367 needed", ok, need)
	}
	if _, _, l, u, _, ok := QuantileInterval(append(xs, 366), 0.99, 0.95); !ok || u != 367 || l < 350 {
		t.Errorf("367 values: ranks %d..%d (ok %v); want up to the slowest, 367", l, u, ok)
	}
	r := rand.New(rand.NewPCG(1, 2))
	thousand := make([]float64, 1000)
	covered, trials := 0, 2000
	for range trials {
		for i := range thousand {
			thousand[i] = r.Float64() // uniform: the true p99 is 0.99
		}
		lo, hi, l, u, _, ok := QuantileInterval(thousand, 0.99, 0.95)
		if !ok || l != 983 || u != 997 {
			t.Fatalf("1,000 values: ranks %d..%d (ok %v); want 983..997", l, u, ok)
		}
		if lo <= 0.99 && 0.99 <= hi {
			covered++
		}
	}
	if share := float64(covered) / float64(trials); share < 0.94 {
		t.Errorf("the interval covered the true p99 in %.1f%% of %d draws; want 95%% or more", 100*share, trials)
	}
}

// TestPercentilesByOneDefinition: 71 requests whose TTFTs run 100 to
// 169 ms, and a straggler at 2 s: our p99 of each is the slowest (nearest
// rank: the 71st), TPOT a request's decode time over its gaps, ITL every
// gap pooled; vLLM's own p99 TTFT (interpolated 30% of the way from the
// 70th to the 71st: 718.3 ms) stays beside ours, the two parting past 1%
// said with the count.
func TestPercentilesByOneDefinition(t *testing.T) {
	n := 71
	var ttfts []float64
	var itls [][]float64
	var starts []float64
	var errs []string
	for i := 0; i < n; i++ {
		ttfts = append(ttfts, 0.1+0.001*float64(i))
		if i == n-1 {
			ttfts[i] = 2.0
		}
		gaps := []float64{0.02, 0.02, 0.02 + 0.0001*float64(i)} // the last request's slowest gap: 27 ms
		itls = append(itls, gaps)
		starts = append(starts, float64(i))
		errs = append(errs, "")
	}
	b, _ := json.Marshal(map[string]any{"max_concurrency": 1, "completed": n, "request_throughput": 1.0,
		"p99_ttft_ms": 718.3, "p99_tpot_ms": 22.3, "p99_itl_ms": 26.93, "start_times": starts, "ttfts": ttfts, "itls": itls, "errors": errs})
	got := loadOf(t, b)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	if v := got[ColTTFTP99].(float64); !near(v, 2000) {
		t.Errorf("p99 TTFT %v ms; want 2000 (the slowest of 71)", v)
	}
	if v := got[ColTPOTP99].(float64); !near(v, (40+20+0.1*70)/3) {
		t.Errorf("p99 TPOT %v ms; want %v (the last request's decode over its 3 gaps)", v, (40+20+0.1*70)/3)
	}
	if v := got[ColITLP99].(float64); !near(v, 20+0.1*float64(int(math.Ceil(0.99*213))-1-142)) {
		// 213 gaps: 142 of 20 ms, then 20 + 0.1·i ms for i = 0..70; the 211th smallest
		t.Errorf("p99 ITL %v ms; want %v", v, 20+0.1*float64(int(math.Ceil(0.99*213))-1-142))
	}
	basis := got[ColLoadBasis].(string)
	if !strings.Contains(basis, "p99 by nearest rank parts from vLLM's interpolated p99 past 1%: TTFT 2000 ms (ours, of 71) against vLLM's 718.3 ms") {
		t.Errorf("basis %q", basis)
	}
	if strings.Contains(basis, "ITL") {
		t.Errorf("ITL agrees within 1%% and is not said: %q", basis)
	}
}
