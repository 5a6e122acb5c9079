package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/greenlight-run/greenlight"

// imports lists, per package folder, the packages of ours its non-test
// files import, and counts the root's non-test lines.
func imports(t *testing.T) (map[string]map[string]bool, int) {
	t.Helper()
	out := map[string]map[string]bool{}
	rootLines := 0
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.Dir(path)
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		if out[dir] == nil {
			out[dir] = map[string]bool{}
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if p == module {
				out[dir]["."] = true
			} else if rel, ok := strings.CutPrefix(p, module+"/"); ok {
				out[dir][rel] = true
			}
		}
		if dir == "." {
			b, _ := os.ReadFile(path)
			rootLines += strings.Count(string(b), "\n")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, rootLines
}

// TestTheHouse: the architecture the README's layout and DESIGN.md draw,
// held by the code: the runner and the GPU side import nothing of ours
// above them, only the commands import the window, the runner process
// does not, and the root holds commands only (under 1,500 lines).
func TestTheHouse(t *testing.T) {
	pkgs, rootLines := imports(t)
	below := func(dir string, allowed ...string) {
		for im := range pkgs[dir] {
			ok := false
			for _, a := range allowed {
				ok = ok || im == a || strings.HasPrefix(im, a+"/")
			}
			if !ok {
				t.Errorf("%s imports %s: it may import only %v", dir, im, allowed)
			}
		}
	}
	for dir := range pkgs {
		switch {
		case dir == "runner/link":
			below(dir, "runner/state", "internal", "gpu") // the GPU rounds travel on it; below the runner
		// The state types every reader of a campaign's results needs, as
		// the journal replays them: below the engine (a job's Slurm words
		// and the plan are all they read).
		case dir == "runner/state":
			below(dir, "runner/campaign", "runner/slurm/words", "internal")
		case dir == "runner/slurm/words" || dir == "runner/search":
			below(dir)
		case dir == "runner" || strings.HasPrefix(dir, "runner/"):
			below(dir, "runner", "results", "internal")
		case dir == "gpu":
			below(dir)
		case strings.HasPrefix(dir, "internal/") && dir != "internal/statedir":
			below(dir, "internal")
		case dir == "conditions":
			below(dir, "gpu", "runner/campaign", "internal")
		// trace is a leaf (traces to summaries and captures): the
		// record keeps captures, and compare diffs them, through it.
		case dir == "record":
			below(dir, "conditions", "runner/campaign", "trace", "results", "internal")
		case dir == "compare":
			below(dir, "record", "conditions", "runner/campaign", "trace", "results", "internal")
		// results is the one model of a campaign's results every view
		// reads, and its rules, which the runner calls: above the state
		// types, below the runner and every view.
		case dir == "results":
			below(dir, "runner/state", "runner/campaign", "runner/search", "internal")
		// history reads records through compare's identity of a measure.
		case dir == "history":
			below(dir, "compare", "record", "conditions", "runner/campaign", "internal")
		case dir == "metrics":
			below(dir)
		// The measuring rules of a window (a phase's GPUs, the servers it
		// used, a server's view as a run's facts): below the monitor's
		// witness and the record, which both read them.
		case dir == "measure":
			below(dir, "gpu", "metrics", "runner/state", "runner/campaign", "internal")
		case dir == "trace":
			below(dir, "internal")
		// The results file's writer knows files, not campaigns.
		case dir == "report/mdfile":
			below(dir, "internal")
		case dir == "report" || strings.HasPrefix(dir, "report/"):
			below(dir, "report", "results", "record", "compare", "trace", "conditions", "measure", "metrics", "runner", "gpu", "internal")
		case dir == "daemon":
			below(dir, "runner", "report", "results", "record", "compare", "trace", "conditions", "measure", "metrics", "gpu", "internal")
		// A client reaches the runner through its link (the protocol and
		// the runner's config): never the runner process's own package.
		// A stopped campaign's journal it reads through client.Journal,
		// the runner's, handed in by the command.
		case dir == "client":
			below(dir, "runner/link", "runner/state", "runner/campaign", "report/mdfile", "results", "record", "gpu", "internal")
		// The window draws what the link sends and the results model says.
		case dir == "tui":
			below(dir, "runner", "report/mdfile", "results", "gpu", "internal")
		case dir == "demo":
			below(dir, "examples", "runner", "internal")
		case dir == "examples" || dir == "schema":
			below(dir)
		case dir == "cmd/greenlight-supervise":
			below(dir, "runner/supervise")
		// Where a campaign's state lives is the runner's default, resolved
		// once for every command.
		case dir == "internal/statedir":
			below(dir, "runner/state", "runner/campaign", "internal")
		case dir == ".":
		default:
			t.Errorf("%s has no rule in the house test: say what it may import", dir)
		}
		if pkgs[dir]["tui"] && dir != "." && dir != "client" {
			t.Errorf("%s imports tui: only the commands (and a client) may", dir)
		}
	}
	// The record and compare build without the engine: nothing they
	// import, however far down, is the runner or what runs steps.
	for _, dir := range []string{"record", "compare", "results"} {
		for dep := range depsOf(pkgs, dir) {
			switch dep {
			case "runner", "runner/supervise", "runner/slurm", "runner/modelload":
				t.Errorf("%s builds %s (through its imports): the state types it reads live in runner/state", dir, dep)
			}
		}
	}
	if rootLines >= 1500 {
		t.Errorf("the root package has %d lines of non-test Go: it holds commands only (under 1,500)", rootLines)
	}
}

// depsOf is every package of ours dir imports, however far down.
func depsOf(pkgs map[string]map[string]bool, dir string) map[string]bool {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(d string) {
		for im := range pkgs[d] {
			if !seen[im] {
				seen[im] = true
				walk(im)
			}
		}
	}
	walk(dir)
	return seen
}

// TestOneVerbTable: what a verb takes, what it writes, when it is taken
// and its words are its row of the one table (runner/state/verbs.go): no
// other file decides by a verb's typed name, where such a second rule is
// one line to add (name == "retry"). The root's dispatch of commands to
// cmdControl is the one list of commands, not a rule.
func TestOneVerbTable(t *testing.T) {
	byName := regexp.MustCompile(`(==|!=) "(approve|pause|resume|skip|retry|stop|greenlight|skip-point|retry-point)"`)
	sourceLines(t, map[string]bool{filepath.Join("runner", "state", "verbs.go"): true}, func(path string, n int, line string) {
		if byName.MatchString(line) {
			t.Errorf("%s:%d decides by a verb's name (%s): read its row of the verbs' table (state.Typed, and the Verb's methods)", path, n, strings.TrimSpace(line))
		}
	})
}

// sourceLines calls f with each line of the tree's Go files, tests,
// testdata and the files of except left out.
func sourceLines(t *testing.T, except map[string]bool, f func(path string, n int, line string)) {
	t.Helper()
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || except[path] {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			f(path, i+1, line)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTheWitnessMeasuresBelowTheRecord: the monitor's witness judges a
// run by the measuring rules in measure, never by the record's helpers:
// a window measured one way for the stamp and another for the record is
// two definitions.
func TestTheWitnessMeasuresBelowTheRecord(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("daemon", "witness.go"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"github.com/greenlight-run/greenlight/report"`) {
		t.Error("daemon/witness.go imports report: its measuring rules are measure's (PhaseGPUsOver, ServersOf, ServerFacts)")
	}
}

// TestOneStatistic: a sample's mean, spread and interval are results.Stat
// (results.StatOf, over search.Interval and results.CV), and new against
// old beyond noise is compare.Judge (Welch's test and its interval in
// compare.go): a file elsewhere that takes a standard deviation or a
// Student's t of its own is a second definition. history/edivisive.go's
// pooled t is Otava's own test of a change point, said there.
func TestOneStatistic(t *testing.T) {
	own := regexp.MustCompile(`MeanStdDev\(|StudentsT\{|func Welch|PopMeanStdDev\(`)
	owners := map[string]bool{
		filepath.Join("runner", "search", "search.go"): true, // Interval, t975
		filepath.Join("results", "units.go"):           true, // CV
		filepath.Join("compare", "compare.go"):         true, // Judge, Welch, WelchInterval
		filepath.Join("history", "edivisive.go"):       true, // Otava's pooled t of a change point
	}
	sourceLines(t, owners, func(path string, n int, line string) {
		if own.MatchString(line) {
			t.Errorf("%s:%d takes a statistic of its own (%s): use results.StatOf, or compare.Judge for a verdict", path, n, strings.TrimSpace(line))
		}
	})
}
