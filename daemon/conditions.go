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

// watch runs the conditions: commands of a first start, closing done
// when their outputs are kept (the campaign's last write waits for it, so
// that a short campaign's record has them too), then checks the machine
// at each phase's start until the events end.
func (c *conditionsBook) watch(events <-chan runner.Event, done chan<- struct{}) {
	if c.fresh && (len(c.plan.Conditions.Commands) > 0 || len(c.plan.Conditions.Packages) > 0) {
		all := conditions.Gather(context.Background(), c.plan, c.src, commandTimeout)
		c.book.First.Commands, c.book.First.Packages = all.Commands, all.Packages
		c.book.Last.Commands, c.book.Last.Packages = all.Commands, all.Packages
		for _, cmd := range all.Commands {
			if cmd.Error != "" {
				c.say(fmt.Sprintf("conditions: `%s`: %s", conditions.CommandLabel(cmd.Run), cmd.Error))
			}
		}
		c.save()
	}
	close(done)
	for e := range events {
		if e.Kind == runner.PhaseStarted {
			c.check(e.Phase)
		}
	}
}
