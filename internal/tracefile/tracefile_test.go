package tracefile

import "testing"

func TestIs(t *testing.T) {
	for in, want := range map[string]bool{
		"traces/rank0.123.pt.trace.json.gz": true, "a.pt.trace.json": true, "cap.nsys-rep": true,
		"bench/vllm-1.json": false, "a.pt.trace.json.gz.tmp": false, "trace.json.gz": false,
	} {
		if got := Is(in); got != want {
			t.Errorf("Is(%q) = %v; want %v", in, got, want)
		}
	}
}
