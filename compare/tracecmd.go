package compare

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sync"
	"time"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/trace"
)

// traceCommand is `greenlight compare --traces OLD NEW`: two folders of
// traces, each summarised (a reader per core, each trace streamed in
// bounded memory), grouped into captures and compared.
func traceCommand(oldDir, newDir string, step *regexp.Regexp, mdPath string, failWorse bool, stdout, stderr io.Writer) int {
	var sides [2][]trace.Capture
	for i, dir := range []string{oldDir, newDir} {
		caps, err := FolderCaptures(dir, step, func(line string) { fmt.Fprintf(stderr, "greenlight compare: %s\n", line) })
		if err != nil {
			fmt.Fprintf(stderr, "greenlight compare: %v\n", err)
			return ExitUsage
		}
		sides[i] = caps
	}
	d := DiffCaptures(filepath.Clean(oldDir), sides[0], filepath.Clean(newDir), sides[1])
	fmt.Fprint(stdout, d.Text())
	if mdPath != "" {
		text := fmt.Sprintf("# Traces of %s compared with %s\n\n%s", md(filepath.Clean(newDir)), md(filepath.Clean(oldDir)), d.Markdown(0))
		if err := os.WriteFile(mdPath, []byte(text), 0o644); err != nil {
			fmt.Fprintf(stderr, "greenlight compare: %v\n", err)
			return ExitWorse
		}
	}
	if failWorse {
		for _, f := range d.Flagged() {
			if f.Verdict == Worse || f.Verdict == New {
				return ExitWorse
			}
		}
		if d.Step.Verdict == Worse {
			return ExitWorse
		}
	}
	return ExitOK
}

// FolderCaptures summarises the traces under dir into captures (see
// trace.Captures), a reader per core, step the annotation one step is
// (nil: ProfilerStep#N); say hears a line for each trace
// read and, every few seconds, how far the reading is.
func FolderCaptures(dir string, step *regexp.Regexp, say func(string)) ([]trace.Capture, error) {
	groups, names, err := trace.Captures(dir)
	if err != nil {
		return nil, err
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("%s holds no trace (*.pt.trace.json[.gz], *.nsys-rep), in it or in a folder under it", dir)
	}
	type job struct{ g, i int }
	var jobs []job
	sums := make([][]*trace.Summary, len(groups))
	for g, paths := range groups {
		sums[g] = make([]*trace.Summary, len(paths))
		for i := range paths {
			jobs = append(jobs, job{g, i})
		}
	}
	var (
		mu       sync.Mutex
		read     = map[string][2]int64{}
		lastSaid = time.Now()
		errs     []error
	)
	next := make(chan job)
	var wg sync.WaitGroup
	for range min(len(jobs), runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for j := range next {
				path := groups[j.g][j.i]
				s, err := trace.Any(context.Background(), path, trace.Options{Top: trace.KernelsKept, Step: step, Progress: func(n, of int64) {
					mu.Lock()
					defer mu.Unlock()
					read[path] = [2]int64{n, of}
					if time.Since(lastSaid) >= 3*time.Second {
						lastSaid = time.Now()
						var n, of int64
						for _, r := range read {
							n, of = n+r[0], of+r[1]
						}
						say(fmt.Sprintf("reading %s of %s", format.Bytes(uint64(n)), format.Bytes(uint64(of))))
					}
				}})
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %v", path, err))
				} else {
					sums[j.g][j.i] = s
				}
				mu.Unlock()
			}
		})
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		return nil, errs[0]
	}
	out := make([]trace.Capture, len(groups))
	for g := range groups {
		out[g] = trace.Gather(names[g], sums[g])
		say(fmt.Sprintf("%s: %d trace(s), %s", names[g], len(groups[g]), stepsWords(out[g])))
	}
	return out, nil
}

func stepsWords(c trace.Capture) string {
	if c.Steps > 0 {
		return fmt.Sprintf("%.0f profiler steps, %.2f ms of kernels a step", c.Steps, c.KernelUS/c.Steps/1000)
	}
	return fmt.Sprintf("no profiler steps marked, %.2f ms of kernels", c.KernelUS/1000)
}
