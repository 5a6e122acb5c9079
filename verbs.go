package main

// The verbs a script, a cron job or an agent drives a campaign with: each
// is a short-lived client of the campaign's runner.

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/greenlight-run/greenlight/client"
	"github.com/greenlight-run/greenlight/internal/safe"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/link"
	"github.com/greenlight-run/greenlight/runner/state"
)

// isGate says the command opens gates: it names phases as a campaign
// names them (approve decode: every copy of a phase run per service point).
func isGate(command string) bool {
	v, ok := state.Typed(command)
	return ok && v.Gate()
}

// verbArgs parses [--state-dir DIR] CAMPAIGN [PHASE...] and loads the plan.
func verbArgs(name string, args []string, stderr io.Writer, follow *bool, point *string) (plan *campaign.Plan, stateDir string, rest []string, code int) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("state-dir", "", "")
	if point != nil {
		fs.StringVar(point, "point", "", "")
	}
	if follow != nil {
		fs.BoolVar(follow, "f", false, "")
		fs.BoolVar(follow, "follow", false, "")
	}
	pos, err := parseAnywhere(fs, args)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight %s: %v\n\n%s", name, err, commandHelp[name])
		return nil, "", nil, exitUsage
	}
	if len(pos) == 0 {
		fmt.Fprint(stderr, commandHelp[name])
		return nil, "", nil, exitUsage
	}
	plan, ok := loadPlan(pos[0], stderr)
	if !ok {
		return nil, "", nil, exitUsage
	}
	cfg := link.Config{StateDir: *dir}
	if err := locate(plan, &cfg, stderr); err != nil {
		fmt.Fprintf(stderr, "greenlight %s: %v\n", name, err)
		return nil, "", nil, exitUsage
	}
	stateDir = cfg.StateDir
	var ids []string // approve decode: every copy of a phase run per service point
	for _, id := range pos[1:] {
		if err := plan.CheckPhaseID(id); err != nil && (!isGate(name) || plan.Named(id) == nil) {
			fmt.Fprintf(stderr, "greenlight %s: %v\n", name, err)
			return nil, "", nil, exitUsage
		}
		ids = append(ids, plan.Named(id)...)
	}
	return plan, stateDir, ids, exitOK
}

// cmdControl is approve, pause, resume, skip, retry and stop: what each
// takes (phases, a --point, a gate) is its row of the verbs' one table.
func cmdControl(name string, args []string, stdout, stderr io.Writer) int {
	verb, _ := state.Typed(name)
	var point string
	var pointFlag *string
	if verb.WithPoint() != "" {
		pointFlag = &point
	}
	plan, stateDir, phases, code := verbArgs(name, args, stderr, nil, pointFlag)
	if plan == nil {
		return code
	}
	switch {
	case verb.Gate():
		if len(phases) == 0 {
			fmt.Fprintf(stderr, "greenlight %s: give the phases whose gates to open\n\n%s", name, commandHelp[name])
			return exitUsage
		}
		for _, id := range phases {
			if ph := plan.Phase(id); ph != nil && !ph.Manual {
				fmt.Fprintf(stderr, "greenlight %s: %s has no gate to open (no `gate: manual` in %s): it runs when its needs are met\n", name, id, plan.File)
				return exitUsage
			}
		}
	case verb.TakesPhase():
		if len(phases) != 1 {
			fmt.Fprintf(stderr, "greenlight %s: give one phase\n\n%s", name, commandHelp[name])
			return exitUsage
		}
	default:
		if len(phases) != 0 {
			fmt.Fprintf(stderr, "greenlight %s: takes no phase\n\n%s", name, commandHelp[name])
			return exitUsage
		}
		phases = []string{""}
	}
	if point != "" { // one point of a sweep, not the phase
		if err := runner.CheckPoint(plan.Phase(phases[0]), point); err != nil {
			fmt.Fprintf(stderr, "greenlight %s: %v\n", name, err)
			return exitUsage
		}
		verb, phases = verb.WithPoint(), []string{state.PointTarget(phases[0], point)}
	}
	if taken, code := client.TakeIfStopped(runner.Journal{}, name, verb, phases, plan, stateDir, stdout, stderr); taken {
		return code
	}
	target := phases[0] // what a retry may start a finished campaign's runner for
	c, retried, code := client.ReachFor(runner.Journal{}, name, verb, target, plan, stateDir, stdout, stderr)
	if c == nil {
		return code
	}
	defer c.Close()
	if retried {
		fmt.Fprintf(stdout, "greenlight: %s: queued to run again (a new attempt); its runner runs it now and ends after (`greenlight run %s` attaches to watch)\n", target, plan.File)
		return exitOK
	}
	if verb == state.VerbResume {
		// Resume undoes a freeze too: that is what a person who says
		// "resume" from another shell means.
		if st := c.First.State; st != nil && st.Frozen {
			if _, err := c.Request(state.VerbThaw, ""); err != nil {
				fmt.Fprintf(stderr, "greenlight resume: %v\n", err)
				return exitFailed
			}
		}
	}
	for _, id := range phases {
		if _, err := c.Request(verb, id); err != nil {
			fmt.Fprintf(stderr, "greenlight %s: %v\n", name, err)
			return client.RequestExit(err)
		}
		fmt.Fprintf(stdout, "greenlight: %s\n", state.Said(verb, id))
	}
	return exitOK
}

// cmdLogs prints the steps' logs, and with -f follows them.
func cmdLogs(args []string, stdout, stderr io.Writer) int {
	var follow bool
	plan, stateDir, phases, code := verbArgs("logs", args, stderr, &follow, nil)
	if plan == nil {
		return code
	}
	if len(phases) > 1 {
		fmt.Fprintf(stderr, "greenlight logs: give at most one phase\n\n%s", commandHelp["logs"])
		return exitUsage
	}
	phase := ""
	if len(phases) == 1 {
		phase = phases[0]
	}
	var st *runner.State
	var c *link.Client
	if cl, err := link.Dial(stateDir); err == nil {
		c, st = cl, cl.First.State
		defer c.Close()
	} else if client.HasJournal(stateDir) {
		if st, err = runner.Replay(plan, stateDir); err != nil {
			fmt.Fprintf(stderr, "greenlight logs: %v\n", err)
			return exitFailed
		}
	} else {
		fmt.Fprintf(stderr, "greenlight logs: %s has not run here (no journal in %s): `greenlight run %s` starts it\n", plan.Name, stateDir, plan.File)
		return exitUsage
	}
	tails := map[string]int64{} // log path -> bytes printed
	printed := ""               // the log whose lines were printed last
	empty := map[string]bool{}  // logs said to be empty
	out := &lineWriter{w: stdout}
	stdout = out
	header := func(format string, a ...any) {
		if !out.atStart() { // a step's last line had no newline
			io.WriteString(stdout, "\n")
		}
		fmt.Fprintf(stdout, format, a...)
	}
	waitSaid := ""
	show := func(st *runner.State) {
		for _, p := range st.Phases {
			if phase != "" && p.ID != phase {
				continue
			}
			if phase != "" && (p.Status == runner.Pending || p.Status == runner.Waiting) {
				why := p.WaitReason
				if why == "" && p.Status == runner.Waiting {
					why = "waits for your greenlight"
				}
				if why == "" {
					why = "waits to start"
				}
				if why != waitSaid {
					waitSaid = why
					header("==> %s has not started: %s <==\n", p.ID, why)
				}
			}
			for _, s := range p.Steps {
				if s.Log == "" {
					continue
				}
				all := !follow || s.Status != runner.Running
				n := printLog(stdout, s.Log, tails[s.Log], all, func() {
					if printed != s.Log {
						header("==> %s step %d (%s), %s: %s <==\n", p.ID, s.Index+1, s.Name, s.Status, s.Log)
						printed = s.Log
					}
				})
				tails[s.Log] += n
				if n == 0 && tails[s.Log] == 0 && s.Status != runner.Running && s.Status != runner.Pending && !empty[s.Log] {
					empty[s.Log] = true
					header("==> %s step %d (%s), %s: %s <==\n(no output)\n", p.ID, s.Index+1, s.Name, s.Status, s.Log)
					printed = s.Log
				}
			}
		}
	}
	show(st)
	if !follow || c == nil {
		if follow {
			fmt.Fprintf(stderr, "greenlight logs: no runner runs %s: nothing more will be written\n", plan.Name)
		}
		return exitOK
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	signal.Ignore(syscall.SIGPIPE)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-sigs:
			return exitOK
		case m, ok := <-c.Messages():
			if !ok {
				show(st)
				return exitOK
			}
			if m.Kind == link.KindEvent && m.State != nil {
				st = m.State
			}
		case <-tick.C:
			show(st)
			// Following one phase: to its own end, not the campaign's.
			if p := st.Phase(phase); p != nil && p.Status.Finished() {
				header("==> %s %s <==\n", p.ID, p.Status)
				return exitOK
			}
		}
	}
}

// lineWriter remembers whether what it wrote last ended a line.
type lineWriter struct {
	w    io.Writer
	last byte
}

func (l *lineWriter) Write(b []byte) (int, error) {
	if len(b) > 0 {
		l.last = b[len(b)-1]
	}
	return l.w.Write(b)
}

func (l *lineWriter) atStart() bool { return l.last == 0 || l.last == '\n' }

// printLog writes path from byte from, the header first when anything is
// new, and returns how many bytes of the file it took. Step output is
// untrusted: control bytes are shown as escapes (safe.Text), never sent
// to the terminal. A line still being written waits for its end, unless
// all is true (the step has ended, or nothing more is followed).
func printLog(w io.Writer, path string, from int64, all bool, header func()) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() <= from {
		return 0
	}
	const chunk = 1 << 20
	var took int64
	buf := make([]byte, chunk)
	for from+took < fi.Size() {
		n, _ := f.ReadAt(buf[:min(int64(chunk), fi.Size()-from-took)], from+took)
		if n == 0 {
			break
		}
		b := buf[:n]
		if cut := bytes.LastIndexByte(b, '\n'); cut >= 0 && (from+took+int64(n) < fi.Size() || !all) {
			b = b[:cut+1]
		} else if cut < 0 && !all && n < chunk {
			break // a line still being written
		}
		if took == 0 {
			header()
		}
		io.WriteString(w, safe.Text(string(b), 0))
		took += int64(len(b))
	}
	return took
}
