package runner

// The load a serving row applied, from its requests: vllm bench's
// --save-result --save-detailed file carries each request's start
// (start_times, where the version writes it), time to first token, the
// gaps between its tokens, its error, and its queue time where present.
// From them a row gets the concurrency it achieved (requests in flight,
// time-weighted over the measured window), its decode-only counterpart,
// the request rate, Little's law from vLLM's own figures beside it, the
// client's queue time, and latency percentiles by one named definition.
// A figure that cannot be told is left out and said in load_basis,
// never made up.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"
)

// The columns a serving row's requests add.
const (
	ColAchieved     = "achieved_concurrency"        // time-weighted requests in flight over the window
	ColDecodeInFlt  = "achieved_decode_concurrency" // the same, from each request's first token to its last
	ColRate         = "achieved_request_rate"       // requests started a second over the window
	ColLittle       = "littles_law_concurrency"     // the client's request rate × the mean end-to-end latency
	ColQueueMean    = "client_queue_mean_ms"
	ColE2ELP99Queue = "queue_inclusive_p99_e2el_ms"
	ColE2ELP99      = "nearest_rank_p99_e2el_ms"
	ColTTFTP99      = "nearest_rank_p99_ttft_ms"
	ColTPOTP99      = "nearest_rank_p99_tpot_ms" // a request's (E2EL − TTFT) over its gaps between tokens
	ColITLP99       = "nearest_rank_p99_itl_ms"  // every gap between tokens of every request
	ColE2ELP99Low   = "p99_e2el_ci95_low_ms"     // the p99's distribution-free 95% interval: order statistics
	ColE2ELP99High  = "p99_e2el_ci95_high_ms"    // of the requests, the binomial's 2.5% each side
	ColRequests     = "requests_timed"           // the requests the figures rest on
	ColLoadBasis    = "load_basis"               // what the figures rest on, and what could not be told
)

// requestArrays are the per-request lists of a --save-detailed file.
type requestArrays struct {
	starts, ttfts, queues []float64
	itls                  [][]float64
	errs                  []string
	has                   map[string]bool
	nulls                 int // NaN or Infinity in the file, read as missing
}

// pythonNonNumbers are the bare tokens Python's json writes for floats
// JSON has no word for.
var pythonNonNumbers = [][]byte{[]byte("-Infinity"), []byte("Infinity"), []byte("NaN")}

// jsonWithNulls is b with Python's NaN, Infinity and -Infinity, outside
// strings, as null: a file vllm bench wrote with a NaN in it is still
// read, the request that holds one not counted. n is how many it put.
func jsonWithNulls(b []byte) (out []byte, n int) {
	if !bytes.Contains(b, []byte("NaN")) && !bytes.Contains(b, []byte("Infinity")) {
		return b, 0
	}
	out = make([]byte, 0, len(b))
	in := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case in && c == '\\' && i+1 < len(b):
			out = append(out, c, b[i+1])
			i++
			continue
		case c == '"':
			in = !in
		case !in:
			replaced := false
			for _, tok := range pythonNonNumbers {
				if bytes.HasPrefix(b[i:], tok) {
					out = append(out, "null"...)
					i += len(tok) - 1
					n++
					replaced = true
					break
				}
			}
			if replaced {
				continue
			}
		}
		out = append(out, c)
	}
	return out, n
}

// take keeps a per-request list of the file, by its key; a null (a NaN
// the file held) is NaN.
func (a *requestArrays) take(key string, raw json.RawMessage) {
	nums := func(xs []*float64) []float64 {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = math.NaN()
			if x != nil {
				out[i] = *x
			}
		}
		return out
	}
	var err error
	switch key {
	case "start_times", "ttfts", "queue_times":
		var xs []*float64
		if err = json.Unmarshal(raw, &xs); err == nil {
			switch key {
			case "start_times":
				a.starts = nums(xs)
			case "ttfts":
				a.ttfts = nums(xs)
			default:
				a.queues = nums(xs)
			}
		}
	case "itls":
		var ls [][]*float64
		if err = json.Unmarshal(raw, &ls); err == nil {
			a.itls = make([][]float64, len(ls))
			for i, l := range ls {
				a.itls[i] = nums(l)
			}
		}
	case "errors":
		var es []*string
		if err = json.Unmarshal(raw, &es); err == nil {
			a.errs = make([]string, len(es))
			for i, e := range es {
				if e != nil {
					a.errs[i] = *e
				}
			}
		}
	default:
		return
	}
	if err == nil {
		a.has[key] = true
	}
}

// timedRequest is one request as a client's per-request export tells
// it, in seconds; NaN where the export does not say.
type timedRequest struct {
	start  float64   // when the client sent it, on the client's clock
	ttft   float64   // to its first token
	e2el   float64   // to its last: its time in flight
	queue  float64   // held in the client before it was sent
	tpot   float64   // (e2el − ttft) over its gaps between tokens
	itls   []float64 // each gap between tokens, where told
	failed bool      // an error: its time in flight counts, its latency does not
	broken bool      // a time missing or not a number
}

// requestSet is a row's requests as one export told them, and what the
// tool itself said of them, for its figures to be held against ours.
type requestSet struct {
	tool          string // "vLLM", "AIPerf", "GuideLLM": whose figures ours are set beside
	client        string // the client that wrote it, as a person names it: "vllm bench"
	startKey      string // the export's word for a request's start: start_times
	theirsHow     string // how the tool's p99 is taken: "interpolated"
	reqs          []timedRequest
	hasStart      bool // the export says when each request started
	hasQueue      bool // and how long the client held it first
	said          []string
	unusable      bool               // the lists do not line up, or no latency is told: no figure
	nulls         int                // NaN or Infinity read as missing
	rate          float64            // the tool's completed requests a second, for Little's law; 0 when not said
	theirs        map[string]float64 // the tool's own p99s, ms, by our column
	sampledOf     int                // the tool kept a sample of this many requests: 0 when it kept every one
	unknownFailed int                // failed requests whose time in flight the export does not give
}

// requests are a --save-detailed file's lists as requests.
func (a *requestArrays) requests(scalars map[string]float64) requestSet {
	set := requestSet{tool: "vLLM", client: "vllm bench", startKey: "start_times", theirsHow: "interpolated", hasStart: a.has["start_times"], hasQueue: a.has["queue_times"], nulls: a.nulls,
		rate: scalars["request_throughput"], theirs: map[string]float64{}}
	for col, key := range map[string]string{ColTTFTP99: "p99_ttft_ms", ColTPOTP99: "p99_tpot_ms", ColITLP99: "p99_itl_ms", ColE2ELP99: "p99_e2el_ms"} {
		if v, ok := scalars[key]; ok {
			set.theirs[col] = v
		}
	}
	if len(a.has) == 0 {
		return requestSet{}
	}
	n := len(a.ttfts)
	for key, l := range map[string]int{"itls": len(a.itls), "errors": len(a.errs), "start_times": len(a.starts), "queue_times": len(a.queues)} {
		if a.has[key] && l != n {
			set.said = append(set.said, fmt.Sprintf("%s has %d entries and ttfts %d: the lists do not line up, no per-request figure is told", key, l, n))
			set.unusable = true
		}
	}
	if !a.has["ttfts"] || !a.has["itls"] {
		set.said = append(set.said, "no ttfts or itls: a request's latency is not known")
		set.unusable = true
	}
	if set.unusable {
		return set
	}
	for i := 0; i < n; i++ {
		if i < len(a.errs) && a.errs[i] != "" {
			// vllm bench keeps no time for a failed request: its slot's
			// time is not in the file.
			set.unknownFailed++
			continue
		}
		r := timedRequest{start: math.NaN(), ttft: a.ttfts[i], queue: math.NaN(), tpot: math.NaN(), itls: a.itls[i]}
		r.e2el = r.ttft
		for _, g := range a.itls[i] {
			r.e2el += g
		}
		if len(a.itls[i]) > 0 {
			r.tpot = (r.e2el - r.ttft) / float64(len(a.itls[i]))
		}
		if i < len(a.starts) {
			r.start = a.starts[i]
		}
		if i < len(a.queues) {
			r.queue = a.queues[i]
		}
		r.broken = math.IsNaN(r.e2el) || r.ttft <= 0 || set.hasStart && math.IsNaN(r.start) || set.hasQueue && math.IsNaN(r.queue)
		set.reqs = append(set.reqs, r)
	}
	return set
}

// requestLoad is what a row's requests say of the load it applied, as
// columns: the concurrency achieved, time-weighted over the window from
// the first request's start to the last one's end (a failed request
// whose times are told held its slot), its decode-only counterpart, the
// request rate, Little's law from the tool's rate beside it, the client's
// queue time, and the latency percentiles by one definition with the
// p99's interval. Nothing when the export has no per-request list; a
// figure that cannot be told is left out and said in load_basis.
func requestLoad(set requestSet) (cols []string, vals []any) {
	if len(set.reqs) == 0 && len(set.said) == 0 && set.unknownFailed == 0 {
		return nil, nil
	}
	said := slices.Clone(set.said)
	add := func(c string, v float64) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			cols, vals = append(cols, c), append(vals, v)
		}
	}
	// basis is the columns so far and load_basis: what they rest on.
	basis := func() ([]string, []any) {
		slices.Sort(said)
		return append(cols, ColLoadBasis), append(vals, any(strings.Join(said, "; ")))
	}
	if set.unusable {
		return basis()
	}
	var ok, held []timedRequest // held: every request whose time in flight is told, failed ones too
	broken, failed := 0, set.unknownFailed
	for _, r := range set.reqs {
		switch {
		case r.broken:
			broken++
		case r.failed:
			failed++
			held = append(held, r)
		default:
			ok = append(ok, r)
			held = append(held, r)
		}
	}
	if set.nulls > 0 {
		said = append(said, fmt.Sprintf("%d NaN or Infinity value(s) in the file read as missing", set.nulls))
	}
	if broken > 0 {
		said = append(said, fmt.Sprintf("%d request(s) with a missing or non-number time left out", broken))
	}
	if set.unknownFailed > 0 {
		said = append(said, fmt.Sprintf("%d failed request(s) left out: their time in flight is not in the file", set.unknownFailed))
	} else if failed > 0 {
		said = append(said, fmt.Sprintf("%d failed request(s) counted in flight for the time they held a slot, not in the latencies", failed))
	}
	if set.sampledOf > 0 {
		said = append(said, fmt.Sprintf("%s kept %d of %d requests: the concurrency achieved is not told from a sample", set.tool, len(set.reqs), set.sampledOf))
	}
	if len(ok) == 0 {
		said = append(said, "no request to time")
		return basis()
	}
	add(ColRequests, float64(len(ok)))
	e2els := make([]float64, len(ok))
	sum := 0.0
	for i, r := range ok {
		e2els[i] = r.e2el
		sum += r.e2el
	}
	mean := sum / float64(len(ok))
	if set.rate > 0 {
		little := set.rate * mean
		if n := len(held); n > len(ok) {
			// The failed requests held slots too, as achieved counts them:
			// Little's law over every request, the tool's completed rate
			// scaled to them and their mean time in flight.
			all := 0.0
			for _, r := range held {
				all += r.e2el
			}
			little = set.rate * float64(n) / float64(len(ok)) * all / float64(n)
			said = append(said, "Little's law over every request whose time is told, failed ones too, as the concurrency achieved counts them")
		}
		add(ColLittle, little)
	}
	switch {
	case set.hasStart && set.sampledOf == 0:
		lo, hi := math.Inf(1), math.Inf(-1)
		inFlight, decode := 0.0, 0.0
		backwards := false
		for i, r := range held {
			lo, hi = min(lo, r.start), max(hi, r.start+r.e2el)
			inFlight += r.e2el
			if !r.failed {
				decode += r.e2el - r.ttft
			}
			backwards = backwards || i > 0 && r.start < held[i-1].start-1 // a clock stepped back a second or more
		}
		switch window := hi - lo; {
		case window <= 0:
			said = append(said, "the requests' starts and ends span no time")
		default:
			add(ColAchieved, inFlight/window)
			add(ColDecodeInFlt, decode/window)
			add(ColRate, float64(len(ok))/window)
			said = append(said, fmt.Sprintf("in flight time-weighted over %.3g s, from the first request's start to the last one's end", window))
		}
		if backwards {
			said = append(said, set.startKey+" go back by a second or more: the client's clock stepped, the window may be wrong")
		}
	case !set.hasStart:
		said = append(said, fmt.Sprintf("no %s (a %s that does not write them): the concurrency achieved is not told; Little's law alone stands", set.startKey, set.client))
	}
	if set.hasQueue {
		q := 0.0
		incl := make([]float64, len(ok))
		for i, r := range ok {
			q += r.queue
			incl[i] = r.queue + r.e2el
		}
		add(ColQueueMean, 1000*q/float64(len(ok)))
		add(ColE2ELP99Queue, 1000*NearestRank(incl, 0.99))
	}
	add(ColE2ELP99, 1000*NearestRank(e2els, 0.99))
	// TTFT, TPOT and ITL by the same definition, and the tool's own p99
	// of each held against ours: vLLM interpolates between ranks, so at a
	// few hundred requests the two may part past rounding, and that is
	// said with the count.
	var ttfts, tpots, itls []float64
	for _, r := range ok {
		ttfts = append(ttfts, r.ttft)
		if !math.IsNaN(r.tpot) {
			tpots = append(tpots, r.tpot)
		}
		for _, g := range r.itls {
			if !math.IsNaN(g) {
				itls = append(itls, g)
			}
		}
	}
	var apart []string
	for _, m := range []struct {
		col, name string
		xs        []float64
	}{{ColTTFTP99, "TTFT", ttfts}, {ColTPOTP99, "TPOT", tpots}, {ColITLP99, "ITL", itls}, {ColE2ELP99, "E2EL", e2els}} {
		if len(m.xs) == 0 {
			continue
		}
		ours := 1000 * NearestRank(m.xs, 0.99)
		if m.col != ColE2ELP99 {
			add(m.col, ours)
		}
		if theirs, has := set.theirs[m.col]; has && theirs > 0 && math.Abs(ours-theirs)/theirs > 0.01 {
			apart = append(apart, fmt.Sprintf("%s %.4g ms (ours, of %d) against %s's %.4g ms", m.name, ours, len(m.xs), set.tool, theirs))
		}
	}
	if len(apart) > 0 {
		said = append(said, "p99 by nearest rank parts from "+set.tool+"'s "+set.theirsHow+" p99 past 1%: "+strings.Join(apart, ", "))
	}
	if lo, hi, l, u, need, ok := QuantileInterval(e2els, 0.99, 0.95); ok {
		add(ColE2ELP99Low, 1000*lo)
		add(ColE2ELP99High, 1000*hi)
		said = append(said, fmt.Sprintf("p99's 95%% interval is the %s to the %s fastest of %d requests (order statistics, no distribution assumed)", ordinal(l), ordinal(u), len(e2els)))
	} else {
		said = append(said, fmt.Sprintf("a 95%% interval for p99 needs %d requests, these are %d: its spread is not told", need, len(e2els)))
	}
	if k := int(math.Ceil(0.99 * float64(len(ok)))); k == len(ok) {
		said = append(said, fmt.Sprintf("p99 of %d requests is their slowest (nearest rank)", len(ok)))
	}
	return basis()
}

// NearestRank is the p quantile of xs by the nearest-rank definition:
// the ⌈p·n⌉-th smallest (MLPerf LoadGen's and GuideLLM's; vLLM bench
// interpolates between ranks). NaN for no value.
func NearestRank(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	k := max(1, int(math.Ceil(p*float64(len(s)))))
	return s[min(k, len(s))-1]
}

// QuantileInterval is the distribution-free two-sided interval, at level
// (0.95), for the p quantile of what xs sample: the l-th and u-th
// smallest of them (1-based), the widest order statistics each side of
// which the binomial count of values below the quantile falls with at
// most (1-level)/2. need is the fewest values for which such a u exists
// (367 for p99 at 95%); ok false below it.
//
// A tail is taken as within (1-level)/2 to a hundredth of a percentage
// point: 0.99^367 is 2.502%, and 367 is the count the literature gives.
func QuantileInterval(xs []float64, p, level float64) (lo, hi float64, l, u, need int, ok bool) {
	tail := (1-level)/2 + 1e-4
	need = int(math.Ceil(math.Log(tail) / math.Log(p)))
	n := len(xs)
	if n < need || n == 0 {
		return 0, 0, 0, 0, need, false
	}
	b := distuv.Binomial{N: float64(n), P: p}
	// l: the largest with P(count <= l-1) <= tail; u: the smallest with
	// P(count >= u) <= tail.
	l = 1
	for l+1 <= n && b.CDF(float64(l)) <= tail {
		l++
	}
	u = n
	for u-1 >= l+1 && 1-b.CDF(float64(u-2)) <= tail {
		u--
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[l-1], s[u-1], l, u, need, true
}

// ordinal is n as a person reads a rank: 1st, 2nd, 3rd, 11th, 372nd.
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// UnderDriven is the share of the requested concurrency under which a
// row's load was not applied.
const UnderDriven = 0.9

// LoadStamps are what a serving row's requests say against it, stamped
// like every stamp (a search does not decide by such a run): the client
// drove less than it was asked (achieved concurrency under 0.9 of
// max_concurrency), and the achieved concurrency and Little's law more
// than 5% apart (timing inconsistent).
func LoadStamps(row Row) []string {
	v := map[string]float64{}
	for i, c := range row.Cols {
		if f, ok := row.Values[i].(float64); ok {
			v[c] = f
		}
	}
	var out []string
	a, hasA := v[ColAchieved]
	if req := v["max_concurrency"]; hasA && req > 0 && a < UnderDriven*req {
		out = append(out, fmt.Sprintf("load not applied: under-driven, %.3g requests in flight time-weighted of the %.0f requested (%.0f%%)", a, req, 100*a/req))
	}
	if l := v[ColLittle]; hasA && l > 0 && math.Abs(a-l)/l > 0.05 {
		out = append(out, fmt.Sprintf("timing inconsistent: %.3g requests in flight from the requests' times, %.3g by Little's law from the client's rate and mean latency (%.0f%% apart)", a, l, 100*math.Abs(a-l)/l))
	}
	return out
}
