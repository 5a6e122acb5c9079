// Package daemon is the campaign's runner process: `greenlight __runner`,
// started by the first client (`greenlight run`, or a verb on a campaign
// left unfinished) in a session of its own, its output in
// STATE/runner.log. It owns the campaign: the scheduler and journal
// (runner), the results file (report), the GPU sampler and its history,
// the disk guard. Windows, the plain printer and the verbs are its
// clients (package client), over STATE/runner.sock (runner/link). It ends
// when the campaign ends (the results file written), when a client stops
// it, or on SIGTERM/SIGINT, which let go of the campaign: steps and
// services run on and the next runner re-adopts them.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/greenlight-run/greenlight/conditions"
	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/internal/statedir"
	"github.com/greenlight-run/greenlight/metrics"
	"github.com/greenlight-run/greenlight/report"
	"github.com/greenlight-run/greenlight/report/mdfile"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
	"github.com/greenlight-run/greenlight/runner/link"
	"github.com/greenlight-run/greenlight/runner/state"
	"github.com/greenlight-run/greenlight/runner/supervise"
)

// Main is the runner process: args are Config.Args. Its exit status
// (runner.Exit*) is read by the client that started it; preflight and
// bad input are said on stderr, which is runner.log.
func Main(version string, args []string, stdout, stderr io.Writer) int {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1) // one core's worth of competition at most for a benchmark (see DESIGN.md)
	}
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	// GREENLIGHT_RUNNER_CPUPROFILE=FILE writes the runner's CPU profile,
	// for the idle-cost budget (scripts/device-idle.sh).
	if path := os.Getenv("GREENLIGHT_RUNNER_CPUPROFILE"); path != "" {
		if pf, err := os.Create(path); err == nil {
			pprof.StartCPUProfile(pf)
			defer func() { pprof.StopCPUProfile(); pf.Close() }()
		}
	}
	f, err := link.Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight %s: %v\n", link.Command, err)
		return runner.ExitUsage
	}
	plan, err := campaign.Load(f.File)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return runner.ExitUsage
	}
	// A command without --report looks for the state dir beside the
	// campaign's own results file: the pointer to it goes there.
	asWritten := *plan
	if f.Report != "" {
		plan.Report = f.Report // made absolute by the client
	}
	release, err := mdfile.LockResults(plan.Report, f.StateDir)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight: %v\n", err)
		if errors.Is(err, runner.ErrLocked) {
			return runner.ExitLocked
		}
		return runner.ExitFailed
	}
	defer release()
	// The campaign's locks first (the results file's, then the state
	// dir's): of two runners started at once (two clients, a symlinked
	// folder), the one that loses ends here, before it opens a GPU or
	// reads the machine.
	stateLock, err := runner.LockStateDir(f.StateDir)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight: %v\n", err)
		if errors.Is(err, runner.ErrLocked) {
			return runner.ExitLocked
		}
		return runner.ExitFailed
	}
	var src gpu.Source
	var local bool
	var note string
	if len(f.GPU) > 0 || len(plan.GPUSources) == 0 { // --gpu overrides the campaign's sources
		src, local, note, err = OpenGPU(f.GPU, f.Interval)
	} else {
		src, local, note, err = openSources(plan.GPUSources, f.Interval)
	}
	if err != nil {
		fmt.Fprintf(stderr, "greenlight: %v\n", err)
		return runner.ExitUsage
	}
	sampler := gpu.NewSampler(src, f.Interval, 4*time.Hour)
	inv := sampler.Inventory()
	count := -1 // phases name this machine's GPUs; remote ones are not counted
	if local {
		count = 0
		for _, d := range inv.Devices {
			if d.Host == "" {
				count++
			}
		}
	}
	problems := runner.CheckPreflight(plan, count)
	var notes []string
	if note != "" {
		notes = append(notes, note)
	}
	for _, p := range problems {
		if p.Warn {
			notes = append(notes, "preflight: "+p.What)
		}
	}
	if err := runner.PreflightError(problems); err != nil {
		for _, n := range notes {
			fmt.Fprintf(stderr, "greenlight: warning: %s\n", n)
		}
		fmt.Fprintf(stderr, "greenlight: %v\n", err)
		return runner.ExitFailed
	}
	approve, err := ApproveList(plan, f.Approve)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight: --approve: %v\n", err)
		return runner.ExitUsage
	}
	held := baselineFor(plan)
	if held.warn {
		notes = append(notes, held.note) // in the window and the record
	} else if held.note != "" {
		fmt.Fprintf(stdout, "%s %s\n", time.Now().Format("15:04:05"), held.note)
	}
	var retry []string
	if f.Retry != "" {
		retry = []string{f.Retry}
	}
	wit := &witness{plan: plan, gpus: sampler}
	r, err := runner.New(plan, runner.Options{StateDir: f.StateDir, GPUCount: count, Approve: approve, Notes: notes, Retry: retry, Annotate: held.annotate(), Meter: wit.meter, Witness: wit.facts, Lock: stateLock})
	if err != nil {
		fmt.Fprintf(stderr, "greenlight: %v\n", err)
		if errors.Is(err, runner.ErrLocked) {
			return runner.ExitLocked
		}
		return runner.ExitFailed
	}
	f.Save()
	if err := statedir.Remember(&asWritten, f.StateDir); err != nil {
		fmt.Fprintf(stdout, "%s warning: could not note the state dir beside the default one: %v\n", time.Now().Format("15:04:05"), err)
	}
	host, _ := os.Hostname()
	w := report.NewWriter(plan.Report, plan, report.Env{Host: host, Inventory: inv}, sampler, r.StateDir())
	held.give(plan, w)
	scrapeCtx, stopScraping := context.WithCancel(context.Background())
	defer stopScraping()
	scrapers := startScrapers(scrapeCtx, plan, r.StateDir(), r.Subscribe())
	w.SetServers(views(scrapers))
	wit.setServers(views(scrapers))
	reportEvents, linkEvents, printEvents := r.Subscribe(), r.Subscribe(), r.Subscribe()
	reportDone := make(chan struct{})
	srv := &server{r: r, sampler: sampler, version: version, scrapers: scrapers}
	// An editor holding the results file is a state, not a warning: the
	// window's status line shows it for as long as it lasts.
	w.OnHold = r.SetReportHeld
	go func() {
		defer close(reportDone)
		w.Run(reportEvents, func(err error) {
			msg, word := fmt.Sprintf("results file: %v", err), "warning"
			var back *mdfile.Restored
			var held *mdfile.Held
			if errors.As(err, &back) || errors.As(err, &held) {
				word = "note"
			}
			fmt.Fprintf(stdout, "%s %s: %s\n", time.Now().Format("15:04:05"), word, msg)
			if held != nil {
				return // in the state (ReportHeld), on the window's status line
			}
			if srv.link != nil {
				srv.link.Event(runner.Event{Kind: runner.Warning, Time: time.Now(), Message: msg, State: r.Snapshot()})
			}
		})
	}()
	srv.link, err = link.Listen(r.StateDir(), version, plan.Hash, srv)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight: %v\n", err)
		r.Close()
		<-reportDone
		return runner.ExitFailed
	}
	sampler.SetOwner(supervise.Owner(r.StateDir()))
	sampler.Start()
	go feedHolders(sampler, r, sampler.Interval(), r.Done())
	if fake, ok := src.(*gpu.Fake); ok {
		go feedFake(fake, len(inv.Devices), r.Subscribe(), plan)
	}
	go feedSessions(sampler, r.Subscribe())
	conds := openConditions(plan, r.StateDir(), sampler, func() bool {
		return sampler.Latest() != nil || len(sampler.Inventory().Devices) == 0
	}, func(b conditions.Book) {
		wit.setConditions(b)
		w.SetConditions(b)
	}, func(msg string) { r.Warn(msg) })
	condsKept := make(chan struct{})
	condsCtx, stopConds := context.WithCancel(context.Background())
	defer stopConds()
	go conds.watch(condsCtx, r.Subscribe(), condsKept)
	go followSlurmNodes(src, r.Subscribe())
	if plan.Notify != "" {
		go runner.Notify(plan, r.Subscribe(), func(msg string) {
			fmt.Fprintf(stdout, "%s warning: %s\n", time.Now().Format("15:04:05"), msg)
			if srv.link != nil {
				srv.link.Event(runner.Event{Kind: runner.Warning, Time: time.Now(), Message: msg, State: r.Snapshot()})
			}
		})
	}
	go srv.forwardGPU()
	if f.Demo {
		go demoGates(r, srv.link)
	}
	fmt.Fprintf(stdout, "%s runner pid %d for %s (greenlight %s), socket %s\n", time.Now().Format("15:04:05"), os.Getpid(), plan.File, version, srv.link.Path())
	r.Start()

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	var lastETA time.Duration = -1
	code := runner.ExitInterrupted
	for done := false; !done; {
		select {
		case s := <-sigs:
			fmt.Fprintf(stdout, "%s got %v: letting go of the campaign; its steps run on and the next `greenlight run %s` takes them back\n",
				time.Now().Format("15:04:05"), s, plan.File)
			srv.link.Close(fmt.Sprintf("the campaign's runner got %v and let go of the campaign; its steps run on and `greenlight run %s` starts a new runner", s, plan.File))
			r.Close()
			done = true
		case e, ok := <-linkEvents:
			if !ok {
				done = true
				break
			}
			srv.link.Event(e)
			if e.Kind == runner.CampaignFinished {
				code = e.State.ExitCode(false, false)
				done = true
			}
		case e, ok := <-printEvents:
			if ok {
				if line := runner.EventLine(e, &lastETA); line != "" {
					fmt.Fprintln(stdout, line)
				}
			}
		}
	}
	if code != runner.ExitInterrupted {
		// A campaign shorter than its conditions: commands waits for them a
		// bounded, stated time, so its record has their output.
		select {
		case <-condsKept:
		default:
			fmt.Fprintf(stdout, "%s waiting up to %s for the conditions: commands, so that the record has their output\n", time.Now().Format("15:04:05"), condsEndWait)
			select {
			case <-condsKept:
			case <-time.After(condsEndWait):
				// What still runs is stopped (its whole group), and said as
				// no answer; every command that ended keeps its output.
				stopConds()
				select {
				case <-condsKept:
				case <-time.After(5 * time.Second):
				}
			}
		}
	}
	r.Close()
	<-reportDone // the results file holds the last state before anyone is told the end
	sampler.Stop()
	if code != runner.ExitInterrupted {
		// A campaign that is already over when its runner starts waits a
		// little for the client that started it, which is told the end too.
		select {
		case <-srv.link.Attached():
		case <-time.After(30 * time.Second):
		}
		srv.link.Close("the campaign has finished; its results are in " + plan.Report)
	}
	for e := range printEvents { // the last lines (the campaign's end) go to the log too
		if line := runner.EventLine(e, &lastETA); line != "" {
			fmt.Fprintln(stdout, line)
		}
	}
	return code
}

// server answers the runner's clients.
type server struct {
	r        *runner.Runner
	sampler  *gpu.Sampler
	scrapers map[string]*metrics.Scraper // the services' /metrics, for the window's line
	link     *link.Server
	version  string
}

// Snapshot implements link.Handler.
func (s *server) Snapshot() (*runner.State, *link.GPURound) {
	g := link.GPUSnapshot(s.sampler)
	g.Servers = serverLines(s.scrapers, time.Now())
	return s.r.Snapshot(), g
}

// Do implements link.Handler.
func (s *server) Do(op state.Verb, phase string) error {
	if op.TakesPhase() {
		id, _ := state.SplitTarget(phase) // a point's op names its phase too
		if err := s.r.Plan().CheckPhaseID(id); err != nil {
			return err
		}
	}
	if err := state.Apply(s.r, op, phase); err != nil {
		return fmt.Errorf("this runner (greenlight %s): %v", s.version, err)
	}
	return nil
}

// forwardGPU says each of the sampler's rounds to the clients.
func (s *server) forwardGPU() {
	var enc link.GPUEncoder
	for samples := range s.sampler.Samples() {
		if s.link.Clients() == 0 {
			enc = link.GPUEncoder{} // nobody to tell; the next client's first round is whole
			continue
		}
		round := enc.Round(s.sampler.Inventory(), s.sampler.Hosts(), samples)
		round.Servers = serverLines(s.scrapers, time.Now())
		s.link.GPU(round)
	}
}

// demoGates opens the demo's gate when no window is attached: nobody is
// left to press g, and a demo that waits forever for nobody shows nothing.
func demoGates(r *runner.Runner, srv *link.Server) {
	alone := 0
	for {
		select {
		case <-r.Done():
			return
		case <-time.After(time.Second):
		}
		if srv.Clients() > 0 {
			alone = 0
			continue
		}
		if alone++; alone < 5 {
			continue
		}
		for _, p := range r.Snapshot().Phases {
			if p.Gated() {
				r.Greenlight(p.ID)
			}
		}
	}
}
