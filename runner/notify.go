package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/greenlight-run/greenlight/runner/campaign"

	"github.com/greenlight-run/greenlight/internal/safe"
)

// A campaign that waits for a person while its owner sleeps tells them:
// the campaign's notify: command runs when a gate starts waiting, a phase
// fails, the disk guard pauses the campaign, or the campaign ends, with
// GREENLIGHT_EVENT (gate, failed, disk, finished), GREENLIGHT_PHASE and
// GREENLIGHT_TEXT in its environment. It runs off the runner's loop, one
// at a time, for at most notifyLimit; one that fails or hangs is said once
// and never holds the campaign.

var notifyLimit = 10 * time.Second // a var: tests shorten it

// Notice is one thing a person is told of.
type Notice struct {
	Event, Phase, Text string
}

// NoticeOf says whether an event is one a person is told of.
func NoticeOf(e Event) (Notice, bool) {
	switch e.Kind {
	case GateWaiting:
		return Notice{"gate", e.Phase, e.Message}, true
	case PhaseFinished:
		if e.State != nil {
			if p := e.State.Phase(e.Phase); p != nil && p.Status.IsFailure() {
				return Notice{"failed", e.Phase, e.Message}, true
			}
		}
	case Paused:
		if e.State != nil && e.State.PauseWhy != "" && e.State.PauseWhy != "user" {
			return Notice{"disk", "", e.Message}, true
		}
	case CampaignFinished:
		text := e.Message
		if e.State != nil {
			text = string(e.State.Headline()) + ": " + e.Message
		}
		return Notice{"finished", "", text}, true
	}
	return Notice{}, false
}

// Notify runs plan's notify command for each notice in events until the
// channel closes; say is told, once, of a command that fails or hangs.
// Notices that come while one runs wait their turn (up to 64; past that
// they are dropped and that is said).
func Notify(plan *campaign.Plan, events <-chan Event, say func(string)) {
	queue := make(chan Notice, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		failed := false
		for n := range queue {
			if err := runNotify(plan, n); err != nil && !failed {
				failed = true
				say(fmt.Sprintf("notify: %s (said once; the campaign goes on)", err))
			}
		}
	}()
	dropped := false
	for e := range events {
		n, ok := NoticeOf(e)
		if !ok || plan.Notify == "" {
			continue
		}
		select {
		case queue <- n:
		default:
			if !dropped {
				dropped = true
				say("notify: the command is slower than the news; later notices are dropped")
			}
		}
	}
	close(queue)
	<-done
}

func runNotify(plan *campaign.Plan, n Notice) error {
	ctx, cancel := context.WithTimeout(context.Background(), notifyLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", plan.Notify)
	cmd.Dir = plan.Dir
	cmd.Env = append(os.Environ(), "GREENLIGHT_EVENT="+n.Event, "GREENLIGHT_PHASE="+n.Phase,
		"GREENLIGHT_TEXT="+safe.Line(n.Text, 1000), "GREENLIGHT_CAMPAIGN="+plan.Name)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("the command did not end within %s: stopped", notifyLimit)
	case err != nil:
		return fmt.Errorf("the command failed (%v): %s", err, safe.Line(strings.TrimSpace(string(out)), 200))
	}
	return nil
}
