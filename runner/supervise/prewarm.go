package supervise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/greenlight-run/greenlight/runner/modelload"
)

// PrewarmFile is where, in a step's folder, the supervisor leaves what its
// prewarm did (a modelload.Prewarmed), for the runner's Load table.
const PrewarmFile = "prewarm.json"

// PrewarmLine starts each line the prewarm writes to the step's log: the
// runner reads its progress from them ("12.3/40.0 GB read").
const PrewarmLine = "greenlight: prewarm: "

// prewarm reads dir into the page cache before the step's command starts,
// saying its progress in the log every second; a stop asked meanwhile ends
// it (stopped true). It never fails the step: a folder that does not fit,
// or cannot be read, is said and the command starts without it.
func prewarm(dir string, logf io.Writer, stopReq <-chan os.Signal, out string) (stopped bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stopReq:
			stopped = true
			cancel()
		case <-ctx.Done():
		}
	}()
	start, last := time.Now(), time.Time{}
	progress := func(done, total int64) {
		if now := time.Now(); now.Sub(last) >= time.Second {
			last = now
			rate := float64(done) / max(now.Sub(start).Seconds(), 1e-3)
			fmt.Fprintf(logf, "%s%.1f/%.1f GB read, %.2f GB/s\n", PrewarmLine, float64(done)/1e9, float64(total)/1e9, rate/1e9)
		}
	}
	fmt.Fprintf(logf, "%sreading %s into the page cache before the service starts\n", PrewarmLine, dir)
	p, err := modelload.Prewarm(ctx, dir, min(8, max(2, runtime.NumCPU())), progress)
	var noRoom *modelload.ErrNoRoom
	switch {
	case stopped:
		fmt.Fprintf(logf, "%sstopped after %s of %s\n", PrewarmLine, modelload.Size(p.Read), modelload.Size(p.Before.Bytes))
		return true
	case errors.As(err, &noRoom):
		fmt.Fprintf(logf, "%s%v; the service starts without it\n", PrewarmLine, err)
	case err != nil:
		fmt.Fprintf(logf, "%scannot read the model's folder (%v); the service starts without it\n", PrewarmLine, err)
	case p.Skipped:
		fmt.Fprintf(logf, "%sthe folder is warm already (%s): nothing read\n", PrewarmLine, p.Before)
	default:
		fmt.Fprintf(logf, "%sdone: read %s in %.1f s (%.2f GB/s); before it the folder was %s\n", PrewarmLine,
			modelload.Size(p.Read), p.Took.Seconds(), p.Rate()/1e9, p.Before)
	}
	if b, err := json.Marshal(p); err == nil {
		os.WriteFile(out, b, 0o644)
	}
	return false
}
