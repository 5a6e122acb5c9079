package campaign

import "regexp"

// Which way a metric improves: said by the campaign (better:, a
// metrics: entry, an expectation's direction), else, where a view asks,
// guessed from its name and said to be.

// timeName is a metric whose name says it is a time: better lower;
// rateName one whose name says it is a rate: better higher; tokenRate a
// rate of tokens. A time is looked for first (time_s and
// benchmark_duration_s are seconds, not rates); a bare _s is a rate only
// after a unit of things (tok_s, req_s, gb_s), else seconds. The one
// definition, for every view that guesses a direction, a key result, a
// unit or energy per token by a name.
var (
	timeName  = regexp.MustCompile(`(?i)(^|_)(time|latency|duration|elapsed|ttft|tpot|itl|e2el)(_|$)|_(ms|us|ns)$`)
	rateName  = regexp.MustCompile(`(?i)flops|throughput|gbps|_gbs$|bandwidth|/s$|(^|_)(bus|alg)?bw(_|$)|(^|_)per_s$|(^|_)(tok|toks|tokens|req|reqs|requests|gb|mb|kb|b|bytes|flop|samples|images|it)_s$`)
	tokenRate = regexp.MustCompile(`(?i)(^|_)(tok|toks|tokens)(_s|/s|_per_s)$`)
)

// TimeByName says a metric's name says it is a time (better lower).
func TimeByName(metric string) bool { return timeName.MatchString(metric) }

// RateByName says a metric's name says it is a rate (better higher), and
// not a time.
func RateByName(metric string) bool {
	return !timeName.MatchString(metric) && rateName.MatchString(metric)
}

// TokenRateByName says a metric's name says it is tokens per second.
func TokenRateByName(metric string) bool { return tokenRate.MatchString(metric) }

// ByName is the basis of a direction a metric's name gave.
const ByName = "by its name"

// Way is which way metric improves, given a phase's directions (Better):
// its own, else the phase's better:; else, where guess is asked, by its
// name: "lower" for a time (time_us, mean_tpot_ms, latency), "higher"
// for a rate (tflops, tok_s, gbps, output_throughput), with basis
// ByName, which every view that uses it says. "" when nothing says.
func Way(dirs map[string]Direction, metric string, guess bool) (dir Direction, basis string) {
	if d := dirs[metric]; d != "" {
		return d, ""
	}
	if d := dirs["*"]; d != "" {
		return d, ""
	}
	switch {
	case !guess:
	case TimeByName(metric):
		return Lower, ByName
	case RateByName(metric):
		return Higher, ByName
	}
	return "", ""
}

// Better says which way a phase's metrics improve: better: of the metric
// itself, else its metrics: entry's, else an expectation's direction (>=
// is higher, <= lower), else the phase's better: for all.
func Better(ph *Phase) map[string]Direction {
	out := map[string]Direction{}
	dir := func(e Expect) Direction { return Op(e.Op) }
	all := append([]Expect(nil), ph.Expect...)
	for _, s := range ph.Steps {
		all = append(all, s.Expect...)
	}
	for _, e := range all {
		if d := dir(e); d != "" {
			out[e.Column] = d
		}
	}
	for _, m := range ph.Metrics {
		if m.Better != "" {
			for _, n := range m.Names() {
				out[n] = m.Better
			}
		}
	}
	for k, d := range ph.BetterOf {
		if d != "" {
			for _, n := range (Metric{Name: k}).Names() {
				out[n] = d // said of the metric itself: over an expect's direction
			}
		}
	}
	if ph.Better != "" {
		out["*"] = ph.Better // every other metric
	}
	return out
}
