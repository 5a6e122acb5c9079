package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/greenlight-run/greenlight/internal/files"
	"github.com/greenlight-run/greenlight/runner/modelload"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

// A service that names its model (model:) has each load measured: how
// much of the model's folder the page cache held at the start (counted in
// the background, bounded), the stages the server's own timing lines
// give, the `stages:` marks' times, any prewarm the supervisor did, and
// the time to ready. Each load is one line of STATE/loads.jsonl, which
// the record's Load table reads; nothing of it lives only in memory.

// Load is one start of a service, as loads.jsonl keeps it.
type Load struct {
	T       time.Time             `json:"t"` // when it was ready
	Phase   string                `json:"phase"`
	Service string                `json:"service,omitempty"` // the service as written, for a swept one's point copies
	Point   string                `json:"point,omitempty"`   // a swept service's point (max_num_seqs=64)
	Attempt int                   `json:"attempt"`
	ReadyS  float64               `json:"ready_s"`         // from the service's start to ready (a prewarm in its own job included)
	Cache   *modelload.Residency  `json:"cache,omitempty"` // at the service's start, after any prewarm before it
	Prewarm *modelload.Prewarmed  `json:"prewarm,omitempty"`
	Server  []modelload.StageTime `json:"server,omitempty"` // the server's own timing lines
	Marks   []modelload.StageTime `json:"marks,omitempty"`  // the stages: marks, by their lines' times
}

// Warmth says what the load's start found: "cold", "warm", "partly
// warm", or "warm (prewarmed)"; a prewarm whose pages were taken back
// before the start (memory pressure) is said with the share the start
// found, not as warm; "" when not measured.
func (l Load) Warmth() string {
	p := l.Prewarm
	prewarmed := p != nil && !p.Skipped && p.Read > 0
	switch {
	case prewarmed && (l.Cache == nil || l.Cache.Word() == "warm"):
		return "warm (prewarmed)"
	case prewarmed:
		return fmt.Sprintf("%s: prewarmed, but %.0f %% of the folder was back out of the page cache at the start (memory pressure)",
			l.Cache.Word(), 100*(1-l.Cache.Share()))
	case l.Cache == nil:
		return ""
	}
	return l.Cache.Word()
}

// startWord is the page cache's word at the service's start: counted,
// or warm after a prewarm that read the folder in.
func (l Load) startWord() string {
	if l.Cache != nil {
		return l.Cache.Word()
	}
	if p := l.Prewarm; p != nil && !p.Skipped && p.Read > 0 {
		return "warm"
	}
	return ""
}

// ReadLoads reads a state dir's loads, oldest first; a torn last line
// (a crash mid-write) is left out.
func ReadLoads(stateDir string) ([]Load, error) {
	b, err := os.ReadFile(Layout(stateDir).Loads())
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Load
	for line := range bytes.Lines(b) {
		var l Load
		if json.Unmarshal(line, &l) == nil {
			out = append(out, l)
		}
	}
	return out, nil
}

// loadWatch is what a starting service's load has told so far.
type loadWatch struct {
	cache  chan modelload.Residency // the start's page-cache count, once done
	at     *modelload.Residency
	said   bool // the count was said, in a line of its own
	server []modelload.StageTime
}

// sayCache says, once, how warm the model's folder was at the start:
// "serve: the model at the start: cold: 3% of 595.0 GB in the page cache".
func (sr *stepRun) sayCache() {
	w := sr.load
	if w == nil || w.said {
		return
	}
	if at := w.residency(); at != nil {
		w.said = true
		msg := fmt.Sprintf("%s: the model at the start: %s", sr.pr.ph.Label(), at)
		sr.r.emit(Event{Kind: Progress, Phase: sr.pr.ph.ID, Step: 0, Message: msg})
	}
}

// cacheCountLimit bounds the page-cache count: a folder of a million
// files on a slow filesystem gives up, said as counted in part.
const cacheCountLimit = time.Minute

// cacheFile, in a service's step folder, keeps the start's page-cache
// count, so that a runner that takes over a load midway still has it.
const cacheFile = "cache.json"

// watchLoad starts measuring a service's load, if it names its model.
func (sr *stepRun) watchLoad() {
	svc := sr.pr.ph.Service
	if svc == nil || svc.Model == "" || sr.adopted {
		return
	}
	w := &loadWatch{cache: make(chan modelload.Residency, 1)}
	sr.load = w
	dir := sr.dir
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), cacheCountLimit)
		defer cancel()
		r, err := modelload.Measure(ctx, svc.Model)
		if err == nil {
			if b, err := json.Marshal(r); err == nil {
				files.WriteAtomic(filepath.Join(dir, cacheFile), b)
			}
			w.cache <- r
		}
		close(w.cache)
	}()
}

// watchAdoptedLoad goes on measuring a load the last runner began and
// did not see ready (killed midway): the start's count as it kept it (a
// count made now would see what the load has read since), the server's
// timing lines read again from the log's start, the ready time from the
// step's journaled start.
func (sr *stepRun) watchAdoptedLoad() {
	if svc := sr.pr.ph.Service; svc == nil || svc.Model == "" {
		return
	}
	w := &loadWatch{cache: make(chan modelload.Residency, 1)}
	var r modelload.Residency
	if b, err := os.ReadFile(filepath.Join(sr.dir, cacheFile)); err == nil && json.Unmarshal(b, &r) == nil {
		w.cache <- r
	}
	close(w.cache)
	sr.load = w
}

// loadLine reads a starting service's log line for its load: a stage
// timed by the server, or the supervisor's prewarm progress.
func (sr *stepRun) loadLine(line []byte, now time.Time) {
	w := sr.load
	if w == nil {
		return
	}
	if st, ok := modelload.VLLMStage(line); ok {
		w.server = append(w.server, st)
		return
	}
	rest, ok := bytes.CutPrefix(line, []byte(supervise.PrewarmLine))
	if !ok {
		return
	}
	ss := &sr.pr.state.Steps[0]
	// "12.3/40.0 GB read, 2.10 GB/s": the prewarm's bar, in GB.
	if i := bytes.Index(rest, []byte(" GB read")); i > 0 {
		if a, b, ok := bytes.Cut(rest[:i], []byte("/")); ok {
			d, e1 := strconv.ParseFloat(string(a), 64)
			t, e2 := strconv.ParseFloat(string(b), 64)
			if e1 == nil && e2 == nil && t > 0 {
				ss.Stage, sr.prog.unit = "prewarm", "GB"
				sr.prog.observe(now, d, t)
			}
		}
		return
	}
	if bytes.HasPrefix(rest, []byte("reading ")) {
		ss.Stage = "prewarm"
		return
	}
	// Done, skipped or refused: the server starts now, and its load's bar
	// is not the prewarm's.
	if ss.Stage == "prewarm" {
		ss.Stage = ""
	}
	sr.prog = progressTrack{}
}

// residency is the start's page-cache count, nil while it is counted.
func (w *loadWatch) residency() *modelload.Residency {
	if w.at == nil {
		select {
		case r, ok := <-w.cache:
			if ok {
				w.at = &r
			}
		default:
		}
	}
	return w.at
}

// loadKey is the history key a load's ETA learns from: its step's, apart
// for cold and warm loads once the start's warmth is known and one like
// it was measured.
func (sr *stepRun) loadKey() string {
	key := sr.step.Key
	if sr.load == nil {
		return key
	}
	at := sr.load.residency()
	if at == nil {
		return key
	}
	if k := warmthKey(key, at.Word()); sr.r.store.hist.typical(k) > 0 {
		return k
	}
	return key
}

func warmthKey(key, word string) string { return key + "#cache:" + word }

// recordLoad writes the load that just became ready, and teaches the ETA
// its time under its warmth.
func (sr *stepRun) recordLoad(now time.Time) {
	w := sr.load
	if w == nil {
		return
	}
	pr := sr.pr
	// A runner killed between keeping the load and journaling it ready
	// left the row: the load this runner took over is that one, and its
	// ready time the row's, not the moment this runner looked.
	if sr.adopted && sr.r.loadKept(pr.ph.ID, pr.state.Attempt, sr.started) {
		return
	}
	l := Load{T: now, Phase: pr.ph.ID, Attempt: pr.state.Attempt, ReadyS: now.Sub(sr.started).Seconds(), Server: w.server}
	if pt := pr.ph.Point; pt != nil {
		l.Point, l.Service = pt.Key, pt.Service
	}
	l.Cache = w.residency()
	// The prewarm's account: in the step's folder (one that prewarms in
	// its own job), else in the attempt's prewarm folder, whether this
	// runner started the prewarm or took the attempt over after it.
	for _, dir := range []string{sr.dir, sr.r.prewarmDir(pr.ph.ID, pr.state.Attempt)} {
		if b, err := os.ReadFile(filepath.Join(dir, supervise.PrewarmFile)); err == nil {
			var p modelload.Prewarmed
			if json.Unmarshal(b, &p) == nil {
				l.Prewarm = &p
				break
			}
		}
	}
	l.Marks = sr.markTimes(now)
	// Learnt under the start's count, the key loadKey looks up: a load
	// after a prewarm is a warm one.
	if word := l.startWord(); word != "" {
		sr.r.store.hist.add(warmthKey(sr.step.Key, word), now.Sub(sr.started))
	}
	if l.Cache != nil || l.Prewarm != nil {
		sr.r.keepLoad(l)
		return
	}
	// A server ready before its folder was counted: the line waits for the
	// count (bounded), off the loop.
	go func() {
		if r, ok := <-w.cache; ok {
			l.Cache = &r
		}
		sr.r.keepLoad(l)
	}()
}

// loadKept says whether loads.jsonl holds a load of the phase's attempt
// that became ready after since (the start of the service's process).
func (r *Runner) loadKept(phase string, attempt int, since time.Time) bool {
	loads, _ := ReadLoads(string(r.dirs))
	for _, l := range loads {
		if l.Phase == phase && l.Attempt == attempt && !l.T.Before(since) {
			return true
		}
	}
	return false
}

// keepLoad appends one load to loads.jsonl, fsynced: loads are few, and
// each cost minutes.
func (r *Runner) keepLoad(l Load) {
	b, err := json.Marshal(l)
	if err != nil {
		return
	}
	f, err := os.OpenFile(r.dirs.Loads(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "greenlight: cannot keep the service's load times: %v\n", err)
		return
	}
	f.Write(append(b, '\n'))
	f.Sync()
	f.Close()
}

// markTimes are the stages: marks reached and how long each lasted.
func (sr *stepRun) markTimes(ready time.Time) []modelload.StageTime {
	svc := sr.pr.ph.Service
	var out []modelload.StageTime
	for i, at := range sr.stageStarts {
		if at.IsZero() {
			continue
		}
		end := ready
		for _, next := range sr.stageStarts[i+1:] {
			if !next.IsZero() {
				end = next
				break
			}
		}
		out = append(out, modelload.StageTime{Name: svc.Stages[i].Name, Seconds: end.Sub(at).Seconds()})
	}
	return out
}
