package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/greenlight-run/greenlight/conditions"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// commandTimeout bounds each conditions: command (and pip list).
const commandTimeout = time.Minute

// watchConditions records what the campaign runs under, once, at its
// first start (the conditions: commands too), and reads the machine and
// its GPUs again at each phase's start (and at a restart of the runner),
// saying each change once. It keeps the book in the state dir and gives
// it to keep (the results file's writer). ready says when the source has
// read its devices once. kept is closed once the first reading is kept:
// the campaign's last write waits for it, so that a short campaign's
// record has its conditions too.
func watchConditions(plan *campaign.Plan, stateDir string, src conditions.Source, ready func() bool,
	events <-chan runner.Event, keep func(conditions.Book), say func(string), kept chan<- struct{}) {
	for i := 0; i < 50 && !ready(); i++ {
		time.Sleep(100 * time.Millisecond)
	}
	book, ok, err := conditions.Load(stateDir)
	if err != nil {
		say(fmt.Sprintf("conditions: %v; read again from now on", err))
	}
	check := func(where string) {
		changes := book.Check(conditions.Machine(plan, src), where)
		for _, c := range changes {
			at := "at the start of phase " + where
			if where == "" {
				at = "since the campaign's last runner"
			}
			say(fmt.Sprintf("the conditions changed %s: %s (the record keeps both)", at, c))
		}
		if err := book.Save(stateDir); err != nil {
			say(fmt.Sprintf("conditions: %v", err))
		}
		keep(book)
	}
	if ok {
		check("")
	} else {
		book = conditions.NewBook(conditions.Gather(context.Background(), plan, src, commandTimeout))
		for _, c := range book.First.Commands {
			if c.Error != "" {
				say(fmt.Sprintf("conditions: `%s`: %s", c.Run, c.Error))
			}
		}
		if err := book.Save(stateDir); err != nil {
			say(fmt.Sprintf("conditions: %v", err))
		}
		keep(book)
	}
	close(kept)
	for e := range events {
		if e.Kind == runner.PhaseStarted {
			check(e.Phase)
		}
	}
}
