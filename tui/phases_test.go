package tui

import "testing"

// TestFitTitleKeepsThePoint: a phase copied per point of a swept service
// keeps its point's values when its title is cut, so its copies stay told
// apart at 80 columns; any other title is cut at its end.
func TestFitTitleKeepsThePoint(t *testing.T) {
	for _, tt := range []struct {
		title string
		w     int
		want  string
	}{
		{"Decode throughput · max_num_seqs=64,max_batched=2048", 20, "Decode th… · 64,2048"},
		{"vLLM server · max_num_seqs=256,max_batched=8192", 20, "vLLM ser… · 256,8192"},
		{"serve · tp=8", 20, "serve · tp=8"},
		{"a very long title · with a dot but no point", 16, "a very long tit…"},
		{"x · a=100000000,b=200000000", 12, "100000000,2…"},
	} {
		if got := fitTitle(tt.title, tt.w); got != tt.want {
			t.Errorf("fitTitle(%q, %d) = %q; want %q", tt.title, tt.w, got, tt.want)
		}
	}
}
