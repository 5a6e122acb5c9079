package compare

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/greenlight-run/greenlight/record"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// Help is `greenlight compare`'s help.
const Help = `Usage: greenlight compare [flags] OLD NEW

Holds campaign NEW against campaign OLD: per phase, point and metric, the
old and new values, the change, and a verdict (better, worse, within
noise, within tolerance, changed): Welch's t-test at 5% where both sides
have repeats, else the tolerance. Which way is better comes from the
metric's expect: direction, or better: on the phase. The differences in
the conditions the two ran under come first; a result taken under bad
conditions (a throttle, a foreign process, an XID, a profiler capture) is
flagged. OLD and NEW are records (NAME.json), results files (NAME.md,
with the record beside it) or campaign files.

Flags:
  --markdown FILE     also write the comparison as markdown to FILE
  --tolerance P       change within which a metric without repeats is the same (default 2%,
                      or the NEW campaign's compare.tolerance when NEW is a campaign file)
  --rename OLD=NEW    a metric renamed since OLD (repeatable)
  --fail-worse        exit 1 when a metric is worse beyond noise

  --traces            OLD and NEW are folders of traces (torch.profiler's
                      *.pt.trace.json[.gz], nsys reports), outside any campaign:
                      which kernel families changed, per profiler step, each
                      folder under OLD or NEW one capture (else the traces in it
                      grouped into captures by rank)
  --step REGEX        with --traces: the annotation one step is (record_function's
                      name), each match a step; default torch.profiler's ProfilerStep#N

Exit status: 0 compared; 1 with --fail-worse and something worse; 2 bad
input (a file that is not a record, another schema version, a folder with
no trace).
`

// Exit statuses of the command.
const (
	ExitOK    = 0
	ExitWorse = 1 // with --fail-worse; also a markdown file that could not be written
	ExitUsage = 2
)

type renames map[string]string

func (r renames) String() string { return fmt.Sprint(map[string]string(r)) }
func (r renames) Set(s string) error {
	from, to, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(from) == "" || strings.TrimSpace(to) == "" {
		return fmt.Errorf("%q: write --rename old_name=new_name", s)
	}
	r[strings.TrimSpace(from)] = strings.TrimSpace(to)
	return nil
}

// Finder finds a campaign file's record (its results file may have moved
// with --report): the record's path and the campaign's plan.
type Finder func(campaignFile string) (string, *campaign.Plan, error)

// Command is `greenlight compare`: args without the command's name;
// parse reads flags wherever they stand among the files.
func Command(args []string, find Finder, parse func(*flag.FlagSet, []string) ([]string, error), stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	mdPath := fs.String("markdown", "", "")
	tol := fs.String("tolerance", "", "")
	failWorse := fs.Bool("fail-worse", false, "")
	traces := fs.Bool("traces", false, "")
	step := fs.String("step", "", "")
	rn := renames{}
	fs.Var(rn, "rename", "")
	files, err := parse(fs, args)
	if err == nil && len(files) != 2 {
		err = fmt.Errorf("give two campaigns: OLD NEW")
		if *traces {
			err = fmt.Errorf("give two folders of traces: OLD NEW")
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "greenlight compare: %v\n\n%s", err, Help)
		return ExitUsage
	}
	if *traces {
		var mark *regexp.Regexp
		if *step != "" {
			if mark, err = regexp.Compile(*step); err != nil {
				fmt.Fprintf(stderr, "greenlight compare: --step %q: %v\n", *step, err)
				return ExitUsage
			}
		}
		return traceCommand(files[0], files[1], mark, *mdPath, *failWorse, stdout, stderr)
	}
	opts := Options{Tolerance: 0.02, Rename: map[string]string{}}
	var recs [2]*record.Record
	var paths [2]string
	for i, f := range files {
		path := f
		if strings.HasSuffix(f, ".yaml") || strings.HasSuffix(f, ".yml") {
			p, plan, err := find(f)
			if err != nil {
				fmt.Fprintf(stderr, "greenlight compare: %v\n", err)
				return ExitUsage
			}
			path = p
			if i == 1 {
				opts.Tolerance = plan.Compare.Tolerance
				for k, v := range plan.Compare.Rename {
					opts.Rename[k] = v
				}
			}
		}
		paths[i] = path
	}
	if *tol != "" {
		if opts.Tolerance, err = campaign.ParsePercent(*tol); err != nil {
			fmt.Fprintf(stderr, "greenlight compare: --tolerance: %v\n", err)
			return ExitUsage
		}
	}
	for k, v := range rn {
		opts.Rename[k] = v
	}
	// Each record streamed into its side: a record of a million rows is
	// compared in the memory of its values.
	var sides [2]*side
	for i, path := range paths {
		rename := opts.Rename
		if i == 1 {
			rename = nil
		}
		if recs[i], sides[i], err = loadSide(path, rename); err != nil {
			fmt.Fprintf(stderr, "greenlight compare: %v\n", err)
			return ExitUsage
		}
	}
	res := compareSides(recs[0], *sides[0], recs[1], *sides[1], opts)
	fmt.Fprint(stdout, res.Text())
	if *mdPath != "" {
		text := fmt.Sprintf("# %s compared with %s\n\n%s", md(res.New.Name), md(res.Old.Name), res.Markdown(0))
		if err := os.WriteFile(*mdPath, []byte(text), 0o644); err != nil {
			fmt.Fprintf(stderr, "greenlight compare: %v\n", err)
			return ExitWorse
		}
	}
	if *failWorse && res.Counts()[Worse] > 0 {
		return ExitWorse
	}
	return ExitOK
}
