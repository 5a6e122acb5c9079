package campaign

import (
	"strings"
	"testing"
)

func TestExporterURL(t *testing.T) {
	for in, want := range map[string]string{
		"node2":                          "http://node2:9400/metrics",
		"node2:9500":                     "http://node2:9500/metrics",
		"http://node2:9400/metrics":      "http://node2:9400/metrics",
		"https://gpu.example.com/dcgm/m": "https://gpu.example.com/dcgm/m",
		"http://10.0.0.7:9400":           "http://10.0.0.7:9400/metrics",
	} {
		u, err := ExporterURL(in)
		if err != nil || u != want {
			t.Errorf("ExporterURL(%q) = %v, %v; want %s", in, u, err, want)
		}
	}
	for _, bad := range []string{"", "ftp://node2/metrics", "http://"} {
		if _, err := ExporterURL(bad); err == nil {
			t.Errorf("ExporterURL(%q) accepted", bad)
		}
	}
}

// TestGPUSources: the grammar, parsed once: each kind, the fake fleet's
// size checked once, two local sources refused, auto when none is local.
func TestGPUSources(t *testing.T) {
	got, err := ParseGPUSources([]string{"dcgm:node2,node3:9500", "fake:4"})
	if err != nil || len(got) != 2 || got[0].String() != "fake:4" || got[1].String() != "dcgm:http://node2:9400/metrics,http://node3:9500/metrics" {
		t.Errorf("%v %v", got, err)
	}
	if got, _ := ParseGPUSources([]string{"dcgm:node2"}); got[0].Kind != "auto" {
		t.Errorf("no local source: %v; want auto first", got)
	}
	for _, bad := range [][]string{{"fake:65"}, {"fake:x"}, {"nvml", "fake:2"}, {"cuda"}, {"dcgm:"}, {"dcgm:ftp://x"}} {
		if _, err := ParseGPUSources(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if s, _ := ParseGPUSource("fake"); s.N != 8 {
		t.Errorf("fake alone: %v", s)
	}
	// A board by name: kept through String (a resume starts it the same).
	if s, err := ParseGPUSource("fake:8:RTX-PRO-6000"); err != nil || s.Model != "rtx-pro-6000" || s.String() != "fake:8:rtx-pro-6000" {
		t.Errorf("fake:8:RTX-PRO-6000 = %+v %v", s, err)
	}
	if _, err = ParseGPUSource("fake:8:rtx 6000"); err == nil || !strings.Contains(err.Error(), "a fake board's name is a word") {
		t.Errorf("a board name with a space: %v", err)
	}
}
