package modelload

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Prewarmed is what a prewarm did.
type Prewarmed struct {
	Before  Residency     `json:"before"`
	Read    int64         `json:"read"` // bytes read
	Took    time.Duration `json:"took_ns"`
	Skipped bool          `json:"skipped,omitempty"` // already warm: nothing read
}

// Rate is the read rate in bytes a second.
func (p Prewarmed) Rate() float64 {
	if p.Took <= 0 {
		return 0
	}
	return float64(p.Read) / p.Took.Seconds()
}

// ErrNoRoom is a folder whose cold part is larger than the memory free
// for the page cache: reading it would evict its own start.
type ErrNoRoom struct{ Need, Free int64 }

func (e *ErrNoRoom) Error() string {
	return fmt.Sprintf("the model's %s not in the page cache does not fit in the %s of memory available: no prewarm", Size(e.Need), Size(e.Free))
}

// Prewarm reads dir's files into the page cache with workers readers,
// calling progress(done, total) as bytes land (from one goroutine at a
// time). A folder already warm is left (Skipped); one whose cold part does
// not fit in MemAvailable is refused with *ErrNoRoom. It holds no GPU: it
// only reads files.
func Prewarm(ctx context.Context, dir string, workers int, progress func(done, total int64)) (Prewarmed, error) {
	start := time.Now()
	before, err := Measure(ctx, dir)
	if err != nil {
		return Prewarmed{}, err
	}
	out := Prewarmed{Before: before}
	need := before.Bytes - before.Resident
	if before.Word() == "warm" {
		out.Skipped, out.Took = true, time.Since(start)
		return out, nil
	}
	if free := memAvailable(); free > 0 && need > free {
		return out, &ErrNoRoom{Need: need, Free: free}
	}
	paths, _, err := files(dir)
	if err != nil {
		return out, err
	}
	var done atomic.Int64
	var mu sync.Mutex
	report := func() {
		if progress != nil && mu.TryLock() {
			progress(done.Load(), before.Bytes)
			mu.Unlock()
		}
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for range max(1, workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 4<<20)
			for i := range jobs {
				if err := readAll(ctx, paths[i], buf, func(n int) { done.Add(int64(n)); report() }); err != nil {
					firstErr.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	for i := range paths {
		if ctx.Err() != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	out.Read, out.Took = done.Load(), time.Since(start)
	if progress != nil {
		progress(done.Load(), before.Bytes)
	}
	if err, ok := firstErr.Load().(error); ok {
		return out, err
	}
	return out, ctx.Err()
}

func readAll(ctx context.Context, path string, buf []byte, add func(int)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for ctx.Err() == nil {
		n, err := f.Read(buf)
		add(n)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}

// memAvailable is /proc/meminfo's MemAvailable in bytes; 0 when unknown.
func memAvailable() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
