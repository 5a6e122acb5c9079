package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/greenlight-run/greenlight/client"
	"github.com/greenlight-run/greenlight/daemon"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/link"
)

// cmdNote adds a person's note to the campaign's record: through its
// runner when one runs it (journaled, then written), else journaled and
// the record rebuilt from the state dir. No editor, no race.
func cmdNote(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("note", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("state-dir", "", "")
	pos, err := parseAnywhere(fs, args)
	if err != nil || len(pos) < 2 {
		fmt.Fprint(stderr, commandHelp["note"])
		return exitUsage
	}
	text := strings.TrimSpace(strings.Join(pos[1:], " "))
	if text == "" {
		fmt.Fprintf(stderr, "greenlight note: the note is empty\n\n%s", commandHelp["note"])
		return exitUsage
	}
	plan, ok := loadPlan(pos[0], stderr)
	if !ok {
		return exitUsage
	}
	cfg := daemon.Config{StateDir: *dir}
	if err := locate(plan, &cfg, stderr); err != nil {
		fmt.Fprintf(stderr, "greenlight note: %v\n", err)
		return exitUsage
	}
	if c, err := link.Dial(cfg.StateDir); err == nil {
		defer c.Close()
		if _, err := c.Request(link.OpNote, text); err != nil {
			fmt.Fprintf(stderr, "greenlight note: %v\n", err)
			return exitFailed
		}
		fmt.Fprintf(stdout, "greenlight: note added to %s (its runner, pid %d, writes it)\n", plan.Report, c.PID())
		return exitOK
	} else if !errors.Is(err, link.ErrNoRunner) {
		fmt.Fprintf(stderr, "greenlight note: %v\n", err)
		return exitFailed
	}
	if !client.HasJournal(cfg.StateDir) {
		fmt.Fprintf(stderr, "greenlight note: %s has not run here (no journal in %s): a note goes with a campaign's record\n", plan.Name, cfg.StateDir)
		return exitUsage
	}
	if err := runner.NoteWhileStopped(cfg.StateDir, text); err != nil {
		fmt.Fprintf(stderr, "greenlight note: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(stdout, "greenlight: note added to the journal; rebuilding %s from it\n", plan.Report)
	return cmdReport([]string{"--state-dir", cfg.StateDir, plan.File}, stdout, stderr)
}
