package modelload

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// model writes a folder of n files of size bytes each on a real disk
// (not a tmpfs, which is the page cache itself), as a model's shards.
func model(t testing.TB, n int, size int) string {
	t.Helper()
	dir, err := os.MkdirTemp(diskDir(), "model")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	buf := make([]byte, size)
	for i := range n {
		rand.Read(buf)
		if err := os.WriteFile(filepath.Join(dir, "model-0000"+string(rune('0'+i))+".safetensors"), buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// diskDir is a folder on a disk whose pages can be evicted: the module's
// own folder (the test's temp dir may be a tmpfs).
func diskDir() string {
	wd, _ := os.Getwd()
	return wd
}

// TestColdThenWarm: a folder evicted with posix_fadvise(DONTNEED) is
// called cold; after a prewarm it is warm, and a second prewarm reads
// nothing.
func TestColdThenWarm(t *testing.T) {
	dir := model(t, 4, 8<<20)
	if err := Evict(dir); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := Measure(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Files != 4 || r.Bytes != 32<<20 {
		t.Fatalf("measured %+v; want 4 files of 32 MiB", r)
	}
	if r.Word() != "cold" {
		t.Skipf("the kernel kept the evicted pages (%s): this filesystem ignores DONTNEED", r)
	}
	var last int64
	p, err := Prewarm(ctx, dir, 3, func(done, total int64) { last = done })
	if err != nil {
		t.Fatal(err)
	}
	if p.Read != 32<<20 || last != 32<<20 || p.Skipped {
		t.Errorf("prewarm read %d (progress said %d); want all 32 MiB", p.Read, last)
	}
	r, _ = Measure(ctx, dir)
	if r.Word() != "warm" || !strings.HasPrefix(r.String(), "warm: 100% of 34 MB") {
		t.Errorf("after prewarm: %s", r)
	}
	again, err := Prewarm(ctx, dir, 3, nil)
	if err != nil || !again.Skipped || again.Read != 0 {
		t.Errorf("a warm folder prewarmed again: %+v %v; want skipped", again, err)
	}
	Evict(dir)
	half, _ := os.Open(filepath.Join(dir, "model-00000.safetensors"))
	buf := make([]byte, 8<<20)
	half.Read(buf)
	half.Close()
	if r, _ := Measure(ctx, dir); r.Word() != "partly warm" || r.Share() < 0.2 || r.Share() > 0.3 {
		t.Errorf("one shard of four read: %s; want partly warm, 25%%", r)
	}
}

// TestMeasureBounded: a count that runs out of time says so.
func TestMeasureBounded(t *testing.T) {
	dir := model(t, 3, 1<<20)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	r, err := Measure(ctx, dir)
	if err != nil || !r.Cut || r.Files != 0 {
		t.Errorf("a count past its time: %+v %v; want cut with nothing counted", r, err)
	}
}

// TestPrewarmNoRoom: a cold part larger than the memory available is
// refused before a byte is read.
func TestPrewarmNoRoom(t *testing.T) {
	e := &ErrNoRoom{Need: 2e12, Free: 1.5e12}
	if got := e.Error(); got != "the model's 2.00 TB not in the page cache does not fit in the 1.50 TB of memory available: no prewarm" {
		t.Errorf("%q", got)
	}
	if memAvailable() <= 0 {
		t.Error("MemAvailable unread")
	}
}

// TestVLLMStages: vLLM's own timing lines, as its versions print them,
// give each stage's seconds; other lines give nothing.
func TestVLLMStages(t *testing.T) {
	for _, c := range []struct {
		line string
		want StageTime
	}{
		{"(VllmWorker rank=0 pid=1) INFO 10-06 11:41:02 [default_loader.py:267] Loading weights took 1021.40 seconds", StageTime{"loading weights", 1021.4}},
		{"INFO 10-06 11:41:03 [gpu_model_runner.py:2653] Model loading took 72.1234 GiB and 1030.512 seconds", StageTime{"model loading", 1030.512}},
		{"Model loading took 55.22 GiB memory and 20.3s", StageTime{"model loading", 20.3}},
		{"INFO [monitor.py:34] torch.compile takes 25.31 s in total", StageTime{"torch.compile", 25.31}},
		{"INFO [worker.py:287] Memory profiling takes 12.45 seconds", StageTime{"memory profiling", 12.45}},
		{"(EngineCore_DP0 pid=212) INFO 10-06 12:00:40 [gpu_model_runner.py:3480] Graph capturing finished in 25 secs, took 0.31 GiB", StageTime{"graph capture", 25}},
		{"INFO 11-03 15:47:45 [llm_engine.py:428] init engine (profile, create kv cache, warmup model) took 95.30 seconds", StageTime{"engine init", 95.3}},
		{"init engine took 70.62 s (compilation: 42.18 s)", StageTime{"engine init", 70.62}},
	} {
		got, ok := VLLMStage([]byte(c.line))
		if !ok || got != c.want {
			t.Errorf("%q: %+v %v; want %+v", c.line, got, ok, c.want)
		}
	}
	for _, l := range []string{"INFO: Application startup complete.", "Loading safetensors checkpoint shards: 50% 32/64", ""} {
		if got, ok := VLLMStage([]byte(l)); ok {
			t.Errorf("%q read as %+v", l, got)
		}
	}
}
