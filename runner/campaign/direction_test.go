package campaign

import "testing"

// TestNamesSayTheirWay: the one rule by which a metric's name says it is
// a time or a rate (and a rate of tokens): seconds are times, whatever
// their _s; a _s after a unit of things is per second.
func TestNamesSayTheirWay(t *testing.T) {
	for _, c := range []struct {
		name       string
		time, rate bool
		tokens     bool
		want       Direction
	}{
		{"mean_tpot_ms", true, false, false, Lower},
		{"time_us", true, false, false, Lower},
		{"benchmark_duration_s", true, false, false, Lower},
		{"elapsed_s", true, false, false, Lower},
		{"secs", false, false, false, ""},
		{"output_token_throughput_tok_s", false, true, true, Higher},
		{"tok_s", false, true, true, Higher},
		{"tokens_per_s", false, true, true, Higher},
		{"request_throughput", false, true, false, Higher},
		{"req_s", false, true, false, Higher},
		{"tflops", false, true, false, Higher},
		{"bw_gbps", false, true, false, Higher},
		{"oop_busbw_gbs", false, true, false, Higher},
		{"gb_s", false, true, false, Higher},
		{"completed", false, false, false, ""},
	} {
		if TimeByName(c.name) != c.time || RateByName(c.name) != c.rate || TokenRateByName(c.name) != c.tokens {
			t.Errorf("%s: time %v rate %v tokens %v; want %v %v %v", c.name, TimeByName(c.name), RateByName(c.name), TokenRateByName(c.name), c.time, c.rate, c.tokens)
		}
		if d, _ := Way(nil, c.name, true); d != c.want {
			t.Errorf("%s: way %q; want %q", c.name, d, c.want)
		}
	}
}
