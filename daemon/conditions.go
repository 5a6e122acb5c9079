package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/greenlight-run/greenlight/conditions"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// commandTimeout bounds each conditions: command (and pip list);
// condsEndWait, the campaign's end waiting for them.
const (
	commandTimeout = time.Minute
	condsEndWait   = 10 * time.Second
)

// conditionsBook keeps what the campaign runs under, in its state dir.
type conditionsBook struct {
	plan     *campaign.Plan
	stateDir string
	src      conditions.Source
	keep     func(conditions.Book) // the results file's writer
	say      func(string)
	book     conditions.Book
	fresh    bool // the first reading: the conditions: commands are still to run
}

// openConditions reads the machine and its GPUs before the campaign
// starts (ready says when the source has read its devices once): the
// first reading of a campaign's first start, or, for a campaign that ran
// before, a check against its last, each change said once.
func openConditions(plan *campaign.Plan, stateDir string, src conditions.Source, ready func() bool,
	keep func(conditions.Book), say func(string)) *conditionsBook {
	for i := 0; i < 20 && !ready(); i++ {
		time.Sleep(100 * time.Millisecond)
	}
	c := &conditionsBook{plan: plan, stateDir: stateDir, src: src, keep: keep, say: say}
	book, ok, err := conditions.Load(stateDir)
	if err != nil {
		say(fmt.Sprintf("conditions: %v; read again from now on", err))
	}
	if ok {
		// The record gets them at once, changed or not: a runner started
		// again writes a record as whole as the first one's.
		c.book = book
		c.keep(c.book)
		c.check("")
		return c
	}
	c.book, c.fresh = conditions.NewBook(conditions.Machine(plan, src)), true
	c.save()
	return c
}

func (c *conditionsBook) save() {
	if err := c.book.Save(c.stateDir); err != nil {
		c.say(fmt.Sprintf("conditions: %v", err))
	}
	c.keep(c.book)
}

// check reads the machine again at a phase's start ("" for a runner
// started again) and says what changed.
func (c *conditionsBook) check(phase string) {
	changes := c.book.Check(conditions.Machine(c.plan, c.src), phase)
	for _, ch := range changes {
		at := "at the start of phase " + phase
		if phase == "" {
			at = "since the campaign's last runner"
		}
		c.say(fmt.Sprintf("the conditions changed %s: %s (the record keeps both)", at, ch))
	}
	if len(changes) > 0 {
		c.save()
	}
}

// watch runs the conditions: commands of a first start side by side,
// keeping each one's outcome as it ends (one that hangs keeps no other's
// from the record), and closes done once every one has (the campaign's
// last write waits for it, a bounded time, then ends ctx: what still runs
// is stopped and said so); meanwhile, and until the events end, it checks
// the machine at each phase's start.
func (c *conditionsBook) watch(ctx context.Context, events <-chan runner.Event, done chan<- struct{}) {
	type outcome struct {
		i   int
		cmd conditions.Command
		pkg map[string]string
		isP bool
	}
	results := make(chan outcome)
	pending := 0
	if c.fresh && (len(c.plan.Conditions.Commands) > 0 || len(c.plan.Conditions.Packages) > 0) {
		cmds := make([]conditions.Command, len(c.plan.Conditions.Commands))
		for i, run := range c.plan.Conditions.Commands {
			cmds[i] = conditions.Command{Run: run, Error: "still running"}
		}
		c.book.First.Commands, c.book.Last.Commands = cmds, cmds
		pending = len(cmds)
		if len(cmds) > 0 {
			go conditions.RunCommands(ctx, c.plan, commandTimeout, func(i int, cmd conditions.Command) { results <- outcome{i: i, cmd: cmd} })
		}
		if len(c.plan.Conditions.Packages) > 0 {
			pending++
			go func() { results <- outcome{pkg: conditions.Packages(ctx, c.plan, commandTimeout), isP: true} }()
		}
		c.save()
	}
	if pending == 0 {
		close(done)
	}
	for events != nil || pending > 0 {
		select {
		case o := <-results:
			if o.isP {
				c.book.First.Packages, c.book.Last.Packages = o.pkg, o.pkg
			} else {
				c.book.First.Commands[o.i] = o.cmd // First and Last share the slice
				if o.cmd.Error != "" {
					c.say(fmt.Sprintf("conditions: `%s`: %s", conditions.CommandLabel(o.cmd.Run), o.cmd.Error))
				}
			}
			c.save()
			if pending--; pending == 0 {
				close(done)
			}
		case e, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if e.Kind == runner.PhaseStarted {
				c.check(e.Phase)
			}
		}
	}
}
