package link

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/internal/files"
)

// Command is the hidden subcommand that is the runner process.
const Command = "__runner"

// Config is how a runner is started: the client fills it in from its
// flags and writes it to the runner's argv (Args); the runner parses it
// back (Parse). The flags the two share are registered in one place
// (Register).
type Config struct {
	File     string        // the campaign file
	StateDir string        // absolute
	Report   string        // absolute; "": the campaign's report:
	GPU      []string      // GPU sources; none: the campaign's gpus.sources, else auto
	Interval time.Duration // GPU sampling period
	Approve  string        // gates to open up front: ids, comma separated, or all
	Demo     bool          // the demo's runner: its gate opens when no window is attached
	Retry    string        // a finished phase to run again as the runner starts

	// Given are the flags given on the command line: the others may be
	// taken from the campaign's last runner (Reuse).
	Given  map[string]bool
	reused bool
}

// GPUFlag collects --gpu, which may be given more than once: a source for
// this machine and dcgm-exporter lists for others.
type GPUFlag []string

func (g *GPUFlag) String() string     { return strings.Join(*g, " ") }
func (g *GPUFlag) Set(v string) error { *g = append(*g, v); return nil }

// Register adds the flags a client and the runner share to fs.
func (c *Config) Register(fs *flag.FlagSet) {
	fs.Var((*GPUFlag)(&c.GPU), "gpu", "")
	fs.StringVar(&c.Report, "report", "", "")
	fs.StringVar(&c.StateDir, "state-dir", "", "")
	fs.DurationVar(&c.Interval, "interval", time.Second, "")
	fs.StringVar(&c.Approve, "approve", "", "")
}

// Check refuses what no runner can run with; call it after parsing.
func (c *Config) Check(fs *flag.FlagSet) error {
	c.Given = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { c.Given[fl.Name] = true })
	if c.Interval < 100*time.Millisecond {
		return fmt.Errorf("--interval %s is below 100ms", c.Interval)
	}
	return nil
}

// Args is the runner's argv after the command.
func (c Config) Args() []string {
	args := []string{"--state-dir", c.StateDir, "--interval", c.Interval.String()}
	for _, g := range c.GPU {
		args = append(args, "--gpu", g)
	}
	if c.Report != "" {
		args = append(args, "--report", c.Report)
	}
	if c.Approve != "" {
		args = append(args, "--approve", c.Approve)
	}
	if c.Demo {
		args = append(args, "--demo")
	}
	if c.Retry != "" {
		args = append(args, "--retry", c.Retry)
	}
	return append(args, c.File)
}

// Parse is Args read back.
func Parse(args []string) (Config, error) {
	var c Config
	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.Register(fs)
	fs.BoolVar(&c.Demo, "demo", false, "")
	fs.StringVar(&c.Retry, "retry", "", "")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if err := c.Check(fs); err != nil {
		return c, err
	}
	if fs.NArg() != 1 {
		return c, fmt.Errorf("want one campaign file, got %q", fs.Args())
	}
	c.File = fs.Arg(0)
	if c.StateDir == "" || !filepath.IsAbs(c.StateDir) {
		return c, fmt.Errorf("--state-dir %q: the client gives an absolute state dir", c.StateDir)
	}
	return c, nil
}

// The flags a runner was started with are kept in its state dir, so that
// a runner started again later (resume after a stop, a reboot, a killed
// runner) reads the GPUs from the same source at the same interval and
// writes the same results file, without the user repeating them; a flag
// given again wins, and is said.

const savedName = "runner-flags.json"

type saved struct {
	GPU      []string `json:"gpu,omitempty"`
	Interval string   `json:"interval,omitempty"`
	Report   string   `json:"report,omitempty"`
}

// Save records the flags this runner started with.
func (c Config) Save() {
	b, err := json.Marshal(saved{GPU: c.GPU, Interval: c.Interval.String(), Report: c.Report})
	if err == nil {
		files.WriteAtomic(filepath.Join(c.StateDir, savedName), b)
	}
}

// Reuse fills in the flags not given from those the campaign's last
// runner started with, saying on out what it reused and what changed.
// Only the first call does anything.
func (c *Config) Reuse(out io.Writer) {
	if c.reused {
		return
	}
	c.reused = true
	last, ok := readSaved(c.StateDir)
	if !ok {
		return
	}
	switch {
	case len(last.GPU) == 0:
	case !c.Given["gpu"]:
		c.GPU = last.GPU
		fmt.Fprintf(out, "greenlight: --gpu %s, as the campaign was started with (give --gpu to change it)\n", strings.Join(last.GPU, " --gpu "))
	case !slices.Equal(c.GPU, last.GPU):
		fmt.Fprintf(out, "greenlight: --gpu %s, where the campaign was started with --gpu %s\n", strings.Join(c.GPU, " --gpu "), strings.Join(last.GPU, " --gpu "))
	}
	if d, err := time.ParseDuration(last.Interval); err == nil && d != c.Interval {
		if c.Given["interval"] {
			fmt.Fprintf(out, "greenlight: --interval %s, where the campaign was started with %s\n", c.Interval, d)
		} else {
			c.Interval = d
		}
	}
	switch {
	case last.Report == "" || last.Report == c.Report:
	case !c.Given["report"]:
		c.Report = last.Report
		fmt.Fprintf(out, "greenlight: --report %s, as the campaign was started with (give --report to change it)\n", last.Report)
	default:
		fmt.Fprintf(out, "greenlight: --report %s, where the campaign was started with --report %s\n", c.Report, last.Report)
	}
}

// SavedReport is the results file the campaign's last runner (in
// stateDir) was started with by --report; "" when none.
func SavedReport(stateDir string) string {
	last, _ := readSaved(stateDir)
	return last.Report
}

// readSaved is the flags the campaign's last runner saved in stateDir.
func readSaved(stateDir string) (saved, bool) {
	var last saved
	b, err := os.ReadFile(filepath.Join(stateDir, savedName))
	if err != nil || json.Unmarshal(b, &last) != nil {
		return saved{}, false
	}
	return last, true
}
