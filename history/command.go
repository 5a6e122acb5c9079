package history

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/greenlight-run/greenlight/internal/safe"
)

// Help is `greenlight history`'s help.
const Help = `Usage: greenlight history [flags] DIR|RECORD...

Reads every campaign record (NAME.json) under the folders given (or the
records named), orders them by when each campaign started, and follows
each phase's metric at each point (the identity compare uses) from
campaign to campaign: where it moved, by how much, which way is better,
and what changed in the recorded conditions (driver, CUDA, NCCL and its
variables, packages, clocks, the campaign file, the git commit) between
the campaigns either side, ranked by how many series moved with it.
Change points are found as Apache Otava finds them: E-Divisive means over
sliding windows, Student's t-test, weak points merged and re-tested.

Flags:
  --window N          values a window holds (Otava's window_len; default 50)
  --pvalue P          the t-test's significance (max_pvalue; default 0.001)
  --min-change PCT    a change smaller than this is dropped (min_magnitude; default 0)
  --otava             Otava's raw p (default: × √n, for the choice of split)
  --json              the history as JSON (campaigns, series, changes, causes)
  --markdown FILE     also write a page: each moved series with its chart
                      (FILE.N.svg beside it), the conditions changed, ranked
  --export FORMAT     write the history as otava-csv, bmf (the newest campaign),
                      openmetrics (with timestamps) or parquet to --out, or stdout
  --out FILE          where --export writes
  --fail-on-change    exit 1 when a change point lies at the newest campaign

Exit status: 0 read (and, with --fail-on-change, nothing changed at the
newest campaign); 1 with --fail-on-change and a change there; 2 bad input
(no record under the paths, a flag's bad value).
`

// Exit statuses of the command.
const (
	ExitOK      = 0
	ExitChanged = 1
	ExitUsage   = 2
)

// Command is `greenlight history`; parse parses flags anywhere among the
// arguments.
func Command(args []string, parse func(*flag.FlagSet, []string) ([]string, error), stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("history", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := DefaultOptions
	fs.IntVar(&o.Window, "window", o.Window, "")
	fs.Float64Var(&o.PValue, "pvalue", o.PValue, "")
	minPct := fs.Float64("min-change", 0, "")
	fs.BoolVar(&o.Otava, "otava", false, "")
	asJSON := fs.Bool("json", false, "")
	export := fs.String("export", "", "")
	out := fs.String("out", "", "")
	page := fs.String("markdown", "", "")
	failOn := fs.Bool("fail-on-change", false, "")
	paths, err := parse(fs, args)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "greenlight history: %v\n\n%s", err, Help)
		return ExitUsage
	case len(paths) == 0:
		fmt.Fprintf(stderr, "greenlight history: give the folders (or records) of the campaigns\n\n%s", Help)
		return ExitUsage
	case o.Window < 2:
		fmt.Fprintf(stderr, "greenlight history: --window %d: a window holds 2 values or more\n", o.Window)
		return ExitUsage
	case !(o.PValue > 0 && o.PValue < 1):
		fmt.Fprintf(stderr, "greenlight history: --pvalue %g: between 0 and 1\n", o.PValue)
		return ExitUsage
	case *minPct < 0:
		fmt.Fprintf(stderr, "greenlight history: --min-change %g: a share, 0 or more\n", *minPct)
		return ExitUsage
	case *export != "" && !slices.Contains(Formats, *export):
		fmt.Fprintf(stderr, "greenlight history: --export %s: the formats are %s\n", *export, strings.Join(Formats, ", "))
		return ExitUsage
	}
	o.MinMagnitude = *minPct / 100
	h, err := Load(paths)
	if err != nil {
		fmt.Fprintf(stderr, "greenlight history: %v\n", err)
		return ExitUsage
	}
	h.Analyze(o)
	if *page != "" {
		if _, err := h.WritePage(*page); err != nil {
			fmt.Fprintf(stderr, "greenlight history: %v\n", err)
			return ExitUsage
		}
	}
	switch {
	case *export != "":
		w := stdout
		if *out != "" {
			f, err := os.Create(*out)
			if err != nil {
				fmt.Fprintf(stderr, "greenlight history: %v\n", err)
				return ExitUsage
			}
			defer f.Close()
			w = f
		}
		if err := h.Export(w, *export); err != nil {
			fmt.Fprintf(stderr, "greenlight history: %v\n", err)
			return ExitUsage
		}
	case *asJSON:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(h)
	default:
		for _, l := range h.Lines() {
			fmt.Fprintln(stdout, safe.Line(l, safe.CSV)) // paths and conditions are what the machine said
		}
	}
	if *failOn {
		for _, c := range h.Changes {
			if c.Campaign == len(h.Campaigns)-1 {
				return ExitChanged
			}
		}
	}
	return ExitOK
}
