package report

import (
	"fmt"
	"github.com/greenlight-run/greenlight/report/mdfile"
	"github.com/greenlight-run/greenlight/runner"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tally is what an edit storm left: notes lost and duplicated, whether
// the last write's rows are in the file, and lines of greenlight's found
// outside its blocks.
type tally struct {
	lost, dup, leaked int
	rows              bool
}

func (e *editor) tally(rows int) tally {
	b, _ := os.ReadFile(e.path)
	out := string(b)
	var t tally
	for _, n := range append(append([]int{}, e.top...), e.end...) {
		switch c := strings.Count(out, noteLine(n)+"\n"); {
		case c == 0:
			t.lost++
		case c > 1:
			t.dup++
		}
	}
	for _, l := range strings.Split(mdfile.UserText(out), "\n") {
		if l != "" && l != "# my notes" && !noteRe.MatchString(l) {
			t.leaked++
		}
	}
	t.rows = rows <= fullRows || strings.Contains(out, fmt.Sprintf("**%d rows**", rows))
	return t
}

// stormLoads are the loads a storm runs under: LOADS (idle, busy, hog),
// else idle and busy.
func stormLoads() []string {
	if l := os.Getenv("LOADS"); l != "" {
		return strings.Split(l, ",")
	}
	return []string{"idle", "busy"}
}

// loadOn puts the machine under a load for a round: idle, busy (a
// goroutine spinning a core in this process), or hog (busy, and beside
// it another process spinning every core: the build or benchmark beside
// a campaign that the scheduler shares the cores with).
func loadOn(t *testing.T, load string) (stop func()) {
	switch load {
	case "idle":
		return func() {}
	case "busy":
		return busy(t)
	case "hog":
		stopBusy := busy(t)
		var hogs []*exec.Cmd
		for range runtime.NumCPU() {
			c := exec.Command("sh", "-c", "while :; do :; done")
			if err := c.Start(); err != nil {
				t.Fatalf("a CPU hog beside the storm: %v", err)
			}
			hogs = append(hogs, c)
		}
		return func() {
			stopBusy()
			for _, c := range hogs {
				c.Process.Kill()
				c.Wait()
			}
		}
	}
	t.Fatalf("LOADS: %q is not idle, busy or hog", load)
	return nil
}

// TestEditStorm is scripts/edit-storm's measurement, skipped unless
// GREENLIGHT_EDIT_STORM is set: ROUNDS rounds of SAVES saves of each kind
// (append, in-place, rename, mixed) while RESULTS results arrive, idle
// and with every core busy; one line per kind and load.
func TestEditStorm(t *testing.T) {
	if os.Getenv("GREENLIGHT_EDIT_STORM") == "" {
		t.Skip("a measurement: run scripts/edit-storm")
	}
	rounds, saves, results := num("ROUNDS", 5), num("SAVES", 1000), num("RESULTS", 300)
	kinds := []struct {
		name   string
		styles []saveStyle
	}{
		{"append", []saveStyle{appendEnd}},
		{"in-place", []saveStyle{inPlaceTop, inPlaceEnd}},
		{"rename", []saveStyle{renameTop, renameEnd}},
		{"mixed", []saveStyle{renameTop, inPlaceTop, appendEnd, renameEnd, inPlaceEnd}},
	}
	fmt.Printf("%-6s %-9s %6s %6s %5s %6s %7s %8s\n", "load", "kind", "rounds", "saves", "lost", "dup", "rows", "leaked")
	only := os.Getenv("KINDS") // e.g. "rename,mixed"
	for _, load := range stormLoads() {
		for _, k := range kinds {
			if only != "" && !strings.Contains(","+only+",", ","+k.name+",") {
				continue
			}
			var sum stormSum
			start := time.Now()
			for range rounds {
				stop := loadOn(t, load)
				got := stormOnce(t, saves, results, k.styles)
				stop()
				sum.add(got)
			}
			fmt.Printf("%-6s %-9s %6d %6d %5d %6d %3d/%-3d %8d   (%v)\n", load, k.name, rounds, rounds*saves,
				sum.lost, sum.dup, sum.allRows, rounds, sum.leaked, time.Since(start).Round(time.Second))
		}
	}
}

// stormSum is a storm's rounds added up: notes lost, duplicated and
// leaked, and the rounds whose last rows made it.
type stormSum struct {
	tally
	allRows int
}

func (s *stormSum) add(got tally) {
	s.lost += got.lost
	s.dup += got.dup
	s.leaked += got.leaked
	if got.rows {
		s.allRows++
	}
}

// num is the environment's positive whole number name, else def.
func num(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func stormOnce(t *testing.T, saves, results int, styles []saveStyle) tally {
	w, ed, _ := newEditedFile(t)
	// The results come over the whole storm, as a step's would.
	gap := 2 * time.Duration(saves) * 750 * time.Microsecond / time.Duration(results)
	runStorm(t, w, ed, saves, results, gap, styles)
	return ed.tally(results)
}

// TestEditStormLive is the storm as a running campaign has it: the writer
// runs (Writer.Run: coalesced writes, the editors' holds, a stale save
// repaired, the open watch) while results arrive every SPREAD/RESULTS and
// the editor saves SAVES times over SPREAD (default 30 s), by rename
// (STYLE=mixed: every kind in turn). Skipped unless GREENLIGHT_EDIT_STORM
// is set; scripts/edit-storm LIVE=1 runs it, idle and busy.
func TestEditStormLive(t *testing.T) {
	if os.Getenv("GREENLIGHT_EDIT_STORM") == "" || os.Getenv("LIVE") == "" {
		t.Skip("a measurement: LIVE=1 scripts/edit-storm")
	}
	rounds, saves, results := num("ROUNDS", 5), num("SAVES", 1000), num("RESULTS", 300)
	spread := time.Duration(num("SPREAD", 30)) * time.Second
	styles := []saveStyle{renameTop, renameEnd}
	if os.Getenv("STYLE") == "mixed" {
		styles = []saveStyle{renameTop, inPlaceTop, appendEnd, renameEnd, inPlaceEnd}
	}
	fmt.Printf("%-6s %-6s %6s %6s %5s %6s %7s %8s\n", "load", "link", "rounds", "saves", "lost", "dup", "rows", "leaked")
	for _, load := range stormLoads() {
		var sum stormSum
		start := time.Now()
		for range rounds {
			stop := loadOn(t, load)
			w, ed, _ := newEditedFile(t)
			events := make(chan runner.Event, 1)
			done := make(chan struct{})
			go func() { defer close(done); w.Run(events, nil) }()
			base := fullState(w.plan)
			go func() {
				for i := 1; i <= results; i++ {
					events <- runner.Event{Kind: runner.ResultRecorded, State: stateWithRows(base, i)}
					time.Sleep(spread / time.Duration(results))
				}
				close(events)
			}()
			for i := range saves {
				ed.save(styles[i%len(styles)])
				time.Sleep(spread / time.Duration(saves))
			}
			<-done
			stop()
			got := ed.tally(results)
			if got.lost > 0 && os.Getenv("VERBOSE") != "" {
				b, _ := os.ReadFile(ed.path)
				for _, n := range append(append([]int{}, ed.top...), ed.end...) {
					if !strings.Contains(string(b), noteLine(n)+"\n") {
						fmt.Printf("  lost note %d; in kept versions: %v\n", n, inVersions(w.path, noteLine(n)))
					}
				}
			}
			sum.add(got)
		}
		link := "no"
		if stormViaSymlink {
			link = "yes"
		}
		fmt.Printf("%-6s %-6s %6d %6d %5d %6d %3d/%-3d %8d   (%v)\n", load, link, rounds, rounds*saves,
			sum.lost, sum.dup, sum.allRows, rounds, sum.leaked, time.Since(start).Round(time.Second))
	}
}
