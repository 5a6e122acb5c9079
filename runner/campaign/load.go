package campaign

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Load reads and checks a campaign file. It touches nothing on disk but the
// file itself. Every problem is reported as a *FileError or FileErrors.
func Load(path string) (*Plan, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &FileError{File: path, Msg: err.Error()}
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, &FileError{File: path, Msg: fmt.Sprintf("cannot read the campaign file: %v", errors.Unwrap(err)),
			Hint: "give the path of a campaign .yaml file; `greenlight demo` shows one"}
	}
	return Parse(path, abs, data)
}

// Parse checks campaign file contents; name is used in messages and abs
// (the file's absolute path) to resolve relative paths.
func Parse(name, abs string, data []byte) (*Plan, error) {
	return parse(name, abs, data, false)
}

// parse is Parse; a probe (the loader trying an edit of a broken file)
// wants only whether the file loads, not why it does not.
func parse(name, abs string, data []byte, probe bool) (*Plan, error) {
	l := newLoader(name, abs, data, probe)
	plan, err := l.load(data)
	var errs FileErrors
	var fe *FileError
	switch {
	case errors.As(err, &errs):
		for _, e := range errs {
			e.Fix = l.rawFix(e.Fix)
		}
	case errors.As(err, &fe):
		fe.Fix = l.rawFix(fe.Fix)
	}
	return plan, err
}

func newLoader(name, abs string, data []byte, probe bool) *loader {
	raw := strings.Split(string(data), "\n")
	return &loader{name: name, path: abs, raw: raw, lines: viewOf(raw), probe: probe, fieldLines: map[int]bool{}}
}

func (l *loader) load(data []byte) (*Plan, error) {
	name, abs := l.name, l.path
	if errs := l.tabIndents(); len(errs) > 0 {
		return nil, oneOrMany(errs)
	}
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, l.fromYAML(err)
	}
	l.file = file
	if len(file.Docs) > 0 && file.Docs[0].Body != nil {
		if errs := l.unknownKeys(file.Docs[0].Body); len(errs) > 0 {
			if e := l.misplaced(errs[0]); e != nil {
				return nil, e
			}
			// A did-you-mean whose rename leaves a file that does not
			// load is not the slip (heads: dedented into the phase reads
			// as needs:): a move near it that loads is.
			if e := errs[0]; !l.probe && e.Fix != nil && !l.loadsWith(l.rawFix(e.Fix)) {
				if moved := l.repairNear(e.Line, 3); moved != nil {
					return nil, moved
				}
			}
			return nil, oneOrMany(errs)
		}
	}
	if len(file.Docs) == 0 || file.Docs[0].Body == nil {
		return nil, &FileError{File: name, Msg: "the file is empty", Hint: "a campaign needs at least `name:` and `phases:`"}
	}
	var spec CampaignSpec
	if err := decodeStrict(file.Docs[0].Body, &spec); err != nil {
		return nil, l.fromYAML(err)
	}
	if _, ok := file.Docs[0].Body.(*ast.MappingNode); !ok {
		if _, ok := file.Docs[0].Body.(*ast.MappingValueNode); !ok {
			return nil, l.errAt("$", "the campaign file must be a mapping of keys (name, phases, ...)", "")
		}
	}
	sum := sha256.Sum256(data)
	plan := &Plan{File: abs, Dir: filepath.Dir(abs), Hash: hex.EncodeToString(sum[:])}
	l.resolve(&spec, plan)
	if len(l.errs) > 0 {
		if e := l.repairNear(l.errs[0].Line, 8); e != nil {
			return nil, e // a slip of indentation that made another, wrong campaign
		}
		sort.SliceStable(l.errs, func(i, j int) bool {
			a, b := l.errs[i], l.errs[j]
			return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
		})
		if len(l.errs) == 1 {
			return nil, l.errs[0]
		}
		return nil, l.errs
	}
	plan.ix = buildIndex(plan)
	return plan, nil
}

// oneOrMany is a single FileError as itself, several as FileErrors.
func oneOrMany(errs FileErrors) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return errs
}

// decodeStrict decodes with unknown keys refused. go-yaml can panic on
// some malformed input (found by FuzzLoad); that is a bad file, not a crash.
func decodeStrict(body ast.Node, spec *CampaignSpec) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the YAML decoder could not read this file (%v); check indentation, tags (!) and quoting", p)
		}
	}()
	return yaml.NodeToValue(body, spec, yaml.Strict())
}

type loader struct {
	// sweptAxes are the axes of the file's swept services, by name: whose
	// they are (expandServices).
	sweptAxes map[string]sweptAxis
	name      string
	path      string // the file's absolute path
	probe     bool   // trying an edit: no search for a hint
	// fieldLines are the lines whose key is a field of the mapping it is
	// in (not an entry of env: or expect:, which take any key).
	fieldLines map[int]bool
	tries      int         // edits tried in search of a hint (repair.go)
	bytes      int         // the file's length, once counted (repair.go)
	cols       map[int]int // lines starting at each column, once counted (repair.go)
	// raw are the file's lines as written; lines its view (view.go),
	// which the locators read: the same lines, each at its own length,
	// written the one plain way.
	raw   []string
	lines []string
	file  *ast.File
	errs  FileErrors
}

// pos finds where a YAML path is; a missing path falls back to its parent.
func (l *loader) pos(path string) (int, int) {
	for path != "" {
		if p, err := yaml.PathString(path); err == nil {
			if n, err := p.FilterFile(l.file); err == nil && n != nil {
				if tk := n.GetToken(); tk != nil && tk.Position != nil {
					return tk.Position.Line, tk.Position.Column
				}
			}
		}
		i := strings.LastIndexAny(path, ".[")
		if i <= 0 {
			break
		}
		path = path[:i]
	}
	return 0, 0
}

// exists says whether the file holds path (pos falls back to a parent).
func (l *loader) exists(path string) bool {
	p, err := yaml.PathString(path)
	if err != nil || l.file == nil {
		return false
	}
	n, err := p.FilterFile(l.file)
	return err == nil && n != nil
}

func (l *loader) errAt(path, msg, hint string) *FileError {
	line, col := l.pos(path)
	return l.mk(line, col, msg, hint)
}

func (l *loader) mk(line, col int, msg, hint string) *FileError {
	e := &FileError{File: l.name, Line: line, Col: col, Msg: msg, Hint: hint}
	if line > 0 && line <= len(l.raw) {
		e.Source = l.raw[line-1]
	}
	return e
}

// add says a problem once: a phase copied per point of a swept service
// is checked once per copy, and a problem of its text is one problem.
func (l *loader) add(path, msg, hint string) {
	e := l.errAt(path, msg, hint)
	for _, o := range l.errs {
		if o.Line == e.Line && o.Col == e.Col && o.Msg == e.Msg {
			return
		}
	}
	l.errs = append(l.errs, e)
}

// addSlip says a name one slip from the one meant, at path: "did you
// mean NEAR?" and more, with the edit that renames it on its line (every
// whole-word use of it there from the error's column on).
func (l *loader) addSlip(path, msg, wrong, near, more string) {
	e := l.errAt(path, msg, strings.TrimSpace(fmt.Sprintf("did you mean %s? %s", near, more)))
	if e.Line >= 1 && e.Line <= len(l.lines) {
		src, from := l.lines[e.Line-1], max(e.Col-1, 0)
		if from <= len(src) {
			word := regexp.MustCompile(`(^|[^A-Za-z0-9_.])` + regexp.QuoteMeta(wrong) + `($|[^A-Za-z0-9_])`)
			fixed := src[:from] + word.ReplaceAllString(src[from:], "${1}"+strings.ReplaceAll(near, "$", "$$")+"${2}")
			if fixed != src {
				e.Fix = &Fix{Line: e.Line, N: 1, With: []string{fixed}}
			}
		}
	}
	for _, o := range l.errs {
		if o.Line == e.Line && o.Col == e.Col && o.Msg == e.Msg {
			return
		}
	}
	l.errs = append(l.errs, e)
}

// missingKey is a key a mapping must hold, as addMissing says it gone.
type missingKey struct {
	key, msg, hint string
	// after is the key it follows in the README's order ("run" for a
	// service's ready:): where it goes when nothing else tells.
	after string
	// children are its own keys, when its value is a mapping on lines of
	// their own (ready:'s http:, log:, timeout:).
	children []string
}

// addMissing says a key the mapping at path must hold and does not, where
// the file shows it went:
//   - a line under the mapping that reads as the key but sits in a
//     block's text (indented into the `run: |` above it) is said where it
//     is: the key is there, in the wrong place;
//   - lines that read as its own keys at the end of a block's text (what
//     deleting a `ready:` line leaves: its http: and log: read as run:'s
//     text) are said at the first of them, where its line was;
//   - else it is said where it goes: after the key it follows, when the
//     mapping has that key; else at the mapping.
func (l *loader) addMissing(path string, k missingKey) {
	line, _ := l.pos(path)
	if line < 1 || line > len(l.lines) {
		l.add(path+"."+k.key, k.msg, k.hint)
		return
	}
	ind := indentOf(l.lines[line-1])
	end := line // the mapping's last line
	for j := line + 1; j <= len(l.lines); j++ {
		src := l.lines[j-1]
		if t := strings.TrimSpace(src); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if indentOf(src) < ind && !l.inBlock(j) {
			break
		}
		end = j
	}
	for j := line + 1; j <= end; j++ {
		src := l.lines[j-1]
		t := strings.TrimSpace(src)
		if !l.inBlock(j) || indentOf(src) <= ind {
			continue
		}
		if strings.HasPrefix(t, k.key+":") {
			e := l.mk(j, indentOf(src)+1, fmt.Sprintf("%s (this %s: is indented into the text of the block above it)", k.msg, k.key),
				"bring it out of the block's text, level with the block's own key")
			for b := j - 1; b > line; b-- { // the block's key: the first line above less indented
				if bl := l.lines[b-1]; strings.TrimSpace(bl) != "" && indentOf(bl) < indentOf(src) {
					fix := &Fix{Line: j, N: 1, With: []string{strings.Repeat(" ", indentOf(bl)) + t}}
					if !l.probe && l.loadsWith(fix) {
						e.Hint, e.Fix = fmt.Sprintf("indent it to %d, level with line %d", indentOf(bl), b), fix
					}
					break
				}
			}
			l.errs = append(l.errs, e)
			return
		}
		if e := l.strandedChildren(j, end, ind, k); e != nil {
			l.errs = append(l.errs, e)
			return
		}
	}
	if k.after != "" {
		if at := l.siblingAfter(line, end, ind, k.after); at > 0 {
			e := l.mk(at, ind+1, fmt.Sprintf("%s (%s: goes here, after %s:)", k.msg, k.key, k.after), k.hint)
			for _, o := range l.errs {
				if o.Line == e.Line && o.Msg == e.Msg {
					return
				}
			}
			l.errs = append(l.errs, e)
			return
		}
	}
	l.add(path+"."+k.key, k.msg, k.hint)
}

// strandedChildren is, when line j of a block's text begins a run of
// lines that read as k's own keys and go on to the block's end, the
// error said at j: k's line went missing above it.
func (l *loader) strandedChildren(j, end, ind int, k missingKey) *FileError {
	if len(k.children) == 0 || (j > 1 && l.inBlock(j-1) && l.childLine(j-1, k)) {
		return nil
	}
	last := 0
	for i := j; i <= end; i++ {
		src := l.lines[i-1]
		if t := strings.TrimSpace(src); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if !l.inBlock(i) || !l.childLine(i, k) {
			if l.inBlock(i) {
				return nil // more of the block's text follows: these lines are its own
			}
			break
		}
		last = i
	}
	if last == 0 {
		return nil
	}
	e := l.mk(j, indentOf(l.lines[j-1])+1,
		fmt.Sprintf("%s: lines %d to %d read as its keys, but sit in the text of the block above them", k.msg, j, last),
		fmt.Sprintf("a `%s:` line may be missing above this one: put it back, level with the block's own key", k.key))
	if l.probe {
		return e
	}
	fix := &Fix{Line: j, N: 0, With: []string{strings.Repeat(" ", ind) + k.key + ":"}}
	if l.loadsWith(fix) {
		e.Fix = fix
		e.Hint = fmt.Sprintf("put `%s:` back above this line, at indentation %d", k.key, ind)
	}
	return e
}

// childLine says line i reads as one of k's own keys.
func (l *loader) childLine(i int, k missingKey) bool {
	m := keyLine.FindStringSubmatch(l.lines[i-1])
	return m != nil && m[2] == "" && slices.Contains(k.children, m[3])
}

// siblingAfter is the line just past key's value in the mapping whose
// keys are at ind between lines from and end: the next key's line, or
// the mapping's last line when key is its last; 0 when it has no key.
func (l *loader) siblingAfter(from, end, ind int, key string) int {
	found := false
	for j := from; j <= end; j++ {
		src := l.lines[j-1]
		if t := strings.TrimSpace(src); t == "" || strings.HasPrefix(t, "#") || indentOf(src) != ind || l.inBlock(j) {
			continue
		}
		m := keyLine.FindStringSubmatch(src)
		if m == nil {
			continue
		}
		if found {
			return j
		}
		found = m[3] == key && (j > from || m[2] == "")
	}
	if found {
		return end
	}
	return 0
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

func (l *loader) resolve(spec *CampaignSpec, plan *Plan) {
	plan.Name = strings.TrimSpace(spec.Name)
	if plan.Name == "" {
		l.add("$.name", "the campaign has no name", "add `name: my-campaign` at the top")
	}
	plan.Env = map[string]string{}
	for k, v := range spec.Env {
		plan.Env[k] = l.expand("$.env."+k, v, nil)
	}
	spec.Env = plan.Env
	plan.GPUs = spec.GPUs.Count
	if spec.GPUs.Count < 0 {
		l.add("$.gpus", "gpus must be zero or more", "give the number of GPUs the campaign expects, e.g. `gpus: 8`")
	}
	l.gpuSources(spec, plan)
	l.traces(spec, plan)
	l.conditions(spec, plan)
	plan.FailOnExpect = spec.FailOnExpect
	plan.Notify = strings.TrimSpace(spec.Notify)
	plan.Report = spec.Report
	if plan.Report == "" {
		plan.Report = SafeName(plan.Name) + ".md"
	}
	plan.Report = l.abs(plan.Dir, l.expand("$.report", plan.Report, plan.Env))
	if pf := spec.Preflight; pf != nil {
		plan.Preflight.Commands = pf.Commands
		for i, c := range pf.Commands {
			if strings.TrimSpace(c) == "" {
				l.add(fmt.Sprintf("$.preflight.commands[%d]", i), "empty command name", "list programs that must be on the PATH, e.g. [python3, nsys]")
			}
		}
		if pf.DiskFree != "" {
			n, err := parseSize(pf.DiskFree)
			if err != nil {
				l.add("$.preflight.disk_free", err.Error(), "a size is a number and a unit: 500MiB, 50GiB, 1TB")
			}
			plan.Preflight.DiskFree = n
		}
		for i, u := range pf.HTTP {
			u = l.expand(fmt.Sprintf("$.preflight.http[%d]", i), u, plan.Env)
			pf.HTTP[i] = u
			if err := checkURL(u); err != nil {
				l.add(fmt.Sprintf("$.preflight.http[%d]", i), err.Error(), "write a full URL such as http://localhost:8000/health")
			}
		}
		plan.Preflight.HTTP = pf.HTTP
	}
	if len(spec.Phases) == 0 {
		l.add("$.phases", "the campaign has no phases", "add `phases:` with at least one phase that has `id:` and `steps:`")
		return
	}
	written := map[string]int{} // the phases as the file writes them
	for i, ps := range spec.Phases {
		if id := strings.TrimSpace(ps.ID); id != "" {
			if _, dup := written[id]; !dup {
				written[id] = i
			}
		}
	}
	for i, ps := range spec.Phases {
		for _, key := range []string{"needs", "after"} {
			list := ps.Needs
			if key == "after" {
				list = ps.After
			}
			for j, n := range list {
				path := fmt.Sprintf("$.phases[%d].%s[%d]", i, key, j)
				if n == ps.ID {
					l.add(path, fmt.Sprintf("phase %q lists itself in %s", n, key), "remove it from its own "+key)
				} else if _, ok := written[n]; !ok {
					hint := key + " lists ids of other phases: " + strings.Join(sortedKeys(written), ", ")
					if near := nearest(n, sortedKeys(written)); near != "" && near != ps.ID {
						l.addSlip(path, fmt.Sprintf("unknown phase %q in %s", n, key), n, near, hint)
					} else {
						l.add(path, fmt.Sprintf("unknown phase %q in %s", n, key), hint)
					}
				}
			}
		}
	}
	ids := map[string]int{} // the phases as they run → where the file writes them
	slurmDef := l.slurmDefault(spec.Slurm)
	for _, pl := range l.expandServices(spec) {
		i := pl.origin
		ph := l.phase(plan, spec, pl.ps, i, slurmDef)
		if ph.ID == "" {
			continue
		}
		if j, dup := ids[ph.ID]; dup {
			if pl.point != nil {
				l.add(fmt.Sprintf("$.phases[%d].id", i), fmt.Sprintf("phase id %q (%s at %s) is already used by phase %d", ph.ID, pl.point.Phase, pl.point.Key, j+1), "rename that phase: a swept service's points name their phases id.values")
			} else {
				l.add(fmt.Sprintf("$.phases[%d].id", i), fmt.Sprintf("phase id %q is already used by phase %d", ph.ID, j+1), "give each phase its own id")
			}
			continue
		}
		ph.After, ph.Point = append(slices.Clone(pl.ps.After), pl.after...), pl.point
		if pl.point != nil && ph.Service != nil {
			// Every point's load is the same load, by its pace: its stages
			// and duration are learned across the points.
			s := spec.Phases[i].Service
			ph.Service.Key = hashOf(s.Run, s.Dir, merge(spec.Env, spec.Phases[i].Env, s.Env))
		}
		ids[ph.ID] = i
		plan.Phases = append(plan.Phases, ph)
	}
	l.inferRanks(plan, ids)
	l.inferFloors(plan, ids)
	l.checkExprNames(plan, ids)
	for _, ph := range plan.Phases {
		if r := ph.Roofline; r != nil && r.Ceiling != "" {
			if c := plan.Phase(r.Ceiling); c == nil || c.Roofline == nil {
				hint := "name the calibration phase whose best rows are the measured ceiling; it needs roofline: too: phases with one: " + strings.Join(rooflined(plan), ", ")
				at, msg := fmt.Sprintf("$.phases[%d].roofline.ceiling", ids[ph.ID]), fmt.Sprintf("ceiling: %q is no phase with a roofline:", r.Ceiling)
				if near := nearest(r.Ceiling, rooflined(plan)); near != "" && near != ph.ID {
					l.addSlip(at, msg, r.Ceiling, near, hint)
				} else {
					l.add(at, msg, hint)
				}
			}
		}
	}
	if len(l.errs) == 0 {
		l.order(plan, ids)
	}
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (l *loader) abs(dir, p string) string {
	if p == "" {
		return dir
	}
	if strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(h, p[2:])
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Clean(p)
}

func (l *loader) dur(path, s string) time.Duration {
	if s == "" {
		return 0
	}
	v, err := parseDuration(s)
	if err != nil {
		l.add(path, err.Error(), "a duration is a number and a unit: 90s, 36m, 1h30m (or a bare number of seconds)")
	}
	return v
}

func (l *loader) re(path, s string, needNamed bool) *regexp.Regexp {
	if s == "" {
		return nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		l.add(path, "invalid regex: "+strings.TrimPrefix(err.Error(), "error parsing regexp: "), "Go regexp syntax (RE2): escape ( ) . with a backslash; use single quotes in YAML")
		return nil
	}
	if needNamed {
		named := false
		for _, n := range re.SubexpNames() {
			named = named || n != ""
		}
		if !named {
			l.add(path, "results regex has no named group", `name the columns: (?P<tok_s>[\d.]+)`)
			return nil
		}
	}
	return re
}
