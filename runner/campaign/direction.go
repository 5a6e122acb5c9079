package campaign

import "regexp"

// Which way a metric improves: said by the campaign (better:, a
// metrics: entry, an expectation's direction), else, where a view asks,
// guessed from its name and said to be.

// timeName is a metric whose name says it is a time: better lower;
// rateName one whose name says it is a rate: better higher. A time is
// looked for first (time_s is seconds, not a rate).
var (
	timeName = regexp.MustCompile(`(?i)(^|_)(time|latency|duration|ttft|tpot|itl|e2el)(_|$)|_(ms|us|ns)$`)
	rateName = regexp.MustCompile(`(?i)flops|throughput|gbps|bandwidth|(^|_)(bw|tok_s|tokens_s|req_s|per_s)$|_s$`)
)

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
	case timeName.MatchString(metric):
		return Lower, ByName
	case rateName.MatchString(metric):
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
