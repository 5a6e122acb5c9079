package report

// Profiler traces listed as a phase's artifacts, summarised where the GPU
// time went, off the writer's path: a trace is summarised once it has
// stopped growing (or its phase has ended), by one worker at a time
// (bounded memory), its progress said in the phase's block, its summary
// kept in the state dir so a restart or `greenlight report` does not read
// it again.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/greenlight-run/greenlight/internal/files"
	"github.com/greenlight-run/greenlight/runner/campaign"

	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/trace"
)

const tracesFile = "trace-summaries.json"

// traceQuiet is how long a trace must keep its size before it is read
// while its phase still runs (a profiler flushing for minutes keeps
// growing it).
const traceQuiet = 10 * time.Second

type traceBook struct {
	dir   string // state dir, for the cache; "" keeps nothing
	base  string // where relative artifact paths are
	rules *trace.Rules
	step  *regexp.Regexp // the annotation one step is (traces: {step:}); nil: ProfilerStep#N
	top   int
	kick  func() // asks the writer to write again; nil: summarise in the caller

	mu       sync.Mutex
	done     map[string]*trace.Summary // by traceKey
	failed   map[string]string         // by traceKey: why it could not be read at all
	seen     map[string]time.Time      // traceKey -> first seen with this size
	queued   map[string]bool
	queue    []traceJob
	progress map[string]string // path -> "1.2/4.1 GB"
	working  int               // readers summarising now
	landed   bool              // a summary (or failure) came since the last consider: the record lacks it
	lastKick time.Time
}

type traceJob struct{ path, key string }

func traceKey(path string, size int64) string { return fmt.Sprintf("%s|%d", path, size) }

func newTraceBook(plan *campaign.Plan, stateDir string) *traceBook {
	overrides := make([]trace.Rule, 0, len(plan.Traces.Categories))
	for _, c := range plan.Traces.Categories {
		overrides = append(overrides, trace.Rule{Name: c.Name, Pattern: c.Pattern})
	}
	rules, err := trace.NewRules(overrides)
	if err != nil {
		rules = trace.DefaultRules() // Load checked them; not reached
	}
	var step *regexp.Regexp
	if plan.Traces.Step != "" {
		step, _ = regexp.Compile(plan.Traces.Step) // Load checked it
	}
	b := &traceBook{dir: stateDir, base: plan.Dir, rules: rules, step: step, top: plan.Traces.Top, done: map[string]*trace.Summary{},
		failed: map[string]string{}, seen: map[string]time.Time{}, queued: map[string]bool{}, progress: map[string]string{}}
	if stateDir != "" {
		if data, err := os.ReadFile(filepath.Join(stateDir, tracesFile)); err == nil {
			json.Unmarshal(data, &b.done)
		}
	}
	return b
}

func (b *traceBook) abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(b.base, p)
}

// consider queues the phases' traces that are ready to read.
func (b *traceBook) consider(st *runner.State, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.landed = false // this write renders what has landed
	for _, p := range st.Phases {
		for _, a := range p.Artifacts {
			if !trace.IsTrace(a.Path) || a.Gone {
				continue
			}
			key := traceKey(b.abs(a.Path), a.Size)
			if b.done[key] != nil || b.failed[key] != "" || b.queued[key] {
				continue
			}
			first, ok := b.seen[key]
			if !ok {
				b.seen[key], first = now, now
			}
			if !p.Status.Finished() && now.Sub(first) < traceQuiet {
				continue
			}
			b.queued[key] = true
			b.queue = append(b.queue, traceJob{b.abs(a.Path), key})
		}
	}
	// Ranks side by side: a reader per trace up to a quarter of the
	// cores while the campaign runs (its steps come first), each in
	// bounded memory.
	for b.kick != nil && b.working < len(b.queue) && b.working < max(1, runtime.NumCPU()/4) {
		b.working++
		go b.work()
	}
}

// drain summarises what is queued (greenlight report), a reader per
// core, and returns when all is done.
func (b *traceBook) drain() {
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Go(func() {
			for j, ok := b.next(false); ok; j, ok = b.next(false) {
				b.run(j)
			}
		})
	}
	wg.Wait()
}

// work is one of the campaign's readers: it summarises what is queued,
// kicking a write after each, and ends when nothing is.
func (b *traceBook) work() {
	for j, ok := b.next(true); ok; j, ok = b.next(true) {
		b.run(j)
		b.kick()
	}
}

// next takes the next queued trace; ok is false when none is left (a
// reader of the campaign's, done, is counted out).
func (b *traceBook) next(counted bool) (traceJob, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		if counted {
			b.working--
		}
		return traceJob{}, false
	}
	j := b.queue[0]
	b.queue = b.queue[1:]
	return j, true
}

// wait blocks until nothing is queued or being summarised; it reports
// whether the last write lacks a summary: one was still being made, or
// one landed after that write rendered (a small trace read in the moment
// between the write and this wait).
func (b *traceBook) wait() bool {
	waited := false
	for {
		b.mu.Lock()
		idle := len(b.queue) == 0 && b.working == 0
		landed := b.landed
		b.mu.Unlock()
		if idle {
			return waited || landed
		}
		waited = true
		time.Sleep(50 * time.Millisecond)
	}
}

func (b *traceBook) run(j traceJob) {
	// A trace that trips the reader is a line in the block, never the
	// runner's end.
	defer func() {
		if p := recover(); p != nil {
			b.mu.Lock()
			delete(b.progress, j.path)
			delete(b.queued, j.key)
			b.failed[j.key] = fmt.Sprintf("greenlight could not read it (%v); please report this with the file", p)
			b.mu.Unlock()
		}
	}()
	// Kept with every kernel a comparison needs (trace.KernelsKept), the
	// block trimmed to the campaign's top (phase).
	o := trace.Options{Rules: b.rules, Step: b.step, Top: max(b.top, trace.KernelsKept), Progress: func(read, of int64) {
		b.mu.Lock()
		b.progress[j.path] = fmt.Sprintf("%s/%s", format.Bytes(uint64(read)), format.Bytes(uint64(of)))
		due := time.Since(b.lastKick) >= 2*time.Second && b.kick != nil
		if due {
			b.lastKick = time.Now()
		}
		b.mu.Unlock()
		if due {
			b.kick()
		}
	}}
	s, err := trace.Any(context.Background(), j.path, o)
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.progress, j.path)
	delete(b.queued, j.key)
	b.landed = true
	if err != nil {
		b.failed[j.key] = err.Error() // said in the block: damaged, no nsys, ...
		return
	}
	b.done[j.key] = s
	b.save()
}

func (b *traceBook) save() {
	if b.dir == "" {
		return
	}
	data, err := json.Marshal(b.done)
	if err == nil {
		files.WriteAtomic(filepath.Join(b.dir, tracesFile), data)
	}
}

// phase is what the book knows of a phase's traces: the summaries, in
// rank order, and a line for each trace not summarised yet.
func (b *traceBook) phase(p runner.PhaseState) ([]*trace.Summary, []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var sums []*trace.Summary
	var notes []string
	for _, a := range p.Artifacts {
		if !trace.IsTrace(a.Path) || a.Gone {
			continue
		}
		path := b.abs(a.Path)
		key := traceKey(path, a.Size)
		name := trace.RankOf(path)
		switch {
		case b.done[key] != nil:
			s := b.trimmed(b.done[key])
			s.File = a.Path
			sums = append(sums, s)
		case b.failed[key] != "":
			notes = append(notes, fmt.Sprintf("`%s`: %s", a.Path, b.failed[key]))
		case b.progress[path] != "":
			notes = append(notes, fmt.Sprintf("summarising %s trace, %s", name, b.progress[path]))
		case b.queued[key]:
			notes = append(notes, fmt.Sprintf("%s trace queued to be summarised", name))
		default:
			notes = append(notes, fmt.Sprintf("%s trace: summarised once it stops growing (%s unchanged) or its phase ends", name, format.Duration(traceQuiet)))
		}
	}
	// A trace the phase claimed (or one in its own folder of the state
	// dir), summarised and deleted since (to free the disk, say), keeps its
	// summary: the latest one kept of its path. Only a file that is gone
	// is said so.
	gone := map[string]*trace.Summary{}
	goneSize := map[string]int64{}
	claimed := map[string]bool{}
	for _, a := range p.Artifacts {
		if a.Gone && trace.IsTrace(a.Path) {
			claimed[b.abs(a.Path)] = true
		}
	}
	for key, s := range b.done {
		i := strings.LastIndexByte(key, '|')
		if i < 0 {
			continue
		}
		path := key[:i]
		if !claimed[path] && !b.ownFolder(p.ID, path) {
			continue
		}
		size, _ := strconv.ParseInt(key[i+1:], 10, 64)
		if gone[path] != nil && goneSize[path] >= size {
			continue
		}
		if _, err := os.Stat(path); err == nil {
			continue // there: not gone
		}
		gone[path], goneSize[path] = s, size
	}
	var goneNotes []string
	for path, s := range gone {
		c := b.trimmed(s)
		c.File = path
		sums = append(sums, c)
		goneNotes = append(goneNotes, fmt.Sprintf("`%s` was deleted after it was summarised: its summary is kept", path))
	}
	sort.Strings(goneNotes)
	notes = append(notes, goneNotes...)
	sort.SliceStable(sums, func(i, j int) bool { return rankLess(sums[i].Rank, sums[j].Rank) })
	return sums, notes
}

// trimmed is a copy of a kept summary with the campaign's top kernels
// listed, the rest counted as the others.
func (b *traceBook) trimmed(s *trace.Summary) *trace.Summary {
	c := *s
	c.Top = slices.Clone(s.Top)
	c.Trim(cmp.Or(b.top, 10))
	return &c
}

// captures are the phase's traces summarised so far as captures, one a
// step's run that made them (runner.Artifact.Step), in the steps' order;
// a trace no step made is a capture of its own. A capture still being
// summarised is left out until all its traces are.
func (b *traceBook) captures(p runner.PhaseState) []trace.Capture {
	b.mu.Lock()
	defer b.mu.Unlock()
	groups := map[string][]*trace.Summary{}
	pending := map[string]bool{}
	var order []string
	for _, a := range p.Artifacts {
		if !trace.IsTrace(a.Path) {
			continue
		}
		name := a.Step
		if name == "" {
			name = filepath.Base(a.Path)
		}
		if _, ok := groups[name]; !ok && !pending[name] {
			order = append(order, name)
		}
		s := b.done[traceKey(b.abs(a.Path), a.Size)]
		if s == nil {
			pending[name] = true
			continue
		}
		groups[name] = append(groups[name], s)
	}
	var out []trace.Capture
	for _, name := range order {
		if pending[name] || len(groups[name]) == 0 {
			continue
		}
		out = append(out, trace.Gather(name, groups[name]))
	}
	return out
}

// ownFolder says a path is in the phase's own artifacts folder of the
// state dir (where a capture: puts its traces, which no glob names).
func (b *traceBook) ownFolder(phase, path string) bool {
	return b.dir != "" && strings.HasPrefix(path, filepath.Join(runner.Layout(b.dir).Artifacts(), phase)+string(filepath.Separator))
}

// rankLess orders "rank 2" before "rank 10".
func rankLess(a, b string) bool {
	var x, y int
	_, e1 := fmt.Sscanf(a, "rank %d", &x)
	_, e2 := fmt.Sscanf(b, "rank %d", &y)
	if e1 == nil && e2 == nil {
		return x < y
	}
	return a < b
}

// Traces summarises trace files given by hand (`greenlight trace`), and
// renders them as the results file would. progress, when set, hears how
// far each file has been read.
func Traces(paths []string, top int, csvPath string, progress func(path string, read, of int64)) (string, error) {
	rules := trace.DefaultRules()
	var sums []*trace.Summary
	var notes []string
	// One reader per core, each trace in bounded memory: 8 ranks take
	// about as long as one on a machine with 8 cores.
	got := make([]*trace.Summary, len(paths))
	errs := make([]error, len(paths))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(len(paths), runtime.NumCPU()) {
		wg.Go(func() {
			for i := range next {
				p := paths[i]
				o := trace.Options{Rules: rules, Top: top}
				if csvPath != "" {
					o.Top = math.MaxInt32 // the CSV has every kernel, whatever --top says
				}
				if progress != nil {
					o.Progress = func(read, of int64) { progress(p, read, of) }
				}
				got[i], errs[i] = trace.Any(context.Background(), p, o)
			}
		})
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, p := range paths {
		if errs[i] != nil {
			notes = append(notes, fmt.Sprintf("`%s`: %v", p, errs[i]))
			continue
		}
		sums = append(sums, got[i])
	}
	sort.SliceStable(sums, func(i, j int) bool { return rankLess(sums[i].Rank, sums[j].Rank) })
	if len(sums) > 0 && csvPath != "" {
		if err := writeKernelsCSV(csvPath, sums); err != nil {
			return "", err
		}
		for _, s := range sums {
			s.Trim(top) // the summary lists the top ones
		}
	}
	wd, _ := os.Getwd()
	out := tracesSection(sums, notes, rules, profilerTables(wd, sums, wd), csvPath)
	if len(sums) == 0 {
		return out, errors.New("no trace could be read")
	}
	// A script must tell a trace read in part from a whole one: the
	// summary above says which; the error makes the exit status say so.
	var partial []string
	for _, n := range notes {
		partial = append(partial, n)
	}
	for _, s := range sums {
		if s.Err != "" {
			partial = append(partial, fmt.Sprintf("`%s`: %s", s.File, s.Err))
		}
	}
	if len(partial) > 0 {
		return out, fmt.Errorf("%d of %d trace(s) not read whole: %s", len(partial), len(paths), strings.Join(partial, "; "))
	}
	return out, nil
}
