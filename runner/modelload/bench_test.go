package modelload

import (
	"context"
	"testing"
)

// BenchmarkPrewarmCold measures the prewarm's read rate from a cold page
// cache: 4 shards of 128 MiB, evicted before each read.
//
//	go test ./runner/modelload -run X -bench PrewarmCold -benchtime 5x
func BenchmarkPrewarmCold(b *testing.B) {
	dir := model(b, 4, 128<<20)
	var read, ns float64
	for b.Loop() {
		b.StopTimer()
		Evict(dir)
		if r, _ := Measure(context.Background(), dir); r.Word() != "cold" {
			b.Skipf("the kernel kept the evicted pages (%s)", r)
		}
		b.StartTimer()
		p, err := Prewarm(context.Background(), dir, 4, nil)
		if err != nil {
			b.Fatal(err)
		}
		read += float64(p.Read)
		ns += float64(p.Took.Nanoseconds())
	}
	b.ReportMetric(read/ns, "GB/s")
}
