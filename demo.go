package main

// The demo: `greenlight demo` runs the embedded campaign in a fresh folder,
// and greenlight itself plays the vLLM server and its client, printing
// vLLM's real log formats, so the demo needs no GPU, Python or network.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/greenlight-run/greenlight/demo"
)

func cmdDemo(args []string, stdout, stderr io.Writer) int {
	dir, err := demo.Dir()
	if err != nil {
		fmt.Fprintf(stderr, "greenlight demo: %v\n", err)
		return exitFailed
	}
	campaign := filepath.Join(dir, "campaign.yaml")
	if !demo.Running(campaign) {
		// Each demo starts over in the one folder it owns; the last
		// demo's folder is set aside beside it, as --fresh does, never
		// deleted without a word.
		if old, err := demo.SetAside(dir, time.Now()); err != nil {
			fmt.Fprintf(stderr, "greenlight demo: setting the last demo aside: %v\n", err)
			return exitFailed
		} else if old != "" {
			fmt.Fprintf(stdout, "greenlight demo: the last demo's campaign and results are set aside in %s\n", old)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintf(stderr, "greenlight demo: %v\n", err)
			return exitFailed
		}
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "greenlight demo: %v\n", err)
			return exitFailed
		}
		port, err := demo.FreePort()
		if err != nil {
			fmt.Fprintf(stderr, "greenlight demo: no free loopback port: %v\n", err)
			return exitFailed
		}
		if err := os.WriteFile(campaign, demo.Campaign(exe, port), 0o644); err != nil {
			fmt.Fprintf(stderr, "greenlight demo: %v\n", err)
			return exitFailed
		}
		fmt.Fprintf(stdout, "greenlight demo: campaign and results in %s\n", dir)
	} else {
		fmt.Fprintf(stdout, "greenlight demo: the demo in %s is still running: attaching to it\n", dir)
	}
	fmt.Fprintf(stdout, "greenlight demo: after q, `greenlight run %s` attaches again\n", campaign)
	hasGPU := false
	for _, a := range args {
		if a == "--gpu" || len(a) > 6 && a[:6] == "--gpu=" {
			hasGPU = true
		}
	}
	if !hasGPU {
		args = append([]string{"--gpu", "fake:8"}, args...)
	}
	return cmdRun(append(args, campaign), stdout, stderr, true)
}
