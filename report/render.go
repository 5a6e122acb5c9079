package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"

	"github.com/greenlight-run/greenlight/compare"
	"github.com/greenlight-run/greenlight/conditions"
	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/internal/format"
	"github.com/greenlight-run/greenlight/internal/safe"
	"github.com/greenlight-run/greenlight/results"
	"github.com/greenlight-run/greenlight/runner"
)

// Env is what the header says of where the campaign runs.
type Env struct {
	Host      string
	Inventory gpu.Inventory
	Hosts     []gpu.HostState // remote hosts, through dcgm-exporter
	// Conditions is what the campaign ran under (not kept in the
	// environment file: the state dir's conditions.json is its own).
	Conditions *conditions.Book `json:"-"`
}

const timeFmt = "2006-01-02 15:04:05 MST"

func statusWord(p runner.PhaseState) string {
	if p.Doubtful() {
		return "⚠ done"
	}
	switch p.Status {
	case runner.Done:
		return "✅ done"
	case runner.Failed:
		return "❌ failed"
	case runner.Running:
		return "⏳ running"
	case runner.Ready:
		return "🟢 ready (serving)"
	case runner.Waiting:
		return "⏸ waiting for greenlight"
	case runner.Skipped:
		return "⏭ skipped"
	case runner.Blocked:
		return "⛔ blocked"
	case runner.Stopped:
		return "⏹ stopped"
	}
	return "· pending"
}

func campaignStatus(st *runner.State) string {
	switch h := st.Headline(); h {
	case runner.HeadFailed:
		return fmt.Sprintf("failed (%d phase(s) failed)", st.FailedPhases())
	case runner.HeadStopped:
		return "stopped (by you; `greenlight run` resumes it)"
	case runner.HeadPaused:
		return "paused (" + st.PauseWhy + ")"
	default:
		return string(h)
	}
}

func etaText(e runner.ETA) string {
	if e.Waiting && e.Known {
		return e.Text() + " + waiting for you"
	}
	return e.Text()
}

// header renders the header block.
func header(plan *campaign.Plan, st *runner.State, model *results.Model, env Env, remade, undrawn []string, cmp *compare.Result, keyExtras func(runner.PhaseState) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Campaign:** %s · **Status:** %s · **Started:** %s", plan.Name, campaignStatus(st), st.Started.Format(timeFmt))
	if st.Finished && !st.Ended.IsZero() {
		fmt.Fprintf(&b, " · **Ended:** %s · **Elapsed:** %s", st.Ended.Format(timeFmt), format.Duration(st.Ended.Sub(st.Started)))
	} else {
		fmt.Fprintf(&b, " · **Elapsed:** %s (as of %s)", format.Duration(st.Now.Sub(st.Started)), st.Now.Format("15:04:05"))
	}
	if w := st.WaitsOnKept(); w != "" && !st.Finished {
		fmt.Fprintf(&b, " · **Waits for you:** %s", cell(w))
	} else if !st.Finished {
		fmt.Fprintf(&b, " · **ETA:** %s", etaText(st.ETA))
	}
	fmt.Fprintf(&b, "\n\n**Campaign file:** `%s` (sha256 `%.12s`) · **Host:** %s\n\n", plan.File, plan.Hash, env.Host)
	inv := env.Inventory
	if len(inv.Devices) == 0 {
		why := inv.Why
		if why == "" {
			why = "no GPU source"
		}
		fmt.Fprintf(&b, "**GPUs:** no GPU (%s)\n\n", why)
	} else {
		fmt.Fprintf(&b, "**GPUs:** %d · driver %s · CUDA %s · source %s\n\n", len(inv.Devices), orNA(inv.Driver), orNA(inv.CUDA), inv.Source)
		b.WriteString("| GPU | Name | Memory | UUID |\n|---:|---|---:|---|\n")
		for _, d := range inv.Devices {
			fmt.Fprintf(&b, "| %s | %s | %.0f GiB | %s |\n", cell(d.Label()), cell(d.Name), float64(d.MemTotal)/(1<<30), cell(d.UUID))
		}
		b.WriteString("\n")
	}
	if len(env.Hosts) > 0 {
		b.WriteString("**Remote hosts** (dcgm-exporter)\n\n")
		for _, h := range env.Hosts {
			gpus := fmt.Sprintf("%d GPUs", h.GPUs)
			if h.GPUs == 1 {
				gpus = "1 GPU"
			}
			state := fmt.Sprintf("%s, driver %s, answering", gpus, orNA(h.Driver))
			if !h.Up {
				state = "not answering: " + h.Err
				if !h.LastSeen.IsZero() {
					state += ", last seen " + h.LastSeen.Format("15:04:05")
				}
			}
			fmt.Fprintf(&b, "- %s (`%s`): %s\n", cell(h.Name), h.URL, cell(state))
		}
		b.WriteString("\n")
	}
	b.WriteString(conditionsSection(env.Conditions))
	if cmp != nil {
		fmt.Fprintf(&b, "| Phase | Status | Duration | Key result | Δ vs %s |\n|---|---|---:|---|---|\n", cell(cmp.Old.Name))
	} else {
		b.WriteString("| Phase | Status | Duration | Key result |\n|---|---|---:|---|\n")
	}
	for _, p := range st.Phases {
		status := statusWord(p)
		if p.Reason != "" && p.Status != runner.Done {
			status += ": " + p.Reason
		} else if p.WaitReason != "" {
			status += ": " + p.WaitReason
		} else if p.Kept != "" {
			status += ": " + p.Kept
		}
		if p.LetGo {
			status += " (let go by you)"
		}
		if missed := p.ExpectFailed - len(p.Missing); missed > 0 {
			status += fmt.Sprintf(" · ✗ %d result(s) missed expectations", missed)
		}
		for _, m := range p.Missing {
			status += fmt.Sprintf(" · ✗ %s not produced", m.Column)
		}
		key, metric, step := keyOf(plan.Phase(p.ID), p, model.Phase(p.ID))
		if e := keyExtras(p); e != "" {
			key += " · " + e
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |", cell(p.Title), cell(status), duration(p, st.Now), cell(key))
		if cmp != nil {
			fmt.Fprintf(&b, " %s |", cell(deltaCell(cmp, plan.Phase(p.ID), p.ID, metric, step)))
		}
		b.WriteString("\n")
	}
	var warns []string
	for _, id := range remade {
		warns = append(warns, fmt.Sprintf("the block `%s` had a damaged or deleted marker; it was written again at the end of the file", id))
	}
	warns = append(warns, st.Warnings...)
	warns = append(warns, undrawn...)
	warns = append(warns, noisyLines(plan, st, model)...)
	if len(warns) > 0 {
		b.WriteString("\n**Warnings**\n\n")
		for _, w := range warns {
			b.WriteString("- ⚠ " + cell(w) + "\n")
		}
	}
	return b.String()
}

func orNA(s string) string { return firstOr(s, "n/a") }

// duration is a phase's running time, every run of it added and said
// ("38s over 2 runs"), "so far" while it runs.
func duration(p runner.PhaseState, now time.Time) string {
	switch {
	case p.Started.IsZero():
		return ""
	case p.Ended.IsZero():
		return runner.RunTimeWords(p, now) + " so far"
	}
	return runner.RunTimeWords(p, p.Ended)
}

// phaseView is what one phase's block shows: the phase as written, its
// state, and what the writer made of them beside the file.
type phaseView struct {
	ph       *campaign.Phase
	p        runner.PhaseState
	now      time.Time
	gpus     []gpu.Summary                          // its GPUs over the phase
	results  func(i int, s runner.StepState) string // step i's results table
	csv      string                                 // its full table beside the results file; "" without results
	charts   map[string]string                      // a sweep's charts, by metric
	gpuChart string                                 // its GPU chart's link; "" without one
	facts    func(i int) *runner.StepFacts          // step i's facts (its stamp), nil when none
	nodes    bool                                   // the campaign reads its Slurm jobs' nodes' GPUs (dcgm:slurm-nodes)
	res      *results.Phase                         // its results model
}

// phaseBlock renders one phase's block.
func phaseBlock(v phaseView) string {
	ph, p, now, gpus, results, csv, charts, gpuChart := v.ph, v.p, v.now, v.gpus, v.results, v.csv, v.charts, v.gpuChart
	stamps := func(i int) []string {
		if f := v.facts(i); f != nil {
			return f.Stamp
		}
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## %s (`%s`)\n\n", p.Title, p.ID)
	fmt.Fprintf(&b, "**Status:** %s", statusWord(p))
	if p.Reason != "" {
		fmt.Fprintf(&b, " — %s", p.Reason)
	} else if p.WaitReason != "" {
		fmt.Fprintf(&b, " — %s", p.WaitReason)
	} else if p.Kept != "" {
		fmt.Fprintf(&b, " — %s", p.Kept)
	}
	if p.LetGo {
		b.WriteString(" (let go by you)")
	}
	if !p.Started.IsZero() {
		fmt.Fprintf(&b, " · **Start:** %s", p.Started.Format(timeFmt))
	}
	if !p.Ended.IsZero() {
		fmt.Fprintf(&b, " · **End:** %s", p.Ended.Format(timeFmt))
	}
	if d := duration(p, now); d != "" {
		fmt.Fprintf(&b, " · **Duration:** %s", d)
	}
	if p.Attempt > 1 {
		fmt.Fprintf(&b, " · attempt %d", p.Attempt)
	}
	b.WriteString("\n")
	if len(ph.Needs) > 0 || ph.GPUs != nil {
		b.WriteString("\n")
		if len(ph.Needs) > 0 {
			fmt.Fprintf(&b, "Needs: %s.", strings.Join(ph.Needs, ", "))
			if ph.GPUs != nil {
				b.WriteString(" ")
			}
		}
		if ph.GPUs != nil {
			gpus := joinInts(ph.GPUs)
			if len(ph.GPUs) == 0 {
				gpus = "none"
			}
			fmt.Fprintf(&b, "GPUs: %s.", gpus)
		}
		b.WriteString("\n")
	}
	if sl := ph.Slurm; sl != nil {
		fmt.Fprintf(&b, "\nOn Slurm: %s.", cell(sl.String()))
		if p.Slurm != nil && p.Slurm.ID != "" {
			fmt.Fprintf(&b, " %s.", cell(p.Slurm.Words(now)))
		}
		b.WriteString("\n")
	}
	steps := ph.AllSteps()
	if ph.Sweep != nil && ph.Sweep.Search != nil {
		b.WriteString(searchBlock(ph, v.res, charts)) // every run's row is in the CSV
	} else if ph.Sweep != nil {
		b.WriteString(sweepTablesOf(ph, v.res, charts)) // every repeat's row is in the CSV
	} else {
		for i, s := range p.Steps {
			if len(s.Results) == 0 {
				continue
			}
			fmt.Fprintf(&b, "\n### Results: step %d, %s\n\n", i+1, cell(steps[i].Label()))
			b.WriteString(results(i, s))
			if st := stamps(i); len(st) > 0 {
				fmt.Fprintf(&b, "\n⚠ Taken under bad conditions: %s.\n", cell(strings.Join(st, "; ")))
			}
		}
	}
	if csv != "" {
		fmt.Fprintf(&b, "\nThe full table of the phase, every row and column: [%s](%s).\n", csv, csv)
	}
	expectations(&b, ph, p)
	for i, s := range p.Steps {
		if strings.TrimSpace(s.Summary) == "" {
			continue
		}
		fmt.Fprintf(&b, "\n### Summary: step %d, %s\n\n", i+1, cell(steps[i].Label()))
		b.WriteString(strings.TrimRight(safe.Text(s.Summary, safe.Summary), "\n") + "\n")
	}
	sampled := 0
	for _, g := range gpus {
		if g.Samples > 0 {
			sampled++
		}
	}
	if ph.Slurm != nil && len(gpus) == 0 && v.nodes {
		b.WriteString("\n### GPUs during the phase\n\nNo reading of its job's nodes fell within the phase: their exporters are scraped while the job runs, and it ended before one answered.\n")
	} else if ph.Slurm != nil && len(gpus) == 0 {
		b.WriteString("\n### GPUs during the phase\n\nIts jobs ran on the cluster's nodes, whose GPUs greenlight does not read: add `dcgm:slurm-nodes:9400` to `gpus.sources` to scrape the dcgm-exporter of each node a job runs on.\n")
	} else if len(gpus) > 0 && sampled == 0 {
		b.WriteString("\n### GPUs during the phase\n\nNo GPU reading fell within the phase (it was shorter than the sampling interval).\n")
	}
	if sampled > 0 {
		b.WriteString("\n### GPUs during the phase\n\n")
		b.WriteString("| GPU | Mean util | Peak util | Peak memory | Mean power | Peak power | Energy | Peak temp | Throttle |\n|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
		var energy float64
		var counted int
		from := "each GPU's energy counter at the phase's start and end, summed"
		for _, g := range gpus {
			if g.Samples == 0 {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", cell(g.Device.Label()),
				unit(g.MeanUtil, "%.0f %%"), unit(g.PeakUtil, "%.0f %%"), unit(g.PeakMem, "%.1f GiB"),
				unit(g.MeanPower, "%.0f W"), unit(g.PeakPower, "%.0f W"), energyText(g.EnergyWh), unit(g.PeakTemp, "%.0f °C"), cell(strings.Join(g.Throttle, ", ")))
			if g.EnergyWh >= 0 {
				energy += g.EnergyWh
				counted++
				if g.EnergyFrom != "counter" {
					from = "each GPU's energy counter where it has one, else its power readings times the sampling interval, summed"
				}
			}
		}
		if counted > 1 {
			fmt.Fprintf(&b, "\nEnergy of the phase's GPUs: %s in all (%d GPUs; %s).\n", energyText(energy), counted, from)
		}
		b.WriteString(gpuChart)
	}
	b.WriteString(artifactsSection(p))
	b.WriteString(processes(p.Steps, steps))
	var warns []string
	for _, g := range gpus {
		warns = append(warns, gpuProcessWarnings(ph, p, g)...)
		if g.Lost {
			warns = append(warns, fmt.Sprintf("GPU %s stopped answering during the phase", g.Device.Label()))
		}
		if len(g.XIDs) > 0 {
			warns = append(warns, fmt.Sprintf("GPU %s reported XID error(s) %s during the phase (see `dmesg` on %s)", g.Device.Label(), joinInts(g.XIDs), firstOr(g.Device.Host, "this machine")))
		}
	}
	warns = append(warns, stampWarnings(ph, p, stamps)...)
	warns = append(warns, partlySeen(ph, p, v.facts)...)
	if p.WasFrozen {
		warns = append(warns, "a step was frozen (SIGSTOP) during the phase: its timings include the pause")
	}
	if p.Retried > 0 {
		warns = append(warns, fmt.Sprintf("%d step run(s) failed and were retried", p.Retried))
	}
	if p.Readopted {
		warns = append(warns, "re-adopted after a restart of greenlight: the step was not run again")
	}
	if p.Changed {
		warns = append(warns, "the phase's definition changed since an earlier run")
	}
	for _, s := range p.Steps {
		if len(s.Left) > 0 {
			warns = append(warns, leftWords(s, gpus))
		}
	}
	for _, s := range p.Steps {
		if s.Status == runner.Failed && s.Reason != "" {
			warns = append(warns, fmt.Sprintf("step %d %s: %s (log: `%s`)", s.Index+1, s.Name, s.Reason, s.Log))
		}
	}
	if len(warns) > 0 {
		b.WriteString("\n### Warnings\n\n")
		for _, w := range warns {
			b.WriteString("- ⚠ " + cell(w) + "\n")
		}
	}
	return b.String()
}

// energyText is an energy in Wh, or kWh from 10 kWh.
func energyText(wh float64) string {
	switch {
	case wh < 0:
		return "n/a"
	case wh >= 10000:
		return fmt.Sprintf("%.1f kWh", wh/1000)
	case wh >= 10:
		return fmt.Sprintf("%.0f Wh", wh)
	}
	return fmt.Sprintf("%.2f Wh", wh)
}

func unit(v float64, f string) string {
	if v < 0 {
		return "n/a"
	}
	return fmt.Sprintf(f, v)
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}

func firstOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// expectations lists each expected result with its verdict; one never
// produced is a failed expectation, never a silent pass.
func expectations(b *strings.Builder, ph *campaign.Phase, p runner.PhaseState) {
	type verdict struct{ pass, fail int }
	var all []campaign.Expect
	all = append(all, ph.Expect...)
	for _, s := range ph.AllSteps() {
		all = append(all, s.Expect...)
	}
	if len(all) == 0 {
		return
	}
	seen := map[string]*verdict{}
	for _, s := range p.Steps {
		for _, r := range s.Results {
			for _, ch := range r.Checks {
				k := ch.Expect.Column + " " + ch.Expect.String()
				if seen[k] == nil {
					seen[k] = &verdict{}
				}
				if ch.Pass {
					seen[k].pass++
				} else {
					seen[k].fail++
				}
			}
		}
	}
	missing := map[string]bool{}
	for _, m := range p.Missing {
		missing[m.Column+" "+m.String()] = true
	}
	b.WriteString("\n### Expectations\n\n")
	for _, e := range all {
		k := e.Column + " " + e.String()
		v := seen[k]
		switch {
		case missing[k]:
			fmt.Fprintf(b, "- ✗ `%s` %s: not produced\n", e.Column, e.String())
		case v == nil && p.Status.Finished():
			fmt.Fprintf(b, "- · `%s` %s: not checked (the phase did not finish its steps)\n", e.Column, e.String())
		case v == nil:
			fmt.Fprintf(b, "- · `%s` %s: no result yet\n", e.Column, e.String())
		case v.fail > 0:
			fmt.Fprintf(b, "- ✗ `%s` %s: %d of %d result(s) missed\n", e.Column, e.String(), v.fail, v.pass+v.fail)
		default:
			fmt.Fprintf(b, "- ✓ `%s` %s: %d of %d result(s) met\n", e.Column, e.String(), v.pass, v.pass+v.fail)
		}
	}
}

// artifactsSection lists the phase's files: those its steps claimed in
// this attempt (a deleted one said so, one of a step's try since retried
// said so), then those of its earlier attempts under their own heading (a
// retried phase's failed run wrote them: they are not this attempt's
// results), then the files its artifacts: match that are not its, with
// why (another phase's run, or no step's).
func artifactsSection(p runner.PhaseState) string {
	if len(p.Artifacts) == 0 && len(p.Unclaimed) == 0 {
		return ""
	}
	var now, earlier []runner.Artifact
	for _, a := range p.Artifacts {
		if at, _, _, ok := runner.StepRunOf(a.Step); ok && p.Attempt > 0 && at < p.Attempt {
			earlier = append(earlier, a)
		} else {
			now = append(now, a)
		}
	}
	var b strings.Builder
	b.WriteString("\n### Artifacts\n\n")
	listArtifacts(&b, now, func(a runner.Artifact) string {
		at, step, try, ok := runner.StepRunOf(a.Step)
		if !ok || at != p.Attempt || step > len(p.Steps) || p.Steps[step-1].Attempt <= try {
			return ""
		}
		return fmt.Sprintf(" · step %d's try %d, retried", step, try)
	})
	if len(earlier) > 0 {
		fmt.Fprintf(&b, "\nFrom earlier attempts of this phase (this is attempt %d; their files are not its results):\n\n", p.Attempt)
		listArtifacts(&b, earlier, func(a runner.Artifact) string {
			at, step, try, _ := runner.StepRunOf(a.Step)
			return fmt.Sprintf(" · attempt %d, step %d, try %d", at, step, try)
		})
	}
	if len(p.Unclaimed) > 0 {
		b.WriteString("\nMatched by its `artifacts:` but not this phase's (a file is the one step's during whose run it was written):\n\n")
		for _, u := range p.Unclaimed {
			fmt.Fprintf(&b, "- `%s`: %s\n", safe.Line(u.Path, safe.Value), u.Why)
		}
	}
	return b.String()
}

// listArtifacts writes one line a file, with what run made it where that
// is worth saying (of), and their total.
func listArtifacts(b *strings.Builder, arts []runner.Artifact, of func(runner.Artifact) string) {
	var total int64
	n := 0
	for _, a := range arts {
		if a.Gone {
			fmt.Fprintf(b, "- `%s`: %s, deleted since%s\n", safe.Line(a.Path, safe.Value), format.Bytes(uint64(a.Size)), of(a))
			continue
		}
		total += a.Size
		n++
		fmt.Fprintf(b, "- `%s`: %s%s\n", safe.Line(a.Path, safe.Value), format.Bytes(uint64(a.Size)), of(a))
	}
	if n > 1 {
		fmt.Fprintf(b, "- total: %s in %d files\n", format.Bytes(uint64(total)), n)
	}
}
