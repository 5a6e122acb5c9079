package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/runner"
)

// GPUHistory summarises GPU readings over a window; *gpu.Sampler is one.
type GPUHistory interface {
	Summarize(from, to time.Time, devices []int) []gpu.Summary
}

// liveFleet is a GPUHistory whose fleet grows as remote hosts answer
// (*gpu.Sampler): the header then lists the fleet as it is now.
type liveFleet interface {
	Inventory() gpu.Inventory
	Hosts() []gpu.HostState
}

// Writer keeps one results file current.
type Writer struct {
	path    string
	plan    *runner.Plan
	env     Env
	gpus    GPUHistory // may be nil
	saved   string     // file of finished phases' GPU summaries, in the state dir
	mu      sync.Mutex
	summary map[string][]gpu.Summary
	remade  []string
	st      *runner.State
	olds    []replaced // files we replaced, watched a while for late appends
	pending string     // an append caught but not yet written
}

// NewWriter writes plan's results to path. stateDir keeps the GPU
// summaries of finished phases so `greenlight report` can rebuild them.
func NewWriter(path string, plan *runner.Plan, env Env, gpus GPUHistory, stateDir string) *Writer {
	w := &Writer{path: path, plan: plan, env: env, gpus: gpus, summary: map[string][]gpu.Summary{}}
	if stateDir != "" {
		w.saved = filepath.Join(stateDir, "gpu-summaries.json")
		if b, err := os.ReadFile(w.saved); err == nil {
			json.Unmarshal(b, &w.summary)
		}
	}
	return w
}

// Path is the results file.
func (w *Writer) Path() string { return w.path }

// Run writes on every event that changes what the file says, until the
// channel closes. Progress alone rewrites at most every 5 s (the header's
// elapsed time and ETA). Errors go to onErr; the next event tries again.
func (w *Writer) Run(events <-chan runner.Event, onErr func(error)) {
	var last time.Time
	for e := range events {
		if e.Kind == runner.Progress && time.Since(last) < 5*time.Second {
			continue
		}
		if err := w.Write(e.State); err != nil && onErr != nil {
			onErr(err)
		}
		last = time.Now()
	}
	if err := w.Flush(); err != nil && onErr != nil {
		onErr(err)
	}
}

// Write renders st into the file, merging with what is there. The file
// is re-read before the rename: a save made meanwhile is merged, not
// overwritten. A line appended to the old file around the rename (`echo
// note >> results.md` in another pane, whose open came first) lands in the
// file we replaced; the descriptor kept open on it catches it, right after
// the rename and again at the next write, and the line is merged in.
func (w *Writer) Write(st *runner.State) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.keepSummaries(st)
	w.st = st
	return w.write()
}

func (w *Writer) write() error {
	for try := 0; try < 50; try++ {
		lost := w.lostAppend()
		old, before, err := openAndRead(w.path)
		if err != nil {
			return fmt.Errorf("results file: %w", err)
		}
		content := string(before)
		if lost != "" {
			if content != "" && !strings.HasSuffix(content, "\n") {
				content += "\n"
			}
			content += lost
		}
		if content == "" {
			content = "# " + w.plan.Name + "\n\n"
		}
		_, damaged := parse(content)
		for _, d := range damaged {
			if !contains(w.remade, d) {
				w.remade = append(w.remade, d)
			}
		}
		bodies, order := w.render(w.st)
		out, _ := merge(content, bodies, order)
		if out == string(before) {
			closeFile(old)
			return nil
		}
		ok, appended, err := w.replace(before, []byte(out))
		if appended != "" {
			w.pending += appended // renamed over lines appended meanwhile: merge them next
		}
		if err != nil || !ok {
			closeFile(old)
			if lost != "" {
				w.pending = lost // not written yet: keep it for the next try
			}
			if err != nil {
				return err
			}
			continue // the user saved between our read and our rename
		}
		w.keepOld(old, int64(len(before)+len(appended)))
		if w.peekPrev() || w.pending != "" {
			continue
		}
		return nil
	}
	return fmt.Errorf("results file %s keeps changing; will try again", w.path)
}

// replaced is a file we renamed a new version over, still open: an editor
// that opened it before the rename may still append to it.
type replaced struct {
	f        *os.File
	consumed int64     // bytes of it that are in the current file
	since    time.Time // last time it grew, or we replaced it
}

// keepOld remembers a file we just replaced.
func (w *Writer) keepOld(f *os.File, consumed int64) {
	if f != nil {
		w.olds = append(w.olds, replaced{f: f, consumed: consumed, since: time.Now()})
	}
}

// peekPrev reports whether a file we replaced has grown since.
func (w *Writer) peekPrev() bool {
	for _, o := range w.olds {
		if fi, err := o.f.Stat(); err == nil && fi.Size() > o.consumed {
			return true
		}
	}
	return false
}

// lostAppend collects what was appended to the files we replaced after we
// read them. A file quiet for ten seconds is let go: an append needs its
// open before our rename and its write after, which takes microseconds
// unless the machine is badly overloaded; at most 256 are kept.
func (w *Writer) lostAppend() string {
	out := w.pending
	w.pending = ""
	keep := w.olds[:0]
	for i, o := range w.olds {
		if fi, err := o.f.Stat(); err == nil && fi.Size() > o.consumed {
			b := make([]byte, fi.Size()-o.consumed)
			if n, _ := o.f.ReadAt(b, o.consumed); n > 0 {
				out += string(b[:n])
				o.consumed += int64(n)
				o.since = time.Now()
			}
		}
		if time.Since(o.since) > 10*time.Second || len(w.olds)-i > 256 {
			o.f.Close()
			continue
		}
		keep = append(keep, o)
	}
	w.olds = keep
	return out
}

// Flush merges any late append to the replaced file; call it last.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.st == nil {
		return nil
	}
	time.Sleep(20 * time.Millisecond)
	if !w.peekPrev() && w.pending == "" {
		return nil
	}
	return w.write()
}

func openAndRead(path string) (*os.File, []byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, b, nil
}

func closeFile(f *os.File) {
	if f != nil {
		f.Close()
	}
}

func (w *Writer) render(st *runner.State) (map[string]string, []string) {
	env := w.env
	if live, ok := w.gpus.(liveFleet); ok {
		env.Inventory, env.Hosts = live.Inventory(), live.Hosts()
	}
	bodies := map[string]string{"header": header(w.plan, st, env, w.remade)}
	order := []string{"header"}
	for _, p := range st.Phases {
		ph := w.plan.Phase(p.ID)
		if ph == nil {
			continue
		}
		id := "phase:" + p.ID
		bodies[id] = phaseBlock(ph, p, st.Now, w.gpuSummary(ph, p, st.Now))
		order = append(order, id)
	}
	return bodies, order
}

func (w *Writer) gpuSummary(ph *runner.Phase, p runner.PhaseState, now time.Time) []gpu.Summary {
	if s, ok := w.summary[p.ID]; ok && p.Status.Finished() {
		return s
	}
	if w.gpus == nil || p.Started.IsZero() {
		return nil
	}
	end := p.Ended
	if end.IsZero() {
		end = now
	}
	return w.gpus.Summarize(p.Started, end, ph.GPUs)
}

// keepSummaries fixes the GPU summary of each phase as it finishes.
func (w *Writer) keepSummaries(st *runner.State) {
	if w.gpus == nil {
		return
	}
	changed := false
	for _, p := range st.Phases {
		_, have := w.summary[p.ID]
		if p.Status.Finished() && !p.Started.IsZero() && !have {
			ph := w.plan.Phase(p.ID)
			if ph == nil {
				continue
			}
			w.summary[p.ID] = w.gpus.Summarize(p.Started, p.Ended, ph.GPUs)
			changed = true
		}
		if !p.Status.Finished() && have {
			delete(w.summary, p.ID) // running again
			changed = true
		}
	}
	if changed && w.saved != "" {
		if b, err := json.Marshal(w.summary); err == nil {
			os.WriteFile(w.saved, b, 0o644)
		}
	}
}

// replace writes data over the file atomically, unless the file no longer
// holds before. A file that only grew (lines appended meanwhile) is still
// replaced, and what was appended is returned so it can be merged in next;
// any other change leaves the file alone and ok false.
func (w *Writer) replace(before, data []byte) (ok bool, appended string, err error) {
	dir := filepath.Dir(w.path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, "", err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(w.path)+".greenlight-*")
	if err != nil {
		return false, "", fmt.Errorf("results file: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(w.path); err == nil {
		mode = fi.Mode().Perm()
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, "", fmt.Errorf("results file not updated (the old one is intact): %w", err)
	}
	now, err := os.ReadFile(w.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, "", err
	}
	switch {
	case string(now) == string(before):
	case len(before) > 0 && len(now) > len(before) && string(now[:len(before)]) == string(before):
		appended = string(now[len(before):])
	default:
		return false, "", nil
	}
	if err := os.Rename(tmp, w.path); err != nil {
		return false, "", fmt.Errorf("results file: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return true, appended, nil
}
