package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
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

const notifyLimit = 10 * time.Second

// Notice is one thing a person is told of.
type Notice struct {
	Event, Phase, Text string
}

// NoticeOf says whether an event is one a person is told of. One
// failure is one notice, naming the phases it blocks: a phase blocked by
// it (or by another phase's failure) is no failure of its own to be told
// of again.
func NoticeOf(plan *campaign.Plan, e Event) (Notice, bool) {
	switch e.Kind {
	case GateWaiting:
		return Notice{"gate", e.Phase, e.Message}, true
	case PhaseFinished:
		if e.State != nil {
			if p := e.State.Phase(e.Phase); p != nil && p.Status == Failed {
				text := e.Message
				if blocks := blockedBy(plan, e.State, e.Phase); len(blocks) > 0 {
					text += "; it blocks " + strings.Join(blocks, ", ")
				}
				for _, svc := range plan.Phases {
					if s := e.State.Phase(svc.ID); s != nil && s.Status == Ready && slices.Contains(KeptFor(plan, svc, e.State.Phase), e.Phase) {
						text += fmt.Sprintf("; %s stays up for its retry (greenlight retry %s; greenlight skip %s lets it go)", svc.ID, e.Phase, e.Phase)
					}
				}
				return Notice{"failed", e.Phase, text}, true
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
	notifyWithin(plan, events, say, notifyLimit)
}

// notifyWithin is Notify with each command's limit given (a test's
// shorter one, without a global other tests' notifiers read).
func notifyWithin(plan *campaign.Plan, events <-chan Event, say func(string), limit time.Duration) {
	queue := make(chan Notice, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		failed := false
		for n := range queue {
			if err := runNotify(plan, n, limit); err != nil && !failed {
				failed = true
				say(fmt.Sprintf("notify: %s (said once; the campaign goes on)", err))
			}
		}
	}()
	dropped := false
	for e := range events {
		n, ok := NoticeOf(plan, e)
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

// blockedBy are the phases not yet through that need phase, directly or
// through another: what its failure holds up.
func blockedBy(plan *campaign.Plan, st *State, phase string) []string {
	if plan == nil {
		return nil
	}
	held := map[string]bool{phase: true}
	var out []string
	for changed := true; changed; {
		changed = false
		for _, ph := range plan.Phases {
			if held[ph.ID] {
				continue
			}
			for _, n := range ph.Needs {
				if held[n] {
					held[ph.ID], changed = true, true
					if p := st.Phase(ph.ID); p == nil || !p.Status.Finished() || p.Status == Blocked {
						out = append(out, ph.ID)
					}
					break
				}
			}
		}
	}
	return out
}

func runNotify(plan *campaign.Plan, n Notice, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
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
		return fmt.Errorf("the command did not end within %s: stopped", limit)
	case err != nil:
		return fmt.Errorf("the command failed (%v): %s", err, safe.Line(strings.TrimSpace(string(out)), 200))
	}
	return nil
}
