package campaign

import (
	"fmt"
	"slices"
	"strings"
)

// A sweep over a service phase (a grid of server flags, the shape of
// `vllm bench sweep serve`) is expanded when the file is loaded: one
// service phase per point, in grid order, so that the first axis changes
// least (write first the axis whose change costs most), and, per point, a
// copy of every phase that uses the service. A copy is a phase of its own,
// its id the phase's with the point's values (decode.64.2048), so the
// journal, resume, skip and retry hold per service point as they hold per
// phase, and a grid edited to add a value runs only the new points. Its
// rows carry the service's axis values.
//
// A point's service starts only after the previous point's service and
// the phases that used it have ended, however they ended: one server
// setting that fails to load, or a benchmark that fails under it, does
// not stop the grid (Phase.After, not needs). A phase that needs a copied
// phase needs every copy.

// maxServicePoints bounds a service's grid: each point loads the server
// again (36 minutes for a large model); past it the grid is a typo.
const maxServicePoints = 256

// ServicePoint is the point of a swept service that a phase expanded
// from it runs under.
type ServicePoint struct {
	Service string    // the service phase as written: serve
	Phase   string    // this phase as written: decode, or serve for the service's own
	Title   string    // its title as written (its id when it has none); the copy's adds the point
	Key     string    // max_num_seqs=64,max_batched=2048
	Index   int       // 1-based, in run order
	Count   int       // the service's points
	Values  []Setting // each axis's value, in the axes' order
}

// Said is the point's values alone, as a cut title keeps them: "64,2048".
func (pt *ServicePoint) Said() string {
	vals := make([]string, len(pt.Values))
	for i, v := range pt.Values {
		vals[i] = v.Value
	}
	return strings.Join(vals, ",")
}

// Setting is one axis's value at a point.
type Setting struct{ Axis, Value string }

// planned is a phase as it will run: as written, or a copy for one
// service point.
type planned struct {
	ps     PhaseSpec
	origin int // its index in the file's phases: its errors point there
	point  *ServicePoint
	after  []string
}

// expandServices is the file's phases with each swept service expanded.
// A phase that cannot be expanded is said at its line, and left as
// written without its sweep (the file is refused either way).
func (l *loader) expandServices(spec *CampaignSpec) []planned {
	type group struct {
		svc     int
		members []int
		sweep   *Sweep
		slugs   []string
	}
	var groups []*group
	inGroup := map[int]*group{}
	for i := range spec.Phases {
		if swept(&spec.Phases[i]) {
			g := &group{svc: i, members: users(spec, i)}
			if g.sweep = l.serviceSweep(spec, i); g.sweep != nil {
				groups = append(groups, g)
			}
		}
	}
	for _, g := range groups {
		id := strings.TrimSpace(spec.Phases[g.svc].ID)
		for _, a := range g.sweep.axes() {
			if l.sweptAxes == nil {
				l.sweptAxes = map[string]sweptAxis{}
			}
			l.sweptAxes[a] = sweptAxis{g.svc, id}
		}
		for _, m := range g.members {
			mp := &spec.Phases[m]
			at := fmt.Sprintf("$.phases[%d]", m)
			switch o := inGroup[m]; {
			case mp.Service != nil && len(mp.Sweep) > 0:
				l.add(at+".sweep", fmt.Sprintf("the service %q uses the swept service %q and is swept too", mp.ID, id),
					"sweep one of the two services; put the other's settings on the swept one's axes")
				g.sweep = nil
			case o != nil:
				l.add(at+".needs", fmt.Sprintf("phase %q uses two swept services, %s and %s; it would run under a point of each at once", mp.ID, spec.Phases[o.svc].ID, id),
					"split the phase in two, one for each service")
				g.sweep = nil
			}
			inGroup[m] = g
			for _, it := range mp.Sweep {
				if slices.ContainsFunc(g.sweep.axes(), func(a string) bool { return a == fmt.Sprint(it.Key) }) {
					l.add(fmt.Sprintf("%s.sweep.%v", at, it.Key), fmt.Sprintf("axis %q is also an axis of the service %s that the phase uses", it.Key, id),
						"rename one of them: rows carry both as columns")
				}
			}
			l.checkMember(spec, m, g.sweep)
		}
	}
	copies := map[string][]string{} // a phase as written → its copies, in run order
	for _, g := range groups {
		if g.sweep == nil {
			continue
		}
		seen := map[string]string{}
		for _, u := range g.sweep.Units {
			slug := pointSlug(g.sweep, u)
			if k, dup := seen[slug]; dup {
				l.add(fmt.Sprintf("$.phases[%d].sweep", g.svc), fmt.Sprintf("points %s and %s would both be named %s.%s", k, g.sweep.Key(u), spec.Phases[g.svc].ID, slug),
					"make the axes' values differ in letters or digits, not only in punctuation")
				g.sweep = nil
				break
			}
			seen[slug] = g.sweep.Key(u)
			g.slugs = append(g.slugs, slug)
		}
		if g.sweep == nil {
			continue
		}
		for _, i := range append([]int{g.svc}, g.members...) {
			id := strings.TrimSpace(spec.Phases[i].ID)
			for _, s := range g.slugs {
				copies[id] = append(copies[id], id+"."+s)
			}
		}
	}
	needs := func(ns []string, slug string, g *group) []string {
		var out []string
		for _, n := range ns {
			switch c, ok := copies[n]; {
			case g != nil && (n == strings.TrimSpace(spec.Phases[g.svc].ID) || slices.ContainsFunc(g.members, func(m int) bool { return strings.TrimSpace(spec.Phases[m].ID) == n })):
				out = append(out, n+"."+slug) // the same point's
			case ok:
				out = append(out, c...)
			default:
				out = append(out, n)
			}
		}
		return out
	}
	var out []planned
	for i, ps := range spec.Phases {
		g := inGroup[i]
		if g != nil && g.sweep != nil {
			continue // in its service's block
		}
		var svc *group
		for _, x := range groups {
			if x.svc == i {
				svc = x
			}
		}
		if svc == nil || svc.sweep == nil {
			if swept(&ps) {
				ps.Sweep, ps.Repeat, ps.Order, ps.Until, ps.Noise, ps.OnFailure = nil, nil, "", "", "", "" // said above; not again
			}
			ps.Needs, ps.After = needs(ps.Needs, "", nil), needs(ps.After, "", nil)
			out = append(out, planned{ps: ps, origin: i})
			continue
		}
		sw := svc.sweep
		var prev []string
		for k, u := range sw.Units {
			vars, slug := sw.TextVars(u), svc.slugs[k]
			var block []string
			for _, m := range append([]int{i}, svc.members...) {
				cp := putPhase(spec.Phases[m], vars)
				// The point in the environment of the service and of every
				// step under it: GREENLIGHT_SERVICE_POINT and one
				// GREENLIGHT_P_<AXIS> per axis (the service's own steps
				// also get GREENLIGHT_POINT, as a sweep's do).
				cp.Env = merge(cp.Env, map[string]string{"GREENLIGHT_SERVICE_POINT": sw.Key(u)})
				for k, v := range sw.Env(u) {
					if k != "GREENLIGHT_REPEAT" && (k != "GREENLIGHT_POINT" || m == i) {
						cp.Env[k] = v
					}
				}
				id := strings.TrimSpace(cp.ID)
				cp.ID = id + "." + slug
				title := cp.Title
				if title == "" {
					title = id
				}
				cp.Title = title + " · " + sw.Key(u)
				cp.Needs, cp.After = needs(cp.Needs, slug, svc), needs(cp.After, slug, svc)
				pt := &ServicePoint{Service: strings.TrimSpace(ps.ID), Phase: id, Title: title, Key: sw.Key(u), Index: k + 1, Count: len(sw.Units)}
				for j, a := range sw.Axes {
					pt.Values = append(pt.Values, Setting{a.Name, a.Values[u.Values[j]].Name})
				}
				p := planned{ps: cp, origin: m, point: pt}
				if m == i {
					p.after = prev
				}
				out = append(out, p)
				block = append(block, cp.ID)
			}
			prev = block
		}
	}
	return out
}

// swept reports whether a service phase says any of a sweep's keys.
func swept(ps *PhaseSpec) bool {
	return ps.Service != nil && (len(ps.Sweep) > 0 || ps.Repeat != nil || ps.Order != "" || ps.Until != "" || ps.Noise != "")
}

// users are the phases that use phase i, a service, as Plan.Uses says:
// they need it, or need a service that uses it. In file order.
func users(spec *CampaignSpec, i int) []int {
	through := map[string]bool{strings.TrimSpace(spec.Phases[i].ID): true} // it, and services on top of it
	user := make([]bool, len(spec.Phases))
	for grew := true; grew; {
		grew = false
		for j, ps := range spec.Phases {
			if j == i || user[j] || !slices.ContainsFunc(ps.Needs, func(n string) bool { return through[n] }) {
				continue
			}
			user[j], grew = true, true
			if ps.Service != nil {
				through[strings.TrimSpace(ps.ID)] = true
			}
		}
	}
	var out []int
	for j, u := range user {
		if u {
			out = append(out, j)
		}
	}
	return out
}

// serviceSweep is a swept service's grid, or nil where it cannot be
// swept (said at its line).
func (l *loader) serviceSweep(spec *CampaignSpec, i int) *Sweep {
	ps := &spec.Phases[i]
	at := func(k string) string { return fmt.Sprintf("$.phases[%d]%s", i, k) }
	n := len(l.errs)
	for _, k := range []struct {
		key string
		set bool
	}{{"repeat", ps.Repeat != nil}, {"order", ps.Order != ""}, {"until", ps.Until != ""}, {"noise", ps.Noise != ""}} {
		if k.set {
			l.add(at("."+k.key), fmt.Sprintf("%s: on a service would load the server again for what belongs to the phases that use it", k.key),
				"put "+k.key+": on the phases that need the service; they run under each of its sweep's points")
		}
	}
	if ps.Plot != nil {
		l.add(at(".plot"), "plot: draws a phase's rows, and a service has none", "put plot: on the phase that measures under the service")
	}
	if len(ps.Sweep) == 0 {
		return nil
	}
	env := merge(spec.Env, ps.Env)
	sw := l.sweep(ps, at, env, false)
	if sw.Points > maxServicePoints {
		l.add(at(".sweep"), fmt.Sprintf("the service's grid has %d points, each a start of the server: more than %d", sw.Points, maxServicePoints),
			"sweep fewer server settings, or split the campaign in two")
		return nil
	}
	s := ps.Service
	l.checkVars(at(".service.run"), s.Run, sw, env)
	l.checkVars(at(".service.dir"), s.Dir, sw, env)
	for k, v := range s.Env {
		l.checkVars(at(".service.env."+k), v, sw, env)
	}
	for k, v := range ps.Env {
		l.checkVars(at(".env."+k), v, sw, env)
	}
	l.checkVars(at(".service.ready.http"), s.Ready.HTTP, sw, env)
	l.checkVars(at(".service.ready.log"), s.Ready.Log, sw, env)
	if s.Metrics != nil {
		l.checkVars(at(".service.metrics.url"), s.Metrics.URL, sw, env)
	}
	said := s.Run + "\n" + s.Dir + "\n" + s.Ready.HTTP + "\n" + s.Ready.Log
	for _, v := range s.Env {
		said += "\n" + v
	}
	for _, v := range ps.Env {
		said += "\n" + v
	}
	if s.Metrics != nil {
		said += "\n" + s.Metrics.URL
	}
	for _, a := range sw.Axes {
		if !strings.Contains(said, "${"+a.Name+"}") && !strings.Contains(said, "${"+a.Name+".") &&
			!strings.Contains(said, "GREENLIGHT_P_"+strings.ToUpper(a.Name)) && !strings.Contains(said, "GREENLIGHT_POINT") {
			l.add(at(".sweep."+a.Name), fmt.Sprintf("axis %q is said nowhere in the service: each of its points would start the same server", a.Name),
				fmt.Sprintf("put ${%s} in its run:, e.g. --%s ${%s}, or read $GREENLIGHT_P_%s there", a.Name, strings.ReplaceAll(a.Name, "_", "-"), a.Name, strings.ToUpper(a.Name)))
		}
	}
	if len(l.errs) > n {
		return nil
	}
	return sw
}

// checkMember says each ${name} of a phase that uses a swept service
// that names neither the service's axes nor its own.
func (l *loader) checkMember(spec *CampaignSpec, m int, svc *Sweep) {
	if svc == nil {
		return
	}
	ps := spec.Phases[m]
	at := func(k string) string { return fmt.Sprintf("$.phases[%d]%s", m, k) }
	env := merge(spec.Env, ps.Env)
	quiet := &loader{name: l.name, raw: l.raw, lines: l.lines, file: l.file}
	all := &Sweep{Axes: slices.Clone(svc.Axes)}
	if own := quiet.sweep(&ps, at, env, true); own != nil {
		all.Axes = append(own.Axes, all.Axes...)
	}
	l.checkStepVars(&ps, at, all, env)
	if s := ps.Service; s != nil {
		l.checkVars(at(".service.run"), s.Run, all, env)
	}
}

func (s *Sweep) axes() []string {
	if s == nil {
		return nil
	}
	out := make([]string, len(s.Axes))
	for i, a := range s.Axes {
		out[i] = a.Name
	}
	return out
}

// pointSlug names a point in a phase id: its values, each made safe,
// joined by '.' (64.2048, or fp8.tp8).
func pointSlug(sw *Sweep, u Unit) string {
	parts := make([]string, len(sw.Axes))
	for i, a := range sw.Axes {
		parts[i] = strings.ReplaceAll(SafeName(a.Values[u.Values[i]].Name), ".", "_")
	}
	return strings.Join(parts, ".")
}

// putPhase is a phase with a service point's ${axis} values put in
// wherever a command, a folder, an environment or a pattern may say them.
// Its own sweep, if any, is kept, its own ${axis} left for it.
func putPhase(ps PhaseSpec, vars map[string]string) PhaseSpec {
	putMap := func(m map[string]string) map[string]string {
		if m == nil {
			return nil
		}
		out := make(map[string]string, len(m))
		for k, v := range m {
			out[k] = put(v, vars)
		}
		return out
	}
	ps.Title, ps.Env = put(ps.Title, vars), putMap(ps.Env)
	ps.Needs, ps.After = slices.Clone(ps.Needs), slices.Clone(ps.After)
	ps.Artifacts = slices.Clone(ps.Artifacts)
	for j := range ps.Artifacts {
		ps.Artifacts[j] = put(ps.Artifacts[j], vars)
	}
	ps.Steps = slices.Clone(ps.Steps)
	for j := range ps.Steps {
		st := &ps.Steps[j]
		st.Run, st.Dir, st.Env = put(st.Run, vars), put(st.Dir, vars), putMap(st.Env)
		if st.Results != nil {
			r := *st.Results
			r.Regex = put(r.Regex, vars)
			st.Results = &r
		}
	}
	if ps.Service != nil {
		s := *ps.Service
		s.Run, s.Dir, s.Env = put(s.Run, vars), put(s.Dir, vars), putMap(s.Env)
		s.Ready.HTTP, s.Ready.Log = put(s.Ready.HTTP, vars), put(s.Ready.Log, vars)
		if s.Metrics != nil {
			m := *s.Metrics
			m.URL = put(m.URL, vars)
			s.Metrics = &m
		}
		ps.Service = &s
		ps.Sweep = nil
	}
	return ps
}
