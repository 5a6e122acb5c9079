package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/greenlight-run/greenlight/conditions"
	"github.com/greenlight-run/greenlight/internal/decodefloor"
	"github.com/greenlight-run/greenlight/internal/files"
	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/report/mdfile"
	"github.com/greenlight-run/greenlight/runner/campaign"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/measure"
	"github.com/greenlight-run/greenlight/results"
	"github.com/greenlight-run/greenlight/runner"
)

// GPUHistory summarises GPU readings over a window; *gpu.Sampler is one.
type GPUHistory = measure.GPUHistory

// liveFleet is a GPUHistory whose fleet grows as remote hosts answer
// (*gpu.Sampler): the header then lists the fleet as it is now.
type liveFleet interface {
	Inventory() gpu.Inventory
	Hosts() []gpu.HostState
}

// Writer keeps one results file, and the CSV tables beside it, current.
type Writer struct {
	path     string
	plan     *campaign.Plan
	env      Env
	gpus     GPUHistory // may be nil
	stateDir string     // keeps GPU summaries and the environment for `greenlight report`

	mu        sync.Mutex
	st        *runner.State
	summary   *keptMap[[]gpu.Summary] // finished phases' GPU summaries
	tables    tables
	csvs      map[string]*phaseCSV
	charts    map[string]charted // a sweep phase's charts, by phase
	across    []across           // the phases run per point of a swept service (across.go)
	gathered  []gathered         // each gathered from the last write's state
	gpuCharts map[string]string  // a phase's GPU chart: the attempt and end it was drawn for
	file      *mdfile.File       // the results file, editor-safe
	envKept   string             // the environment kept in the state dir, as compared (keepEnv)
	traces    *traceBook
	kcsv      map[string]string // phase -> the trace summaries its kernels CSV holds
	record    recordBook
	baseline  *baseline
	servers   map[string]ServerView         // scraped services, by phase id           // baseline: in the campaign file; nil without
	conds     *conditions.Book              // what the campaign ran under; nil until gathered
	older     map[string]*runner.StepFacts  // steps' facts an older state dir kept in files of their own (stamp.go)
	configs   map[string]decodefloor.Config // model folders' config.json, read once (floor.go)
	arLogs    map[string]*arLog             // services' logs read for vLLM's all-reduce choice (vllmallreduce.go)
	floors    struct {                      // this write's decode floors and budgets, by phase (floor.go)
		st *runner.State
		of map[string]*record.Floor
	}
	models struct { // the last state's results model (record.go)
		st *runner.State
		m  *results.Model
	}

	// OnHold, when set, is told each time an editor starts or stops
	// holding the results file: the Held's words, or "" once it let go.
	// Set it before Run.
	OnHold func(msg string)

	// OnWrite, when set, is called after each write that put st on disk
	// (CSV tables and results file fsynced), for measuring latency.
	OnWrite func(st *runner.State, at time.Time)
}

// NewWriter writes plan's results to path. stateDir keeps the GPU
// summaries of finished phases and the environment, so that `greenlight
// report` can rebuild the file.
func NewWriter(path string, plan *campaign.Plan, env Env, gpus GPUHistory, stateDir string) *Writer {
	w := &Writer{path: path, plan: plan, env: env, gpus: gpus, stateDir: stateDir,
		summary: openKept[[]gpu.Summary](stateDir, summariesFile), older: olderFacts(stateDir), tables: tables{}, csvs: map[string]*phaseCSV{}, kcsv: map[string]string{}, charts: map[string]charted{}, gpuCharts: map[string]string{}}
	w.across = acrossGroups(plan)
	w.traces = newTraceBook(plan, stateDir)
	w.file = mdfile.Open(path, stateDir, plan.Name)
	return w
}

const (
	summariesFile = "gpu-summaries.json"
	envFile       = "environment.json"
)

// SetConditions gives the writer what the campaign ran under (gathered
// off the runner's way, at its start and each phase's); the next write
// records it.
func (w *Writer) SetConditions(b conditions.Book) {
	w.mu.Lock()
	w.conds = &b
	kick := w.traces.kick
	w.mu.Unlock()
	if kick != nil {
		kick()
	}
}

// Path is the results file.
func (w *Writer) Path() string { return w.path }

// Run writes the file as events arrive, until the channel closes. Writes
// are coalesced: one is in flight at a time, and whatever arrives during
// it goes into the next, so a burst of 20,000 results costs a few dozen
// writes, not 20,000. Progress alone rewrites at most every 5 s (the
// header's elapsed time and ETA). Errors go to onErr; the next write tries
// again.
func (w *Writer) Run(events <-chan runner.Event, onErr func(error)) {
	var (
		mu     sync.Mutex
		latest *runner.State
		due    bool
		closed bool
	)
	wake := make(chan struct{}, 1)
	// A trace summarised in the background asks for a write too, and so
	// does a late write into a file we displaced.
	kick := func() {
		mu.Lock()
		due = true
		mu.Unlock()
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	w.mu.Lock()
	w.traces.kick = kick
	w.mu.Unlock()
	w.file.OnChange(kick)
	go func() {
		var lastWrite time.Time
		for e := range events {
			mu.Lock()
			latest = e.State
			if e.Kind != runner.Progress || time.Since(lastWrite) >= 5*time.Second {
				due = true
				lastWrite = time.Now()
			}
			mu.Unlock()
			select {
			case wake <- struct{}{}:
			default:
			}
		}
		mu.Lock()
		closed = true
		mu.Unlock()
		select {
		case wake <- struct{}{}:
		default:
		}
	}()
	// The same error twice in a row is said once; a file that could not
	// be written is said once more when it is written whole again.
	var last string
	var away bool
	var lastErr error // the last write's word: Held at the end waits for the editor
	var heldSaid string
	report := func(err error) {
		lastErr = err
		if w.OnHold != nil {
			said := ""
			var h *mdfile.Held
			if errors.As(err, &h) {
				said = h.Error()
			}
			if said != heldSaid {
				heldSaid = said
				w.OnHold(said)
			}
		}
		if onErr == nil {
			return
		}
		if err == nil {
			if away {
				onErr(&mdfile.Restored{Path: w.path})
			}
			last, away = "", false
			return
		}
		key := err.Error()
		var u *mdfile.Unwritable
		if errors.As(err, &u) {
			key = u.Error() // said once, whatever came with it
		}
		if key == last {
			return
		}
		last = key
		away = away || u != nil
		onErr(err)
	}
	for range wake {
		mu.Lock()
		st, write, end := latest, due, closed
		due = false
		mu.Unlock()
		if write && st != nil {
			report(w.Write(st))
		}
		if end {
			break
		}
	}
	mu.Lock()
	st, write := latest, due
	mu.Unlock()
	if write && st != nil {
		report(w.Write(st))
	}
	// The campaign has ended: its traces are summarised before the last
	// write, so the file is whole when the runner exits.
	if st != nil && w.traces.wait() {
		report(w.Write(st))
	}
	if err := w.Flush(); err != nil {
		report(err)
	}
	// An editor holding the file: the runner waits for it to let go (said),
	// up to endHoldWait, so the file gets its last blocks.
	var held *mdfile.Held
	if st == nil || !errors.As(lastErr, &held) {
		return
	}
	deadline := time.Now().Add(endHoldWait)
	for err := w.Write(st); ; err = w.Write(st) {
		if !errors.As(err, &held) {
			report(err)
			return
		}
		if time.Now().After(deadline) {
			report(fmt.Errorf("%w; the campaign has ended and its runner waited %s: `greenlight report %s` writes it after you leave it", err, endHoldWait, w.plan.File))
			return
		}
		report(err)
		select {
		case <-wake:
		case <-time.After(time.Second):
		}
	}
}

// endHoldWait is how long a runner whose campaign has ended waits for an
// editor that holds the results file.
const endHoldWait = time.Hour

// Write renders st into the file, merging with what is there, after
// bringing the phases' CSV tables up to date (so a link never dangles).
func (w *Writer) Write(st *runner.State) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	// A write works each floor out once, from what it holds now: the same
	// state written again (a trace summary read since) works it out anew.
	w.floors.st = nil
	w.keepSummaries(st)
	w.keepEnv()
	w.st = st
	w.traces.consider(st, time.Now())
	if w.traces.kick == nil {
		w.traces.drain() // greenlight report: no background to read them in
	}
	terr := w.file.Check()
	var u *mdfile.Unwritable
	if errors.As(terr, &u) {
		if _, err := os.Stat(filepath.Dir(w.path)); err != nil {
			return terr // the CSV tables' folder is gone too: one line, not three
		}
	}
	var errs []error
	for i := range st.Phases {
		p := &st.Phases[i]
		for _, f := range phaseFiles {
			if err := f.write(w, w.plan.Phase(p.ID), p, st); err != nil {
				errs = append(errs, fmt.Errorf("%s of %s: %w", f.what, p.ID, err))
			}
		}
	}
	if err := w.updateAcross(st); err != nil {
		errs = append(errs, err)
	}
	if err := w.writeRecord(st); err != nil && terr == nil {
		errs = append(errs, fmt.Errorf("record %s: %w", filepath.Base(record.Name(w.path)), err))
	}
	if terr != nil {
		errs = append(errs, terr)
	} else if err := w.file.Save(w.blocks); err != nil {
		if errors.As(err, &u) {
			if _, serr := os.Stat(filepath.Dir(w.path)); serr != nil {
				return err // went as this write ran: the tables' errors are this one
			}
		}
		errs = append(errs, err)
	} else if w.OnWrite != nil {
		w.OnWrite(st, time.Now())
	}
	return errors.Join(errs...)
}

func (w *Writer) updateCSV(_ *campaign.Phase, p *runner.PhaseState, _ *runner.State) error {
	rows := 0
	for _, s := range p.Steps {
		rows += len(s.Results)
	}
	c := w.csvs[p.ID]
	if rows == 0 && c == nil {
		// A phase with no rows now (made pending again, skipped before its
		// attempt began) has no table: a CSV an earlier runner wrote for it
		// holds rows no record has, and is derived (its steps' folders keep
		// what they said), so it goes.
		os.Remove(filepath.Join(filepath.Dir(w.path), csvName(w.path, p.ID)))
		return nil
	}
	if c == nil {
		c = &phaseCSV{path: filepath.Join(filepath.Dir(w.path), csvName(w.path, p.ID))}
		w.csvs[p.ID] = c
	}
	c.stampOf = func(i int) string { return strings.Join(w.stepStamp(p, i), "; ") }
	return c.update(p)
}

// Flush merges what was written late into a file we replaced; call it last.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.file.Flush()
}

// currentEnv is the environment as it is now: a live fleet grows as
// remote hosts answer.
func (w *Writer) currentEnv() Env {
	env := w.env
	env.Conditions = w.conds
	if live, ok := w.gpus.(liveFleet); ok {
		env.Inventory, env.Hosts = live.Inventory(), live.Hosts()
	}
	return env
}

// blocks are the results file's blocks for the state last written.
func (w *Writer) blocks() mdfile.Blocks {
	w.floors.st = nil // rendered again off a Write (an editor let go): as of now
	bodies, order := w.render(w.st)
	return mdfile.Blocks{Bodies: bodies, Order: order}
}

func (w *Writer) render(st *runner.State) (map[string]string, []string) {
	env := w.currentEnv()
	model := w.model(st)
	bodies := map[string]string{"header": header(w.plan, st, model, env, w.file.Remade(), w.undrawn(st), w.baseline.result(), func(p runner.PhaseState) string { return w.keyExtras(p, st) })}
	order := []string{"header"}
	if len(st.Notes) > 0 {
		bodies["notes"] = notesBlock(st.Notes)
		order = append(order, "notes")
	}
	if w.baseline != nil {
		if b := w.baseline.block(); b != "" {
			bodies["baseline"] = b
			order = append(order, "baseline")
		}
	}
	for _, p := range st.Phases {
		ph := w.plan.Phase(p.ID)
		if ph == nil {
			continue
		}
		csv := ""
		if w.csvs[p.ID] != nil {
			csv = csvName(w.path, p.ID)
		}
		results := func(i int, s runner.StepState) string {
			return w.tables.render(tableKey{p.ID, p.Attempt, i, s.Attempt}, s.Results, csv)
		}
		id := "phase:" + p.ID
		bodies[id] = phaseBlock(phaseView{ph: ph, p: p, now: st.Now, gpus: w.gpuSummary(ph, p, st.Now), results: results, csv: csv,
			charts: w.charts[p.ID].names, gpuChart: w.gpuChartLink(ph, p), facts: func(i int) *runner.StepFacts { return w.factsOf(p, p.Steps[i]) }, nodes: readsNodes(w.plan), res: model.Phase(p.ID)}) + w.sectionsOf(ph, p, st)
		order = append(order, id)
	}
	return bodies, w.acrossBlocks(bodies, order)
}

// keepEnv records, once, the environment the campaign ran in, for
// `greenlight report`.
func (w *Writer) keepEnv() {
	if w.stateDir == "" || w.gpus == nil {
		return
	}
	env := w.currentEnv()
	// Kept again whenever the fleet changes (a remote exporter answers
	// after the first write, a host stops answering), not at each
	// scrape's new time.
	key := env
	key.Hosts = slices.Clone(env.Hosts)
	for i := range key.Hosts {
		key.Hosts[i].LastSeen, key.Hosts[i].Scraping = time.Time{}, 0
	}
	k, err := json.Marshal(key)
	if err != nil || string(k) == w.envKept {
		return
	}
	if b, err := json.Marshal(env); err == nil && files.WriteAtomic(filepath.Join(w.stateDir, envFile), b) == nil {
		w.envKept = string(k)
	}
}

// LoadEnv reads the environment a campaign recorded in its state dir.
func LoadEnv(stateDir string) (Env, error) {
	b, err := os.ReadFile(filepath.Join(stateDir, envFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Env{}, fmt.Errorf("%s: not recorded (the campaign ran under an older greenlight)", envFile)
		}
		return Env{}, err
	}
	var env Env
	if err := json.Unmarshal(b, &env); err != nil {
		return Env{}, fmt.Errorf("%s: %w", envFile, err)
	}
	return env, nil
}

// traceSection is the phase's traces summarised, its kernels CSV written
// beside the results file when the summaries changed.
func (w *Writer) traceSection(_ *campaign.Phase, p runner.PhaseState, st *runner.State) string {
	sums, notes := w.traces.phase(p)
	if ph := w.plan.Phase(p.ID); ph != nil && ph.Capture != nil && p.Status.Finished() && p.Status != runner.Skipped {
		// A trace still being read, or unreadable, appeared: not missing.
		if n := missingRanks(ph.Capture, sums); n != "" && len(sums)+len(notes) < ph.Capture.Ranks {
			notes = append([]string{n}, notes...)
		}
	}
	kcsv := kernelsCSV(w.path, p.ID)
	if len(sums) > 0 {
		var keys []string
		for _, s := range sums {
			keys = append(keys, fmt.Sprintf("%s|%d|%d", s.File, s.Bytes, s.Kernels))
		}
		if k := strings.Join(keys, ","); w.kcsv[p.ID] != k {
			if err := writeKernelsCSV(filepath.Join(filepath.Dir(w.path), kcsv), sums); err == nil {
				w.kcsv[p.ID] = k
			}
		}
	}
	return tracesSection(sums, notes, w.traces.rules, profilerTables(filepath.Dir(w.path), sums, w.plan.Dir), kcsv) + w.allReduceSection(p, sums, st)
}
