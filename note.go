package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/greenlight-run/greenlight/client"
	"github.com/greenlight-run/greenlight/runner"
	"github.com/greenlight-run/greenlight/runner/link"
)

// cmdNote adds a person's note to the campaign's record (client.AddNote).
func cmdNote(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("note", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("state-dir", "", "")
	pos, err := parseAnywhere(fs, args)
	text := strings.TrimSpace(strings.Join(pos[min(1, len(pos)):], " "))
	if err != nil || len(pos) < 2 || text == "" {
		fmt.Fprint(stderr, commandHelp["note"])
		return exitUsage
	}
	plan, ok := loadPlan(pos[0], stderr)
	if !ok {
		return exitUsage
	}
	cfg := link.Config{StateDir: *dir}
	if err := locate(plan, &cfg, stderr); err != nil {
		fmt.Fprintf(stderr, "greenlight note: %v\n", err)
		return exitUsage
	}
	rebuild, err := client.AddNote(runner.Journal{}, plan, cfg.StateDir, text, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight note: %v\n", err)
		if errors.Is(err, client.ErrNeverRan) {
			return exitUsage
		}
		return exitFailed
	}
	if rebuild {
		return cmdReport([]string{"--state-dir", cfg.StateDir, plan.File}, stdout, stderr)
	}
	return exitOK
}
