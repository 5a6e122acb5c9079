package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/creack/pty"
)

// BenchmarkSteadyStateTerminal runs the real binary under a pseudo-terminal
// at 80x24 and 200x60 with 8 fake GPUs sampled at 1 Hz and one long step running, and
// measures, after 5 s of warm-up and over 60 s: bytes written to the
// terminal per second (budget 2 KB/s) and the monitor's CPU use, as a share
// of one core (budget 0.5%).
//
//	go test -run XXX -bench SteadyStateTerminal -benchtime 1x .
func BenchmarkSteadyStateTerminal(b *testing.B) {
	for _, size := range []struct{ cols, rows uint16 }{{80, 24}, {200, 60}} {
		b.Run(fmt.Sprintf("%dx%d", size.cols, size.rows), func(b *testing.B) { steadyState(b, size.cols, size.rows) })
	}
}

func steadyState(b *testing.B, cols, rows uint16) {
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		c := filepath.Join(dir, "c.yaml")
		os.WriteFile(c, []byte("name: steady\nphases:\n  - id: long\n    steps: [{run: 'sleep 120', estimate: 2m}]\n"), 0o644)
		cmd := exec.Command(binary(b), "run", "--gpu", "fake:8", c)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "LANG=C.UTF-8", "TERM=xterm-256color")
		f, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: cols, Rows: rows})
		if err != nil {
			b.Fatal(err)
		}
		var n atomic.Int64
		go func() {
			buf := make([]byte, 64<<10)
			for {
				k, err := f.Read(buf)
				n.Add(int64(k))
				if err != nil {
					return
				}
			}
		}()
		time.Sleep(5 * time.Second)
		bytes0, cpu0, t0 := n.Load(), cpuTicks(b, cmd.Process.Pid), time.Now()
		time.Sleep(60 * time.Second)
		bytes1, cpu1, t1 := n.Load(), cpuTicks(b, cmd.Process.Pid), time.Now()
		secs := t1.Sub(t0).Seconds()
		b.ReportMetric(float64(bytes1-bytes0)/secs, "B/s")
		b.ReportMetric(float64(cpu1-cpu0)/100/secs*100, "%cpu")
		f.Write([]byte("q"))
		time.Sleep(300 * time.Millisecond)
		f.Write([]byte("S")) // stop the step
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
		io.Copy(io.Discard, f)
		f.Close()
	}
}

// cpuTicks is a process's user+system time in clock ticks (100 per second).
func cpuTicks(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}
