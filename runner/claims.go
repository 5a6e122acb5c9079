package runner

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/internal/files"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// Artifacts belong to the step that made them. A file matched by a
// phase's artifacts: globs is the one step's during whose run it was
// created or last written (from the step's start to its end and its
// wait_quiet), and no other step's, whatever other phases' globs match
// it. The claim (path, size, modification time, the step) is journaled
// when it is made, at the step's end and again when its wait_quiet ends,
// so a runner started again and `greenlight report` pair --save-result
// files, summarise traces and list artifacts exactly as the runner did,
// however many phases share a folder. A file written while steps of two
// phases whose globs both match it ran is claimed by neither, and a file
// written outside every step's run is not guessed at: both are said in the
// phase's block.

// Claim is a file as a step claimed it.
type Claim struct {
	Path string    `json:"path"`
	Size int64     `json:"size"`
	Mod  time.Time `json:"mod"`
	// Copy: a --save-result file's copy in the step's folder, taken when
	// it was claimed, so its row reads back the same after the file is
	// written over by a later run (the name under the step's folder).
	Copy string `json:"copy,omitempty"`
	// Shared: written while this step and one of the named phase's ran,
	// and matched by both phases' artifacts: claimed by neither.
	Shared string `json:"shared,omitempty"`
	// Outside: matched by the phase's artifacts, but written outside every
	// step's run (before the campaign, or between runs): not claimed.
	Outside bool `json:"outside,omitempty"`
}

// claimSlack is how far before a step's start a file's time may be and
// still be its, on a filesystem that keeps times to the second; one that
// keeps finer times is given fineSlack (a clock read a little apart), so
// that a file another campaign wrote just before the step is not its.
const (
	claimSlack = time.Second
	fineSlack  = 50 * time.Millisecond
)

// slackFor is the slack a file's time is given: claimSlack where the time
// is whole seconds (a coarse filesystem's, most likely), else fineSlack.
func slackFor(mod time.Time) time.Duration {
	if mod.Nanosecond() == 0 {
		return claimSlack
	}
	return fineSlack
}

// claimCopyMax is the largest --save-result file copied into its step's
// folder when claimed; a larger one is read where it is.
const claimCopyMax = 64 << 20

// claimRef is a claim and who made it.
type claimRef struct {
	Claim
	phase string
	dir   string // the step's folder: one try of one step
}

// owned says the claim gives the file to a step (not shared, not outside).
func (c claimRef) owned() bool { return c.Shared == "" && !c.Outside }

// same says the file is still as the claim found it.
func (c claimRef) same(size int64, mod time.Time) bool { return c.Size == size && c.Mod.Equal(mod) }

// claimBook is every claim the journal holds: each path's latest, each
// step's own (its --save-result files, even once written over), and the
// paths said not to be a phase's.
type claimBook struct {
	runs    []pastRun // the steps' runs the journal holds, for a claim made before their phases are restored
	latest  map[string]claimRef
	byStep  map[string][]Claim          // step folder -> its claims, in order
	byPhase map[string]map[string]bool  // phase -> paths it claimed at some time
	said    map[string]map[string]Claim // phase -> path -> shared or outside
}

func newClaimBook() *claimBook {
	return &claimBook{latest: map[string]claimRef{}, byStep: map[string][]Claim{}, byPhase: map[string]map[string]bool{}, said: map[string]map[string]Claim{}}
}

// pastRun is a step's run as the journal has it: what a runner started
// again, and report, know of runs before the phases are restored.
// stepWindow is the live reading of the same run, kept beside it: a step
// in its wait_quiet is open there for as long as its flush lasts, where
// the journal's end is its command's end.
type pastRun struct {
	phase    string
	step     int
	from, to time.Time // to: zero while its end is not journaled
}

// claimsOf reads the journal's claims, and its steps' runs.
func claimsOf(recs []record) *claimBook {
	b := newClaimBook()
	open := map[string]int{} // phase/step/try -> index in runs
	key := func(rec record) string { return fmt.Sprintf("%s/%d/%d", rec.Phase, rec.Step, rec.Attempt) }
	for _, rec := range recs {
		switch rec.Kind {
		case recClaim:
			b.take(rec)
		case recStepStart:
			for k, i := range open { // a try of the same step that never ended
				if b.runs[i].phase == rec.Phase && b.runs[i].step == rec.Step {
					b.runs[i].to = rec.T
					delete(open, k)
				}
			}
			open[key(rec)] = len(b.runs)
			b.runs = append(b.runs, pastRun{phase: rec.Phase, step: rec.Step, from: rec.T})
		case recStepEnd:
			if i, ok := open[key(rec)]; ok {
				b.runs[i].to = rec.T
				delete(open, key(rec))
			}
		case recPhaseStart, recPhaseEnd:
			// A run whose end was never journaled ended with its phase
			// (or before its phase started again), at the latest.
			for k, i := range open {
				if b.runs[i].phase == rec.Phase {
					b.runs[i].to = rec.T
					delete(open, k)
				}
			}
		}
	}
	return b
}

func (b *claimBook) take(rec record) {
	for _, c := range rec.Claims {
		ref := claimRef{c, rec.Phase, rec.Dir}
		if !ref.owned() {
			if b.said[rec.Phase] == nil {
				b.said[rec.Phase] = map[string]Claim{}
			}
			b.said[rec.Phase][c.Path] = c
			if old, ok := b.latest[c.Path]; ok && old.owned() && old.same(c.Size, c.Mod) {
				continue // a claim of the file as it is stands
			}
			b.latest[c.Path] = ref
			continue
		}
		b.latest[c.Path] = ref
		b.byStep[rec.Dir] = append(b.byStep[rec.Dir], c)
		if b.byPhase[rec.Phase] == nil {
			b.byPhase[rec.Phase] = map[string]bool{}
		}
		b.byPhase[rec.Phase][c.Path] = true
		delete(b.said[rec.Phase], c.Path)
	}
}

// decided says the file, as it is, was claimed (or said not to be
// anyone's) by someone other than the step in folder dir.
func (b *claimBook) decided(path string, size int64, mod time.Time, dir string) bool {
	ref, ok := b.latest[path]
	return ok && ref.dir != dir && ref.same(size, mod)
}

// matchesAny says a path is matched by one of the globs.
func matchesAny(globs []string, path string) bool {
	for _, g := range globs {
		if ok, _ := filepath.Match(g, path); ok {
			return true
		}
	}
	return false
}

// stepWindow is a step's run as another step's claim sees it: from its
// start to its end and its wait_quiet (open while it runs). No slack:
// runs that follow one another do not overlap.
func stepWindow(ph *campaign.Phase, ss StepState) (from, to time.Time, open bool) {
	if ss.Status == Running || ss.Ended.IsZero() {
		return ss.Started, time.Time{}, true
	}
	return ss.Started, ss.Ended.Add(quietOf(ph, ph.AllSteps()[ss.Index])), false
}

// runningAt names another phase's step whose run held the moment mod
// and whose phase's artifacts match path: a phase of the kind that claims
// (a service is only given what no step claims). "" when none.
func (r *Runner) runningAt(self *phaseRun, path string, mod time.Time) string {
	live := map[string]*phaseRun{}
	for _, o := range r.phases {
		live[o.ph.ID] = o
	}
	for _, ph := range r.plan.Phases {
		if self != nil && ph == self.ph || ph.Service != nil || !matchesAny(ph.Artifacts, path) {
			continue
		}
		if o := live[ph.ID]; o != nil {
			for _, ss := range o.state.Steps {
				if ss.Started.IsZero() || ss.Status == Pending {
					continue
				}
				from, to, open := stepWindow(ph, ss)
				if !mod.Before(from) && (open || !mod.After(to)) {
					return ph.ID
				}
			}
		}
		// Runs the journal holds: a runner started again claims for a step
		// that ended while none ran before every phase is restored (a
		// phase later in the plan is not among r.phases yet).
		for _, run := range r.claims.runs {
			if run.phase != ph.ID || run.step >= len(ph.AllSteps()) || mod.Before(run.from) {
				continue
			}
			if run.to.IsZero() || !mod.After(run.to.Add(quietOf(ph, ph.AllSteps()[run.step]))) {
				return ph.ID
			}
		}
	}
	return ""
}

// written is what the step made by until: the files its phase's globs
// match, written in its run and not claimed, as they are, by another step;
// shared are those another phase's step was running for too.
func (sr *stepRun) written(until time.Time) (mine []Artifact, shared []Claim) {
	r, pr := sr.r, sr.pr
	svc := pr.ph.Service != nil
	for _, a := range globArtifacts(pr.ph.Artifacts, "") {
		if a.Modified.Before(sr.started.Add(-slackFor(a.Modified))) || a.Modified.After(until) {
			continue
		}
		if r.claims.decided(a.Path, a.Size, a.Modified, sr.dir) {
			continue
		}
		if !svc {
			if other := r.runningAt(pr, a.Path, a.Modified); other != "" {
				shared = append(shared, Claim{Path: a.Path, Size: a.Size, Mod: a.Modified, Shared: other})
				continue
			}
		}
		mine = append(mine, a)
	}
	return mine, shared
}

// claim journals what the step made up to until that it has not claimed
// as it is: at its end, at its wait_quiet's end, and when a runner started
// again finds it ended with no claim journaled (until: its end and
// wait_quiet). A --save-result file is
// copied into the step's folder as it is claimed.
func (sr *stepRun) claim(until time.Time) {
	r, pr := sr.r, sr.pr
	if len(pr.ph.Artifacts) == 0 || sr.dir == "" {
		return
	}
	mine, shared := sr.written(until)
	var cs []Claim
	for _, a := range mine {
		if ref, ok := r.claims.latest[a.Path]; ok && ref.dir == sr.dir && ref.same(a.Size, a.Modified) {
			continue
		}
		c := Claim{Path: a.Path, Size: a.Size, Mod: a.Modified}
		if servingExportFile(sr.step.ResultsFormat, a.Path) && a.Size <= claimCopyMax {
			c.Copy = sr.copySaved(a.Path, len(r.claims.byStep[sr.dir])+len(cs))
		}
		cs = append(cs, c)
	}
	for _, c := range shared {
		if old, ok := r.claims.said[pr.ph.ID][c.Path]; ok && old.Shared != "" && old.Mod.Equal(c.Mod) {
			continue
		}
		cs = append(cs, c)
		r.warn(fmt.Sprintf("%s: %s was written while %s and %s both ran, and both phases' artifacts: match it: it is neither's (give each phase a folder of its own)",
			pr.ph.Label(), r.plan.Rel(c.Path), pr.ph.ID, c.Shared))
	}
	if len(cs) == 0 {
		return
	}
	rec := record{Kind: recClaim, Phase: pr.ph.ID, Step: sr.step.Index, Attempt: sr.try, Dir: sr.dir, Claims: cs}
	r.journal(rec)
	r.claims.take(rec)
	pr.artScanPending = true
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// copySaved copies a --save-result file into the step's folder; "" when
// it could not (the file is then read where it is).
func (sr *stepRun) copySaved(path string, n int) string {
	if sr.r.store.jr == nil {
		return "" // Replay's view writes nothing
	}
	name := fmt.Sprintf("saved-%d-%s", n+1, filepath.Base(path))
	in, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer in.Close()
	data, err := io.ReadAll(io.LimitReader(in, claimCopyMax+1))
	if err != nil || len(data) > claimCopyMax {
		return ""
	}
	if files.WriteAtomic(filepath.Join(sr.dir, name), data) != nil {
		return ""
	}
	return name
}

// sayOutside, at a phase's end, journals the files its artifacts match
// that no step claimed and no step's run holds: written before the
// campaign or between runs, they are said in its block, not guessed at.
func (r *Runner) sayOutside(pr *phaseRun, now time.Time) {
	if len(pr.ph.Artifacts) == 0 || pr.ph.Service != nil {
		return
	}
	var cs []Claim
	for _, a := range globArtifacts(pr.ph.Artifacts, "") {
		if ref, ok := r.claims.latest[a.Path]; ok && ref.same(a.Size, a.Modified) {
			continue // claimed, or said already, as it is
		}
		if r.runningAt(nil, a.Path, a.Modified) != "" {
			continue // a step's, to be claimed at its end
		}
		if len(cs) == maxOutsideSaid {
			break
		}
		cs = append(cs, Claim{Path: a.Path, Size: a.Size, Mod: a.Modified, Outside: true})
	}
	if len(cs) == 0 {
		return
	}
	rec := record{Kind: recClaim, T: now, Phase: pr.ph.ID, Step: -1, Claims: cs}
	r.journal(rec)
	r.claims.take(rec)
}

// maxOutsideSaid bounds the files said not to be a phase's at its end (a
// glob over a folder of old traces).
const maxOutsideSaid = 100

// phaseArtifacts are the phase's files: those its steps claimed (a file
// claimed and since deleted listed as gone), what its running step wrote
// so far, and its own folder in the state dir.
func (r *Runner) phaseArtifacts(pr *phaseRun, now time.Time) []Artifact {
	var out []Artifact
	seen := map[string]bool{}
	for path := range r.claims.byPhase[pr.ph.ID] {
		ref := r.claims.latest[path]
		if ref.phase != pr.ph.ID || !ref.owned() {
			continue // claimed since by another step, or said not to be anyone's
		}
		seen[path] = true
		if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
			out = append(out, Artifact{Path: path, Size: fi.Size(), Modified: fi.ModTime(), Step: filepath.Base(ref.dir)})
		} else {
			out = append(out, Artifact{Path: path, Size: ref.Size, Modified: ref.Mod, Gone: true, Step: filepath.Base(ref.dir)})
		}
	}
	if sr := pr.cur; sr != nil && pr.state.Status == Running && sr.dir != "" {
		mine, _ := sr.written(now)
		for _, a := range mine {
			if !seen[a.Path] {
				seen[a.Path] = true
				a.Step = filepath.Base(sr.dir)
				out = append(out, a)
			}
		}
	}
	for _, a := range globArtifacts(nil, pr.artDir) {
		if !seen[a.Path] {
			a.Step = stepAt(pr, a.Modified)
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b Artifact) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// stepAt names the step of the phase whose run held the moment mod (its
// folder's name, from its log's path), "" when none did.
func stepAt(pr *phaseRun, mod time.Time) string {
	for _, ss := range pr.state.Steps {
		if ss.Started.IsZero() || ss.Log == "" {
			continue
		}
		from, to, open := stepWindow(pr.ph, ss)
		if !mod.Before(from.Add(-slackFor(mod))) && (open || !mod.After(to)) {
			return strings.TrimSuffix(filepath.Base(ss.Log), ".log")
		}
	}
	return ""
}

// unclaimed are the files said not to be the phase's, with why.
func (r *Runner) unclaimed(pr *phaseRun) []Unclaimed {
	var out []Unclaimed
	for path, c := range r.claims.said[pr.ph.ID] {
		if r.claims.latest[path].owned() {
			continue // a step claimed it after
		}
		why := ""
		switch {
		case c.Shared != "":
			why = fmt.Sprintf("written at %s while %s and %s both ran: neither's", c.Mod.Format("15:04:05"), pr.ph.ID, c.Shared)
		case !r.times.started.IsZero() && c.Mod.Before(r.times.started):
			why = fmt.Sprintf("written %s, before this campaign started", c.Mod.Format("2006-01-02 15:04"))
		default:
			why = fmt.Sprintf("written at %s, outside every step's run", c.Mod.Format("15:04:05"))
		}
		out = append(out, Unclaimed{Path: path, Why: why})
	}
	slices.SortFunc(out, func(a, b Unclaimed) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// savedFiles are the --save-result files the step claimed, to be read as
// rows, in the order they were written: each from its copy where one was
// taken, else from where it is while it is still as claimed.
func (sr *stepRun) savedFiles() (paths, names []string, rewritten []string) {
	cs := slices.Clone(sr.r.claims.byStep[sr.dir])
	slices.SortStableFunc(cs, func(a, b Claim) int { return a.Mod.Compare(b.Mod) })
	for _, c := range cs {
		if !servingExportFile(sr.step.ResultsFormat, c.Path) {
			continue
		}
		if c.Copy != "" {
			if _, err := os.Stat(filepath.Join(sr.dir, c.Copy)); err == nil {
				paths, names = append(paths, filepath.Join(sr.dir, c.Copy)), append(names, c.Path)
				continue
			}
		}
		if fi, err := os.Stat(c.Path); err == nil && fi.Size() == c.Size && fi.ModTime().Equal(c.Mod) {
			paths, names = append(paths, c.Path), append(names, c.Path)
		} else {
			rewritten = append(rewritten, c.Path)
		}
	}
	return paths, names, rewritten
}
