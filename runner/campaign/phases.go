package campaign

// Resolving a phase, its steps or service, and what makes its work the
// same work (its hash) from the file as written.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

func merge(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func hashOf(v ...any) string {
	h := sha256.New()
	for _, x := range v {
		b, _ := json.Marshal(x)
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// workHash identifies what a phase does, so that a changed definition runs
// it again: its commands, their folders and environments, what it needs
// and which GPUs it uses. What only names, predicts or judges the work
// (titles, names, estimates, gates, timeouts, retries, expectations,
// result and progress patterns, artifacts) is left out: fixing a title or
// a guess must not cost a re-run of a 36-minute load. Results are read
// again with the current patterns and checked against the current
// expectations when a finished phase is restored.
//
// Where it runs is part of the work when it runs as Slurm jobs: another
// partition, node count or GPU count is another measurement (the time
// limit and account are not).
func workHash(ps PhaseSpec, env map[string]string, sl *Slurm) string {
	type cmd struct {
		Run, Dir string
		Env      map[string]string
	}
	work := struct {
		Needs   []string
		GPUs    []int
		Env     map[string]string
		Steps   []cmd
		Service *cmd
		Sweep   SweepSpec   `json:",omitempty"` // the grid is the work; its noise limit and until are not
		Repeat  *RepeatSpec `json:",omitempty"` // repeat: N encodes as the number it always did
		Order   string      `json:",omitempty"`
		Search  any         `json:",omitempty"` // its grid: axis, range, resolution (not its SLO, which judges the same runs)
	}{Needs: ps.Needs, GPUs: ps.GPUs.List, Env: ps.Env, Sweep: ps.Sweep, Repeat: ps.Repeat, Order: ps.Order}
	if sp := ps.Search; sp != nil {
		work.Search = []any{sp.Axis, sp.Range, sp.Resolution, sp.MaxRepeats}
	}
	if ps.GPUs.None {
		work.GPUs = []int{-1} // none: its own work, distinct from every list
	}
	for _, st := range ps.Steps {
		work.Steps = append(work.Steps, cmd{st.Run, st.Dir, st.Env})
	}
	if ps.Service != nil {
		work.Service = &cmd{ps.Service.Run, ps.Service.Dir, ps.Service.Env}
	}
	if sl != nil {
		where := struct {
			Partition   string
			Nodes, GPUs int
			Args        []string
			Groups      []SlurmGroup `json:",omitempty"`
		}{sl.Partition, sl.Nodes, sl.GPUsPerNode, sl.Args, sl.Groups}
		return hashOf(work, env, where)
	}
	return hashOf(work, env)
}

// phase resolves ps, written at the file's phase i (a swept service's
// copies are all written there).
func (l *loader) phase(plan *Plan, spec *CampaignSpec, ps PhaseSpec, i int, slurmDef *Slurm) *Phase {
	at := func(k string) string { return fmt.Sprintf("$.phases[%d]%s", i, k) }
	ph := &Phase{ID: strings.TrimSpace(ps.ID), Title: ps.Title, Needs: ps.Needs, Retries: ps.Retries, GPUs: ps.GPUs.List}
	switch {
	case ph.ID == "":
		l.add(at(""), fmt.Sprintf("phase %d has no id", i+1), "add `id: short-name`; other phases refer to it in needs")
	case !idPattern.MatchString(ph.ID):
		l.add(at(".id"), fmt.Sprintf("phase id %q may use only letters, digits, '.', '_' and '-'", ph.ID), "ids name files and markers; rename it, e.g. `id: gemm-sweep`")
	}
	switch ps.Gate {
	case "", "auto":
	case "manual":
		ph.Manual = true
	default:
		l.add(at(".gate"), fmt.Sprintf("gate %q is not manual or auto", ps.Gate), "use `gate: manual` to wait for a person's greenlight")
	}
	seen := map[int]bool{}
	for j, g := range ps.GPUs.List {
		p := at(fmt.Sprintf(".gpus[%d]", j))
		switch {
		case g < 0:
			l.add(p, fmt.Sprintf("GPU index %d is negative", g), "GPU indices start at 0, as nvidia-smi numbers them")
		case spec.GPUs.Count > 0 && g >= spec.GPUs.Count:
			l.add(p, fmt.Sprintf("GPU index %d is past the campaign's %d GPUs", g, spec.GPUs.Count), fmt.Sprintf("use indices 0 to %d", spec.GPUs.Count-1))
		case seen[g]:
			l.add(p, fmt.Sprintf("GPU %d is listed twice", g), "")
		}
		seen[g] = true
	}
	switch {
	case ps.GPUs.None:
		ph.GPUs = []int{} // holds none
	case ps.GPUs.Given && len(ps.GPUs.List) == 0:
		l.add(at(".gpus"), "gpus: [] names no GPU", "write `gpus: none` for a phase that uses no GPU (it never queues for one), or leave gpus: out for every GPU")
	}
	ph.Estimate = l.dur(at(".estimate"), ps.Estimate)
	ph.Timeout = l.dur(at(".timeout"), ps.Timeout)
	if ps.Retries < 0 {
		l.add(at(".retries"), "retries must be zero or more", "")
	}
	for j, g := range ps.Artifacts {
		if _, err := filepath.Match(g, ""); err != nil || strings.TrimSpace(g) == "" {
			l.add(at(fmt.Sprintf(".artifacts[%d]", j)), fmt.Sprintf("bad glob %q", g), "use shell globs such as traces/*.json.gz")
		} else if strings.Contains(g, "**") {
			// A glob's ** is one folder level, as *: out/** would match the
			// folders under out, never a file in them.
			l.add(at(fmt.Sprintf(".artifacts[%d]", j)), fmt.Sprintf("%q: ** matches one name, as * does, not folders at any depth", g), "name each level: out/*/*.json (and out/*.json for the files at the top)")
		}
		ph.Artifacts = append(ph.Artifacts, l.abs(plan.Dir, unmask(l.expand(at(fmt.Sprintf(".artifacts[%d]", j)), mask(g, ps.Sweep), spec.Env))))
	}
	var err error
	var col string
	if ph.Expect, col, err = parseExpects(ps.Expect); err != nil {
		l.add(at(".expect."+col), err.Error(), "")
	}
	ph.FailOnExpect = spec.FailOnExpect
	if ps.FailOnExpect != nil {
		ph.FailOnExpect = *ps.FailOnExpect
	}
	ph.Slurm = l.slurm(slurmDef, ps.Slurm, at(""))
	if ph.Slurm != nil && len(ps.GPUs.List) > 0 {
		l.add(at(".gpus"), "gpus: names GPUs of this machine, but the phase runs as a Slurm job, on the nodes Slurm gives it",
			"ask Slurm for GPUs with gpus_per_node: under slurm:, or add `slurm: off` to run the phase here")
	}
	ph.Hash, ph.LegacyHash = workHash(ps, spec.Env, ph.Slurm), hashOf(ps, spec.Env)
	if len(ps.Sweep) > 0 || ps.Repeat != nil {
		// The work of one unit: the phase without its grid's values, its
		// repeat count or its order. An edited grid with the same hash
		// keeps the units it had done (a unit is known by its values).
		unit := ps
		unit.Sweep, unit.Repeat, unit.Order = nil, nil, ""
		ph.UnitHash = workHash(unit, spec.Env, ph.Slurm)
	}
	env := merge(spec.Env, ps.Env)
	switch {
	case ps.Service != nil && len(ps.Steps) > 0:
		stepsLine, _ := l.pos(at(".steps"))
		serviceLine, _ := l.pos(at(".service"))
		hint := "a phase is either steps or one service; split it in two phases (if a `- id:` line went missing, put it back above the one that begins the second)"
		first := map[bool]string{true: "steps", false: "service"}[stepsLine < serviceLine]
		if next := l.keyAfterBlock(min(stepsLine, serviceLine), first); next > 0 && next < max(stepsLine, serviceLine) {
			hint = fmt.Sprintf("a phase is either steps or one service; split it in two phases: if a `- id:` line went missing, the second likely began at line %d, the first key after the %s block: put it back above that line", next, map[bool]string{true: "steps:", false: "service:"}[stepsLine < serviceLine])
		}
		l.add(at(".service"), fmt.Sprintf("phase %q has both steps (line %d) and a service (line %d)", ph.ID, stepsLine, serviceLine), hint)
	case ps.Service == nil && len(ps.Steps) == 0:
		// An empty steps: is where the steps went (their lines deleted).
		stepsLine, _ := l.pos(at(".steps"))
		if phaseLine, _ := l.pos(at("")); stepsLine > 0 && stepsLine != phaseLine {
			line, col := l.keyPos(at(".steps"), "steps")
			l.errs = append(l.errs, l.mk(line, col, fmt.Sprintf("phase %q: steps: lists no step", ph.ID), "write its steps under it, each `- run: command` on a line of its own, indented"))
			break
		}
		l.add(at(""), fmt.Sprintf("phase %q has neither steps nor a service", ph.ID), "add `steps:` with at least one `- run: command`")
	case ps.Service != nil:
		ph.Service = l.service(plan, ps.Service, at(".service"), env, ph)
	default:
		for j := range ps.Steps {
			ph.Steps = append(ph.Steps, l.step(plan, &ps.Steps[j], at(fmt.Sprintf(".steps[%d]", j)), j, env))
		}
	}
	l.better(&ps, ph, at)
	hasExpect := len(ph.Expect) > 0
	for _, st := range ph.Steps {
		hasExpect = hasExpect || len(st.Expect) > 0
	}
	if ph.Sweep = l.sweep(&ps, at, env, hasExpect); ph.Sweep != nil {
		l.expandSweep(plan, &ps, ph, at, env)
	}
	if pl := ps.Plot; pl != nil {
		l.plot(pl, ph, at)
	}
	if cs := ps.Capture; cs != nil {
		l.capture(cs, ph, at)
	}
	if rs := ps.Roofline; rs != nil {
		l.roofline(rs, ph, at)
	}
	if fs := ps.Floor; fs != nil {
		l.floorOf(fs, ph, plan.Dir, at)
	}
	return ph
}

// plot takes a sweep's plot:: curves along an axis (x an axis), or a
// trade-off of two metrics (x a metric).
func (l *loader) plot(pl *PlotSpec, ph *Phase, at func(string) string) {
	sw := ph.Sweep
	isAxis := func(n string) bool {
		return sw != nil && slices.ContainsFunc(sw.Axes, func(a Axis) bool { return a.Name == n })
	}
	switch {
	case sw == nil || len(sw.Axes) == 0:
		line, _ := l.pos(at(""))
		l.add(at(".plot"), fmt.Sprintf("plot: draws a sweep's points; this phase (line %d) has no sweep:", line), "remove plot:, or add sweep: axes")
	case l.axisSlipped(pl, ph, at):
	case strings.TrimSpace(pl.X) == "" || len(pl.Y) == 0 || slices.Contains(pl.Y, ""):
		l.add(at(".plot"), "plot: needs x: and y:, an axis and metrics, or two metrics", "write plot: {x: m, y: [tflops, time_ms]}, or plot: {x: tpot_ms, y: output_tok_s, label: concurrency}")
	case isAxis(pl.X):
		switch {
		case pl.Label != "":
			l.add(at(".plot.label"), "label: names the points of a trade-off chart (x a metric); with x an axis each line is a point of the other axes", "remove label:, or make x: a metric")
		case pl.Series != "" && (!isAxis(pl.Series) || pl.Series == pl.X):
			l.add(at(".plot.series"), fmt.Sprintf("series: %q is no other axis of the sweep", pl.Series), "name another of the sweep's axes, or leave series: out")
		default:
			ph.Curves = &Curves{X: pl.X, Y: pl.Y, Series: pl.Series, LogX: pl.LogX}
		}
	case len(pl.Y) > 1:
		l.add(at(".plot.y"), fmt.Sprintf("x: %q is no axis of the sweep, so this is a trade-off chart, which has one y:", pl.X), "give one metric as y:, or make x: one of the axes to draw curves")
	case pl.Series != "" || pl.LogX != nil:
		l.add(at(".plot"), fmt.Sprintf("series: and log_x: are for curves along an axis; x: %q is no axis of the sweep", pl.X), "make x: an axis, or remove series: and log_x:")
	case pl.Label != "" && !isAxis(pl.Label):
		l.add(at(".plot.label"), fmt.Sprintf("label: %q is no axis of the sweep", pl.Label), "name one of the sweep's axes, or leave label: out")
	default:
		ph.Plot = &Plot{X: pl.X, Y: pl.Y[0], Label: pl.Label}
	}
}

// axisSlipped says, when plot:'s x: is no axis but one slip from one and
// the steps name ${x} too, the axis as the slip, at its line: two names
// that agree outvote the one that differs. The edit renames the axis.
func (l *loader) axisSlipped(pl *PlotSpec, ph *Phase, at func(string) string) bool {
	x := strings.TrimSpace(pl.X)
	if x == "" || slices.ContainsFunc(ph.Sweep.Axes, func(a Axis) bool { return a.Name == x }) {
		return false
	}
	near := nearestExact(x, ph.Sweep.axes())
	if near == "" || !slices.ContainsFunc(ph.Steps, func(s *Step) bool { return strings.Contains(s.Run, "${"+x+"}") }) {
		return false
	}
	line, col := l.keyPos(at(".sweep."+near), near)
	xl, _ := l.pos(at(".plot.x"))
	e := l.mk(line, col, fmt.Sprintf("axis %q: plot: (line %d) and the steps name ${%s}, one slip from it", near, xl, x), fmt.Sprintf("rename the axis %s", x))
	if fix := l.renamed(line, col, near, x); fix != nil && !l.probe {
		if _, ok := l.loadsFixed(fix); ok { // (an axis may bear a key's name: batch, floor:'s)
			e.Fix = fix
		}
	}
	l.errs = append(l.errs, e)
	return true
}

// checkStepVars says each ${name} of the phase's steps and artifacts
// that names no axis of sw (checkVars).
func (l *loader) checkStepVars(ps *PhaseSpec, at func(string) string, sw *Sweep, env map[string]string) {
	for j, st := range ps.Steps {
		p := at(fmt.Sprintf(".steps[%d]", j))
		l.checkVars(p+".run", st.Run, sw, env)
		l.checkVars(p+".dir", st.Dir, sw, env)
		for k, v := range st.Env {
			l.checkVars(p+".env."+k, v, sw, env)
		}
		if st.Results != nil {
			l.checkVars(p+".results.regex", st.Results.Regex, sw, env)
		}
	}
	for j, g := range ps.Artifacts {
		l.checkVars(at(fmt.Sprintf(".artifacts[%d]", j)), g, sw, env)
	}
}

// expandSweep makes a sweep phase's steps: its steps as written, once per
// unit, the unit's values put in. The steps as written are checked once
// (their errors said once, not once per point).
func (l *loader) expandSweep(plan *Plan, ps *PhaseSpec, ph *Phase, at func(string) string, env map[string]string) {
	sw := ph.Sweep
	l.checkStepVars(ps, at, sw, env)
	if len(l.errs) > 0 || len(sw.Units) == 0 {
		return
	}
	quiet := &loader{name: l.name, raw: l.raw, lines: l.lines, file: l.file}
	var steps []*Step
	arts := map[string]bool{}
	var artifacts []string
	for ui := range sw.Units {
		u := &sw.Units[ui]
		vars := sw.TextVars(*u)
		uenv := merge(env, sw.Env(*u))
		for j := range ps.Steps {
			spec := ps.Steps[j]
			spec.Run, spec.Dir = put(spec.Run, vars), put(spec.Dir, vars)
			spec.Env = map[string]string{}
			for k, v := range ps.Steps[j].Env {
				spec.Env[k] = put(v, vars)
			}
			if r := ps.Steps[j].Results; r != nil {
				spec.Results = &ResultsSpec{Regex: put(r.Regex, vars), Format: r.Format}
			}
			st := quiet.step(plan, &spec, at(fmt.Sprintf(".steps[%d]", j)), len(steps), uenv)
			if len(quiet.errs) > 0 {
				e := quiet.errs[0]
				e.Msg = fmt.Sprintf("at point %s: %s", sw.Key(*u), e.Msg)
				l.errs = append(l.errs, e)
				return
			}
			st.Unit = u
			st.Name = ph.Steps[j].Label()
			if sw.Search != nil {
				// Which units run is the search's to say: a place in the
				// grid would say nothing.
				st.Name += fmt.Sprintf(" · %s · run %d", sw.Key(*u), u.Repeat)
			} else if len(sw.Axes) > 0 {
				st.Name += fmt.Sprintf(" · point %d/%d (%s)", u.Point+1, sw.Points, sw.Key(*u))
			}
			if sw.Repeat > 1 && sw.Search == nil {
				st.Name += fmt.Sprintf(" · repeat %d/%d", u.Repeat, sw.Repeat)
			}
			steps = append(steps, st)
		}
		for j, g := range ps.Artifacts {
			if a := put(ph.Artifacts[j], vars); !arts[a] && strings.Contains(g, "${") {
				arts[a] = true
				artifacts = append(artifacts, a)
			}
		}
	}
	ph.Steps = steps
	if len(artifacts) > 0 {
		var kept []string
		for j, g := range ps.Artifacts {
			if !strings.Contains(g, "${") {
				kept = append(kept, ph.Artifacts[j])
			}
		}
		ph.Artifacts = append(kept, artifacts...)
	}
}

// mask hides a sweep's ${axis} from the expansion of environment
// variables: each point puts its own values in (expandSweep).
func mask(s string, sw SweepSpec) string {
	for _, it := range sw {
		s = strings.ReplaceAll(s, "${"+fmt.Sprint(it.Key)+"}", "\x00{"+fmt.Sprint(it.Key)+"}")
		s = strings.ReplaceAll(s, "${"+fmt.Sprint(it.Key)+".", "\x00{"+fmt.Sprint(it.Key)+".")
	}
	return s
}

func unmask(s string) string { return strings.ReplaceAll(s, "\x00{", "${") }

func (l *loader) step(plan *Plan, s *StepSpec, at string, idx int, env map[string]string) *Step {
	st := &Step{Index: idx, Name: s.Name, Run: s.Run, AllowFailure: s.AllowFailure, LeaveRunning: s.LeaveRunning}
	if strings.TrimSpace(s.Run) == "" {
		l.add(at+".run", "the step has no command to run", "give `run:` a shell command, e.g. `run: python3 bench.py`")
	}
	st.Dir = l.abs(plan.Dir, l.expand(at+".dir", s.Dir, env))
	st.Env = merge(env, s.Env)
	st.Estimate = l.dur(at+".estimate", s.Estimate)
	st.Timeout = l.dur(at+".timeout", s.Timeout)
	st.WaitQuiet = l.dur(at+".wait_quiet", s.WaitQuiet)
	st.Progress = l.re(at+".progress", s.Progress, false)
	if st.Progress != nil && st.Progress.NumSubexp() == 0 {
		l.add(at+".progress", "progress regex has no group", `capture a percent, (\d+)%, or n and total, (\d+)/(\d+)`)
	}
	if s.Results != nil {
		switch f := s.Results.Format; {
		case f != "" && !slices.Contains(ServingFormats, f) && f != FormatNCCLTests && f != FormatNVBandwidth:
			l.add(at+".results.format", fmt.Sprintf("unknown results format %q", f), "use format: vllm-bench, aiperf, guidellm, nccl-tests or nvbandwidth, or a regex")
		case f != "" && s.Results.Regex != "":
			l.add(at+".results", "results has both a format and a regex", "keep one: format: vllm-bench reads `vllm bench serve`'s result block itself")
		case f != "":
			st.ResultsFormat = f
		case s.Results.Regex == "":
			l.add(at+".results", "results has no regex", `add regex: 'tok/s:\s+(?P<tok_s>[\d.]+)', or format: vllm-bench`)
		default:
			st.Results = l.re(at+".results.regex", s.Results.Regex, true)
		}
	}
	var err error
	var col string
	if st.Expect, col, err = parseExpects(s.Expect); err != nil {
		l.add(at+".expect."+col, err.Error(), "")
	}
	st.Key = hashOf(s.Run, st.Dir, st.Env)
	return st
}

func (l *loader) service(plan *Plan, s *ServiceSpec, at string, env map[string]string, ph *Phase) *Service {
	sv := &Service{}
	sv.Step = *l.step(plan, &StepSpec{Name: "service", Run: s.Run, Dir: s.Dir, Env: s.Env, Estimate: s.Estimate, Progress: s.Progress}, at, 0, env)
	if sv.Estimate == 0 {
		sv.Estimate = ph.Estimate
	}
	// ${GREENLIGHT_NODE} is where the service runs: kept as written for a
	// Slurm job, expanded once the job has a node; localhost otherwise.
	node := "localhost"
	if ph.Slurm != nil {
		node = NodeVar
	}
	sv.ReadyHTTP = l.expand(at+".ready.http", s.Ready.HTTP, merge(env, map[string]string{"GREENLIGHT_NODE": node}))
	if s.Ready.HTTP != "" {
		if err := checkURL(strings.ReplaceAll(sv.ReadyHTTP, NodeVar, "node")); err != nil {
			l.add(at+".ready.http", err.Error(), "write a full URL such as http://localhost:8000/health")
		}
	}
	if m := s.Metrics; m != nil {
		sv.MetricsURL = l.expand(at+".metrics.url", m.URL, merge(env, map[string]string{"GREENLIGHT_NODE": node}))
		if err := checkURL(strings.ReplaceAll(sv.MetricsURL, NodeVar, "node")); err != nil {
			l.add(at+".metrics.url", err.Error(), "write the server's metrics URL, e.g. http://localhost:8000/metrics")
		}
		sv.MetricsSeries = m.Series
	}
	// model: ${MODEL_DIR} with MODEL_DIR unset (a validate before the
	// night's run) is no error: the command says so when it starts, and
	// the load goes unmeasured.
	if m, ok := expandSet(s.Model, env); s.Model != "" && ok {
		sv.Model = l.abs(plan.Dir, m)
	} else if s.Model != "" {
		sv.ModelUnset = s.Model
		// Unless the name unset is one slip from one env: sets: that is
		// a typo, and the night's load would go unmeasured for it.
		l.slippedVars(at+".model", s.Model, env)
	}
	if sv.Prewarm = s.Prewarm; s.Prewarm && s.Model == "" {
		l.add(at+".prewarm", "prewarm: reads the model's folder into the page cache, and this service names none",
			"add model: ${MODEL_DIR}, the folder the server loads")
	}
	sv.ReadyLog = l.re(at+".ready.log", s.Ready.Log, false)
	if s.Ready.HTTP == "" && s.Ready.Log == "" {
		l.addMissing(at, missingKey{key: "ready", msg: "the service has no readiness check", hint: `add ready: {http: "http://localhost:8000/health"} or {log: "Application startup complete"}`,
			after: "run", children: []string{"http", "log", "timeout"}})
	}
	sv.ReadyTimeout = l.dur(at+".ready.timeout", s.Ready.Timeout)
	sv.StopTimeout = l.dur(at+".stop_timeout", s.StopTimeout)
	sv.Keep = -1
	if s.Keep != "" {
		sv.Keep = l.dur(at+".keep", s.Keep)
	}
	for j, sg := range s.Stages {
		p := fmt.Sprintf("%s.stages[%d]", at, j)
		if sg.Name == "" {
			l.add(p, "stage has no name", "")
		}
		if sg.Share < 0 || sg.Share > 1 {
			l.add(p+".share", "share is a fraction of the start-up, from 0 to 1", "")
		}
		re := l.re(p+".log", sg.Log, false)
		if sg.Log == "" {
			l.add(p, "stage has no log regex", "a stage is recognised by the first log line it matches")
		}
		sv.Stages = append(sv.Stages, Stage{Name: sg.Name, Log: re, Share: sg.Share})
	}
	return sv
}

// SafeName is a name made safe for a file name: what is not a letter,
// digit, -, _ or . becomes -.
func SafeName(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '-'
	}, s)
	if s == "" {
		s = "campaign"
	}
	return s
}

// keyAfterBlock is the first key line after the block of key name (at
// or above line n, where its value begins) at the key's own indentation
// (the mapping's next key), 0 when the mapping ends there or the file
// does.
func (l *loader) keyAfterBlock(n int, name string) int {
	for n >= 1 && n <= len(l.lines) {
		if m := keyLine.FindStringSubmatch(l.lines[n-1]); m != nil && m[3] == name {
			break
		}
		n--
	}
	if n < 1 || n > len(l.lines) {
		return 0
	}
	ind := indentOf(l.lines[n-1])
	for j := n + 1; j <= len(l.lines); j++ {
		src := l.lines[j-1]
		if t := strings.TrimSpace(src); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		switch d := indentOf(src); {
		case d > ind:
			continue
		case d == ind && keyLine.MatchString(src) && !strings.HasPrefix(strings.TrimSpace(src), "-"):
			return j
		}
		return 0
	}
	return 0
}
