package campaign

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
)

// A phase over a grid: `sweep:` names axes, each a list of values or of
// small records with a name; `repeat:` runs each point that many times.
// The grid is expanded when the file is loaded: each point and repeat is
// a unit of the phase, its steps the phase's steps with the point's
// values put in (${axis}, ${axis.field}), run one unit after another in
// the order `order:` says. Each unit's steps are steps of the phase, so
// the journal, resume, progress and ETA hold per point as per step.

// Sweep is a phase's grid.
type Sweep struct {
	Axes   []Axis
	Repeat int     // runs of each point; 1 when not said
	Order  string  // interleaved (default) or grouped
	Until  string  // "failed": along the last axis, stop at the first point whose expectation fails
	Noise  float64 // coefficient of variation over which a point is marked noisy (DefaultNoise)
	// GoOn: a failed point does not end the grid (on_failure: continue):
	// it is recorded failed and the other points run.
	GoOn bool
	// NoiseSet says the campaign wrote noise:; else Noise is DefaultNoise,
	// said as the default where it is shown.
	NoiseSet bool
	Units    []Unit  // in run order
	Points   int     // distinct points
	Search   *Search // a search planned as this sweep (search.go); nil for a grid
	// Repeats are each point's runs: Repeat (its Max) planned, fewer run
	// where repeat: until: is met (a search's are its own).
	Repeats Repeats
}

// Axis is one dimension of the grid.
type Axis struct {
	Name   string
	Values []AxisValue
}

// Joined is how several axes read as one, in a compound axis's name and
// its values: a swept service's point where a phase is gathered across
// them ("max_num_seqs · max_batched", "64 · 2048").
const Joined = " · "

// Say is an axis at one of its values: "m=64", or for a compound axis
// each of its axes at its value, "max_num_seqs=64 · max_batched=2048".
func (a Axis) Say(v AxisValue) string {
	names, vals := strings.Split(a.Name, Joined), strings.Split(v.Name, Joined)
	if len(names) < 2 || len(names) != len(vals) {
		return a.Name + "=" + v.Name
	}
	for i := range names {
		names[i] += "=" + vals[i]
	}
	return strings.Join(names, Joined)
}

// AxisValue is one value of an axis: a plain value (Name is its text) or
// a record with a name and fields.
type AxisValue struct {
	Name   string
	Fields map[string]string
}

// Unit is one run of one point: its value on each axis (by index), its
// point's number (0-based, grid order) and its repeat (1-based).
type Unit struct {
	Values []int
	Point  int
	Repeat int
}

// Maximum grid size: past it a campaign is a typo, not a measurement.
const maxPoints = 10000

// Key is the unit's point as GREENLIGHT_POINT says it: m=64,shape=down.
func (s *Sweep) Key(u Unit) string {
	parts := make([]string, len(s.Axes))
	for i, a := range s.Axes {
		parts[i] = a.Say(a.Values[u.Values[i]])
	}
	return strings.Join(parts, ",")
}

// Identity names a unit by what it runs with, not by its place in the
// grid: every ${axis} and ${axis.field} value and the repeat
// ("m=64,shape.k=7168,shape.n=4096,shape=down#2"). A grid edited to add
// values keeps its units' identities.
func (s *Sweep) Identity(u Unit) string {
	vars := s.Vars(u)
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + vars[k]
	}
	return strings.Join(parts, ",") + "#" + strconv.Itoa(u.Repeat)
}

// Vars are the unit's ${axis} and ${axis.field} values.
func (s *Sweep) Vars(u Unit) map[string]string {
	vars := map[string]string{}
	for i, a := range s.Axes {
		v := a.Values[u.Values[i]]
		vars[a.Name] = v.Name
		for f, x := range v.Fields {
			vars[a.Name+"."+f] = x
		}
	}
	return vars
}

// TextVars are Vars and, for each axis, ${axis.name}: a record value's
// name as a person writes it (`${shape.name}`), the same as ${shape}. Not
// part of a unit's Identity, which is unchanged by it.
func (s *Sweep) TextVars(u Unit) map[string]string {
	vars := s.Vars(u)
	for i, a := range s.Axes {
		vars[a.Name+".name"] = a.Values[u.Values[i]].Name
	}
	return vars
}

// Env is what a unit's steps get in their environment.
func (s *Sweep) Env(u Unit) map[string]string {
	env := map[string]string{"GREENLIGHT_POINT": s.Key(u), "GREENLIGHT_REPEAT": strconv.Itoa(u.Repeat)}
	for i, a := range s.Axes {
		env["GREENLIGHT_P_"+strings.ToUpper(a.Name)] = a.Values[u.Values[i]].Name
	}
	return env
}

// SweepSpec is the grid as written: axes in the file's order.
type SweepSpec = yaml.MapSlice

var axisName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// DefaultNoise is the coefficient of variation over which a point's
// repeats are said to disagree when the campaign sets no noise:.
const DefaultNoise = 0.05

// NoiseWords is the noise limit in words: "5% (the default; noise: sets
// it)" or "3% (noise:)".
func (s *Sweep) NoiseWords() string {
	pct := strconv.FormatFloat(s.Noise*100, 'f', -1, 64) + "%"
	if s.NoiseSet {
		return pct + " (noise:)"
	}
	return pct + " (the default; noise: sets it)"
}

// sweep resolves a phase's sweep:, repeat:, order:, until: and noise:.
// nil when the phase has none of them.
func (l *loader) sweep(ps *PhaseSpec, at func(string) string, env map[string]string, expects bool) *Sweep {
	if len(ps.Sweep) == 0 {
		if line, _ := l.pos(at(".sweep")); line > 0 && line <= len(l.lines) {
			if m := keyLine.FindStringSubmatch(l.lines[line-1]); m != nil && m[3] == "sweep" && l.emptyValue(line) {
				e := l.mk(line, len(m[1])+len(m[2])+1, "sweep: has no axes: the phase would run once, as no sweep",
					"give it an axis on the line under it, indented (concurrency: [8, 32, 128]), or remove the sweep: line")
				if !slices.ContainsFunc(l.errs, func(o *FileError) bool { return o.Line == e.Line && o.Msg == e.Msg }) {
					l.errs = append(l.errs, e)
				}
			}
		}
	}
	if len(ps.Sweep) == 0 && ps.Repeat == nil && ps.Order == "" && ps.Until == "" && ps.Noise == "" && ps.Search == nil {
		if ps.OnFailure != "" {
			l.add(at(".on_failure"), "on_failure: lets a sweep go on past a failed point, and this phase has no sweep: or repeat:",
				"remove on_failure:; a phase of steps ends at its first failed step (retries: runs a step again)")
		}
		return nil
	}
	sw := &Sweep{Repeat: 1, Order: "interleaved", Noise: DefaultNoise}
	switch ps.OnFailure {
	case "", "stop":
	case "continue":
		if ps.Search != nil {
			l.add(at(".on_failure"), "on_failure: continue is for a grid; a search judges each probe, and a failed run is a failed probe",
				"remove on_failure:; a probe's failed run ends the search, said with its last words")
		}
		sw.GoOn = true
	default:
		hint := "on_failure: continue records a failed point and runs the others; stop (the default) ends the phase at it"
		if near := nearest(ps.OnFailure, []string{"continue", "stop"}); near != "" {
			l.addSlip(at(".on_failure"), fmt.Sprintf("on_failure: %q is not continue or stop", ps.OnFailure), ps.OnFailure, near, hint)
		} else {
			l.add(at(".on_failure"), fmt.Sprintf("on_failure: %q is not continue or stop", ps.OnFailure), hint)
		}
	}
	if ps.Search == nil {
		sw.Repeats = l.repeats(ps.Repeat, at)
		sw.Repeat = sw.Repeats.Max
	}
	switch ps.Order {
	case "", "interleaved":
	case "grouped":
		sw.Order = "grouped"
	default:
		l.add(at(".order"), fmt.Sprintf("order: %q is not interleaved or grouped", ps.Order),
			"interleaved (the default) goes round the whole grid once per repeat, so drift and heat fall on every point alike; grouped runs a point's repeats one after another")
	}
	if ps.Noise != "" {
		v := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(ps.Noise), "%"))
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || !strings.HasSuffix(strings.TrimSpace(ps.Noise), "%") {
			l.add(at(".noise"), fmt.Sprintf("noise: %q is not a percentage", ps.Noise), "write noise: 5% (the coefficient of variation over which a point is marked noisy)")
		} else {
			sw.Noise, sw.NoiseSet = f/100, true
		}
	}
	if ps.Search != nil {
		ss := l.search(ps, at)
		if ss != nil {
			ss.Noise = sw.Noise
		}
		return ss
	}
	for _, item := range ps.Sweep {
		name := fmt.Sprint(item.Key)
		p := at(".sweep." + name)
		ax := Axis{Name: name}
		if !axisName.MatchString(name) {
			l.add(p, fmt.Sprintf("axis %q: an axis name is lower case letters, digits and _", name), "it becomes ${"+strings.ToLower(name)+"} in commands and GREENLIGHT_P_"+strings.ToUpper(name)+" in their environment")
		}
		if _, ok := env[name]; ok {
			l.add(p, fmt.Sprintf("axis %q has the name of a variable of env:, which ${%s} already expands", name, name), "rename the axis (or the variable)")
		}
		if _, ok := env[strings.ToUpper(name)]; ok && strings.ToUpper(name) != name {
			l.add(p, fmt.Sprintf("axis %q is named like the variable %s of env:", name, strings.ToUpper(name)), "rename the axis, so that ${"+name+"} and ${"+strings.ToUpper(name)+"} are not confused")
		}
		list, ok := item.Value.([]any)
		if !ok || len(list) == 0 {
			l.add(p, fmt.Sprintf("axis %q has no values", name), "give it a list: "+name+": [1, 8, 64]")
			continue
		}
		seen := map[string]bool{}
		for j, raw := range list {
			v, err := axisValue(raw)
			if err != nil {
				l.add(fmt.Sprintf("%s[%d]", p, j), fmt.Sprintf("axis %q, value %d: %v", name, j+1, err), "a value is a number or a word, or a record with a name: {name: down, n: 7168, k: 2048}")
				continue
			}
			if seen[v.Name] {
				l.add(fmt.Sprintf("%s[%d]", p, j), fmt.Sprintf("axis %q has %s twice", name, v.Name), "each value of an axis once")
			}
			seen[v.Name] = true
			ax.Values = append(ax.Values, v)
		}
		sw.Axes = append(sw.Axes, ax)
	}
	points := 1
	for _, a := range sw.Axes {
		points *= max(1, len(a.Values))
		if points > maxPoints {
			break
		}
	}
	if points > maxPoints {
		l.add(at(".sweep"), fmt.Sprintf("the grid has more than %d points", maxPoints), "sweep fewer values, or split the phase in two")
		return sw
	}
	switch ps.Until {
	case "":
	case "failed":
		if !expects {
			l.add(at(".until"), "until: failed stops at the first point whose expectation fails, but the phase has no expect:", "add expect: under the phase or a step, e.g. expect: {tpot_ms: '<= 50'}")
		}
		if len(sw.Axes) == 0 {
			l.add(at(".until"), "until: failed stops along the last axis of a sweep:, and the phase has none", "add sweep: with the axis to search along last")
		}
		sw.Until = "failed"
	default:
		l.add(at(".until"), fmt.Sprintf("until: %q is not failed", ps.Until), "until: failed stops each line of the last axis at its first failing point")
	}
	sw.Points = points
	sw.Units = units(sw)
	return sw
}

func axisValue(raw any) (AxisValue, error) {
	switch x := raw.(type) {
	case map[string]any:
		v := AxisValue{Fields: map[string]string{}}
		for k, f := range x {
			s, err := scalar(f)
			if err != nil {
				return v, fmt.Errorf("field %s: %v", k, err)
			}
			if k == "name" {
				v.Name = s
				continue
			}
			if !axisName.MatchString(k) {
				return v, fmt.Errorf("field %q: a field name is lower case letters, digits and _", k)
			}
			v.Fields[k] = s
		}
		if v.Name == "" {
			return v, fmt.Errorf("a record needs a name")
		}
		return v, nil
	case yaml.MapSlice:
		m := map[string]any{}
		for _, it := range x {
			m[fmt.Sprint(it.Key)] = it.Value
		}
		return axisValue(m)
	}
	s, err := scalar(raw)
	return AxisValue{Name: s}, err
}

func scalar(raw any) (string, error) {
	switch x := raw.(type) {
	case string:
		if strings.TrimSpace(x) == "" || strings.ContainsAny(x, ",=") {
			return "", fmt.Errorf("%q: a value is not empty and has no ',' or '='", x)
		}
		return x, nil
	case int, int64, uint64, float64, bool:
		return fmt.Sprint(x), nil
	case nil:
		return "", fmt.Errorf("empty")
	}
	return "", fmt.Errorf("a list or a deeper record is not a value")
}

// units is the grid in run order: interleaved goes round the whole grid
// once per repeat; grouped runs a point's repeats together. Points are in
// grid order, the last axis changing fastest.
func units(sw *Sweep) []Unit {
	var points [][]int
	var walk func(i int, cur []int)
	walk = func(i int, cur []int) {
		if i == len(sw.Axes) {
			points = append(points, append([]int(nil), cur...))
			return
		}
		for j := range sw.Axes[i].Values {
			walk(i+1, append(cur, j))
		}
	}
	walk(0, nil)
	var out []Unit
	if sw.Order == "grouped" {
		for p, v := range points {
			for r := 1; r <= sw.Repeat; r++ {
				out = append(out, Unit{Values: v, Point: p, Repeat: r})
			}
		}
		return out
	}
	for r := 1; r <= sw.Repeat; r++ {
		for p, v := range points {
			out = append(out, Unit{Values: v, Point: p, Repeat: r})
		}
	}
	return out
}

// sweepVar is ${name} or ${name.field} in a step's text.
var sweepVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(\.[A-Za-z_][A-Za-z0-9_]*)?\}`)

// checkVars reports each ${name} in text that names no axis (or no field
// of one) of the sweep: a lower-case name that is no variable of env: is
// a typo of an axis, not a shell variable.
func (l *loader) checkVars(path, text string, sw *Sweep, env map[string]string) {
	vars := map[string]bool{}
	fields := map[string][]string{}
	for _, a := range sw.Axes {
		vars[a.Name] = true
		vars[a.Name+".name"] = true
		for _, v := range a.Values {
			for f := range v.Fields {
				if !vars[a.Name+"."+f] {
					fields[a.Name] = append(fields[a.Name], f)
				}
				vars[a.Name+"."+f] = true
			}
		}
	}
	var names []string
	for _, a := range sw.Axes {
		names = append(names, a.Name)
	}
	for _, m := range sweepVar.FindAllStringSubmatch(text, -1) {
		name := m[1] + m[2]
		if vars[name] {
			continue
		}
		if _, ok := env[m[1]]; ok && m[2] == "" {
			continue
		}
		if m[2] == "" && strings.ToUpper(m[1]) == m[1] {
			continue // a shell variable
		}
		hint := "the axes are " + strings.Join(names, ", ")
		if sweepAt := phasePath.FindString(path); sweepAt != "" {
			if line, _ := l.keyPos(sweepAt+".sweep", "sweep"); line > 0 && l.keyAt(line) == "sweep" && !l.emptyValue(line) {
				hint = fmt.Sprintf("the axes of sweep: (line %d) are %s", line, strings.Join(names, ", "))
			}
			if sw.Search != nil {
				line, _ := l.pos(sweepAt + ".search.axis")
				hint = fmt.Sprintf("the search's axis (line %d) is %s", line, sw.Search.Axis)
			}
			if near := nearestExact(m[1], names); near != "" && !vars[m[1]] {
				line, _ := l.keyPos(sweepAt+".sweep."+near, near)
				what := "the sweep's axis"
				if sw.Search != nil {
					line, _ = l.pos(sweepAt + ".search.axis")
					what = "the search's axis"
				}
				hint = fmt.Sprintf("%s %s (line %d) is one slip from %s: one of the two names is misspelled", what, near, line, m[1])
			}
		}
		if fs := fields[m[1]]; m[2] != "" && len(fs) > 0 {
			sort.Strings(fs)
			hint = fmt.Sprintf("the fields of %s are %s", m[1], strings.Join(fs, ", "))
		}
		of := "the sweep"
		if sw.Search != nil {
			of = "the search"
		}
		l.add(path, fmt.Sprintf("${%s} names no axis of %s", name, of), hint)
	}
}

// keyAt is the key line n begins, "" when it begins none.
func (l *loader) keyAt(n int) string {
	if m := keyLine.FindStringSubmatch(l.lines[n-1]); m != nil {
		return m[3]
	}
	return ""
}

// emptyValue says the key on line n has no value in the file: nothing
// after its colon (or {}), and no deeper line under it.
func (l *loader) emptyValue(n int) bool {
	src := l.lines[n-1]
	if v := strings.TrimSpace(stripComment(src[strings.Index(src, ":")+1:])); v != "" && v != "{}" && v != "~" && v != "null" {
		return false
	}
	for j := n + 1; j <= len(l.lines); j++ {
		if t := strings.TrimSpace(l.lines[j-1]); t != "" && !strings.HasPrefix(t, "#") {
			return indentOf(l.lines[j-1]) <= indentOf(src)
		}
	}
	return true
}

// phasePath is the path of the phase a path is in.
var phasePath = regexp.MustCompile(`^\$\.phases\[(\d+)\]`)

// put is text with the unit's ${axis} and ${axis.field} values in.
func put(text string, vars map[string]string) string {
	return sweepVar.ReplaceAllStringFunc(text, func(m string) string {
		if v, ok := vars[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// PointColumns are the columns of the phase's rows that say where a row
// was measured, not what: its sweep's axes and repeat, and the axes of
// the swept service's point it ran under. Not metrics.
func (ph *Phase) PointColumns() map[string]bool {
	cols := map[string]bool{}
	if sw := ph.Sweep; sw != nil {
		cols["repeat"] = true
		for _, a := range sw.Axes {
			cols[a.Name] = true
		}
	}
	if pt := ph.Point; pt != nil {
		for _, v := range pt.Values {
			cols[v.Axis] = true
		}
	}
	return cols
}
