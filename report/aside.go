package report

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/runner/campaign"

	"github.com/greenlight-run/greenlight/runner"
)

// Aside is what --fresh set aside: one folder beside the results file,
// NAME.YYYYmmdd-HHMMSS/, holding the state dir (state/), the results file,
// every CSV table and each phase's artifacts (artifacts/, by their path
// under the campaign's folder). Nothing is deleted.
type Aside struct {
	Dir       string
	State     bool // the state dir was there and moved
	Files     []string
	Artifacts []string
	Stopped   []string // what the old run left running, stopped first ("pid 1480 python3")
}

// SetAside moves everything a campaign produced into one dated folder
// beside its results file, so that a fresh run starts clean and never
// takes the old run's traces or tables for its own. The links of the
// results file set aside are rewritten to point into that folder. It
// refuses (runner.ErrLocked) while a greenlight runs the campaign.
func SetAside(plan *campaign.Plan, stateDir string, now time.Time) (*Aside, error) {
	dir := filepath.Dir(plan.Report)
	base := strings.TrimSuffix(filepath.Base(plan.Report), filepath.Ext(plan.Report))
	a := &Aside{Dir: runner.AsideName(filepath.Join(dir, base), "", now)}
	if err := os.MkdirAll(a.Dir, 0o755); err != nil {
		return nil, err
	}
	moved, stopped, err := runner.SetAsideTo(stateDir, filepath.Join(a.Dir, "state"))
	a.Stopped = stopped
	if err != nil {
		os.Remove(a.Dir)
		return nil, err
	}
	a.State = moved
	// The record's own files: the results file, NAME.json, and every CSV
	// and chart named after it (a phase's, a copy's, the across-settings
	// ones named by the phase as written), and whatever else beside it the
	// old record links or embeds: the old record must keep showing the old
	// run's, and the folder must hold no file that no record embeds.
	files := []string{plan.Report, record.Name(plan.Report)}
	for _, pat := range []string{base + ".*.csv", base + ".*.svg"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		files = append(files, m...)
	}
	linked := linksOf(plan.Report)
	for _, l := range linked {
		if p := filepath.Join(dir, filepath.FromSlash(l)); filepath.Dir(p) == dir && !slices.Contains(files, p) {
			files = append(files, p)
		}
	}
	var errs []error
	for _, f := range files {
		if fi, err := os.Lstat(f); err != nil || fi.IsDir() {
			continue
		}
		if err := os.Rename(f, filepath.Join(a.Dir, filepath.Base(f))); err != nil {
			errs = append(errs, err)
			continue
		}
		a.Files = append(a.Files, filepath.Base(f))
	}
	// Each phase's artifacts, by its globs: a fresh run's trace summary
	// must never find the old run's traces; and the files the old record
	// links in folders under the results file's (a trace's profiler log).
	links := map[string]string{} // old path (relative to the report, or absolute) -> new
	move := func(m string) {
		if _, err := os.Lstat(m); err != nil {
			return
		}
		rel, err := filepath.Rel(plan.Dir, m)
		if err != nil || strings.HasPrefix(rel, "..") {
			rel = strings.TrimPrefix(m, string(filepath.Separator))
		}
		to := filepath.Join(a.Dir, "artifacts", rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			errs = append(errs, err)
			return
		}
		if err := os.Rename(m, to); err != nil {
			errs = append(errs, err)
			return
		}
		a.Artifacts = append(a.Artifacts, rel)
		if old, err := filepath.Rel(dir, m); err == nil {
			links[filepath.ToSlash(old)] = filepath.ToSlash(filepath.Join("artifacts", rel))
		}
		links[filepath.ToSlash(m)] = filepath.ToSlash(to) // the record names artifacts by their absolute path too
	}
	for _, ph := range plan.Phases {
		for _, g := range ph.Artifacts {
			matches, _ := filepath.Glob(g)
			for _, m := range matches {
				move(m)
			}
		}
	}
	for _, l := range linked {
		p := filepath.Join(dir, filepath.FromSlash(l))
		if filepath.Dir(p) == dir || strings.HasPrefix(p, stateDir+string(filepath.Separator)) || !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			continue // moved above, with the state dir, or not under the results file's folder
		}
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			move(p)
		}
	}
	// The state dir's own artifacts (a capture's traces) moved with it.
	if a.State {
		if old, err := filepath.Rel(dir, stateDir); err == nil {
			links[filepath.ToSlash(old)+"/"] = "state/"
		}
		links[filepath.ToSlash(stateDir)+"/"] = filepath.ToSlash(filepath.Join(a.Dir, "state")) + "/"
	}
	if err := relink(filepath.Join(a.Dir, filepath.Base(plan.Report)), links); err != nil {
		errs = append(errs, err)
	}
	return a, errors.Join(errs...)
}

// linkTarget finds a markdown link's or an embed's target.
var linkTarget = regexp.MustCompile(`\]\(<?([^)\s>]+)>?\)|src="([^"]+)"`)

// linksOf are the local targets the results file links or embeds,
// relative to its folder, as written (no URL, no anchor).
func linksOf(report string) []string {
	b, err := os.ReadFile(report)
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range linkTarget.FindAllStringSubmatch(string(b), -1) {
		t := m[1] + m[2]
		if i := strings.IndexByte(t, '#'); i >= 0 {
			t = t[:i]
		}
		if t == "" || strings.Contains(t, "://") || filepath.IsAbs(t) || strings.HasPrefix(t, "mailto:") {
			continue
		}
		if u, err := url.PathUnescape(t); err == nil {
			t = u
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// relink rewrites, in the set-aside results file, the links to artifacts
// that moved with it (a markdown link's target, or a path in backquotes).
func relink(path string, links map[string]string) error {
	if len(links) == 0 {
		return nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	s := string(b)
	for old, now := range links {
		if strings.HasSuffix(old, "/") { // a folder that moved: every link into it
			s = strings.ReplaceAll(s, "]("+old, "]("+now)
			s = strings.ReplaceAll(s, "`"+old, "`"+now)
			continue
		}
		s = strings.ReplaceAll(s, "]("+old+")", "]("+now+")")
		s = strings.ReplaceAll(s, `src="`+old+`"`, `src="`+now+`"`)
		s = strings.ReplaceAll(s, "`"+old+"`", "`"+now+"`")
	}
	if s == string(b) {
		return nil
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

// String says what was set aside, in one line.
func (a *Aside) String() string {
	var parts []string
	if a.State {
		parts = append(parts, "the state dir")
	}
	if len(a.Files) > 0 {
		parts = append(parts, fmt.Sprintf("%d file(s) (%s)", len(a.Files), strings.Join(a.Files, ", ")))
	}
	if len(a.Artifacts) > 0 {
		parts = append(parts, fmt.Sprintf("%d artifact(s)", len(a.Artifacts)))
	}
	if len(parts) == 0 {
		return "nothing to set aside"
	}
	return strings.Join(parts, ", ")
}
