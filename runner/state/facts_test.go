package state

import (
	"strings"
	"testing"
)

// TestLoadVerdicts: the server's view of a run against what its row
// asked: capped where running never reached the request while requests
// waited (the KV cache named when it filled), one request short
// included; admission-limited where it turned requests away; nothing
// where it ran the load, or where a series it needs is not exposed.
func TestLoadVerdicts(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	base := ServerFacts{Service: "serve", Scrapes: 10, Running: &Gauge{Mean: 24, Peak: 24}, Waiting: &Gauge{Mean: 8, Peak: 8}, KV: &Gauge{Mean: 0.4, Peak: 0.41}}
	cases := []struct {
		name      string
		f         ServerFacts
		requested float64
		want      []string // each verdict's words, in order; none for a load applied
	}{
		{"capped by max_num_seqs", base, 32, []string{"capped by the server serve: 24 requests running at most of the 32 requested, while up to 8 waited (max_num_seqs (its KV cache 41% used at peak)"}},
		{"one short", ServerFacts{Service: "serve", Scrapes: 10, Running: &Gauge{Mean: 24, Peak: 24}, Waiting: &Gauge{Mean: 1, Peak: 1}}, 25, []string{"24 requests running at most of the 25 requested"}},
		{"the KV cache full", ServerFacts{Service: "serve", Scrapes: 10, Running: &Gauge{Mean: 12, Peak: 14}, Waiting: &Gauge{Mean: 6, Peak: 9}, KV: &Gauge{Mean: 0.9, Peak: 0.99}}, 32, []string{"(its KV cache (99% used at peak)"}},
		{"applied", ServerFacts{Service: "serve", Scrapes: 10, Running: &Gauge{Mean: 31.6, Peak: 32}, Waiting: &Gauge{Mean: 0.1, Peak: 1}}, 32, nil},
		{"nothing asked", base, 0, nil},
		{"no waiting series", ServerFacts{Service: "serve", Scrapes: 10, Running: &Gauge{Mean: 24, Peak: 24}}, 32, nil},
		{"one scrape", ServerFacts{Service: "serve", Scrapes: 1, Running: base.Running, Waiting: base.Waiting}, 32, nil},
		{"turned away", ServerFacts{Service: "serve", Scrapes: 10, Running: &Gauge{Mean: 32, Peak: 32}, Waiting: &Gauge{}, Rejected: f(17)}, 32, []string{"admission-limited: the server serve turned away 17 requests at admission"}},
		{"none turned away", ServerFacts{Service: "serve", Scrapes: 10, Running: &Gauge{Mean: 32, Peak: 32}, Waiting: &Gauge{}, Rejected: f(0)}, 32, nil},
	}
	for _, c := range cases {
		got := c.f.LoadVerdicts(c.requested)
		if len(got) != len(c.want) {
			t.Errorf("%s: %q; want %d verdict(s)", c.name, got, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !strings.HasPrefix(got[i], "load not applied: ") || !strings.Contains(got[i], w) {
				t.Errorf("%s: %q; want it to say %q", c.name, got[i], w)
			}
		}
	}
}
