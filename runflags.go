package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/internal/files"
)

// The flags a runner was started with are kept in its state dir, so that
// a runner started again later (resume after a stop, a reboot, a killed
// runner) reads the GPUs from the same source at the same interval
// without the user repeating them; a flag given again wins, and is said.

const runnerFlagsFile = "runner-flags.json"

type savedFlags struct {
	GPU      []string `json:"gpu,omitempty"`
	Interval string   `json:"interval,omitempty"`
}

// saveRunnerFlags records the flags this runner started with.
func saveRunnerFlags(stateDir string, f *runFlags) {
	b, err := json.Marshal(savedFlags{GPU: f.gpu, Interval: f.interval.String()})
	if err == nil {
		files.WriteAtomic(filepath.Join(stateDir, runnerFlagsFile), b)
	}
}

// reuseRunnerFlags fills in the flags not given from those the campaign's
// last runner started with, saying what it reused and what changed.
func reuseRunnerFlags(stateDir string, f *runFlags, out io.Writer) {
	b, err := os.ReadFile(filepath.Join(stateDir, runnerFlagsFile))
	if err != nil {
		return
	}
	var saved savedFlags
	if json.Unmarshal(b, &saved) != nil {
		return
	}
	switch {
	case len(saved.GPU) == 0:
	case !f.given["gpu"]:
		f.gpu = saved.GPU
		fmt.Fprintf(out, "greenlight: --gpu %s, as the campaign was started with (give --gpu to change it)\n", strings.Join(saved.GPU, " --gpu "))
	case !slices.Equal(f.gpu, saved.GPU):
		fmt.Fprintf(out, "greenlight: --gpu %s, where the campaign was started with --gpu %s\n", strings.Join(f.gpu, " --gpu "), strings.Join(saved.GPU, " --gpu "))
	}
	if d, err := time.ParseDuration(saved.Interval); err == nil && d != f.interval {
		if f.given["interval"] {
			fmt.Fprintf(out, "greenlight: --interval %s, where the campaign was started with %s\n", f.interval, d)
		} else {
			f.interval = d
		}
	}
}
