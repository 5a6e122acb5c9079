package report

import (
	"errors"
	"fmt"
	"github.com/greenlight-run/greenlight/report/mdfile"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/runner"
)

// An editor, as the tests model one: each save adds one line of the
// user's, at the top (under the title) or at the end, in one of the ways
// editors and shells write files.
type editor struct {
	t    testing.TB
	path string
	n    int
	top  []int // notes under the title, newest first
	end  []int // notes at the end, oldest first
	// stall, when set, is how long an in-place save waits between its
	// truncate and its write (a loaded machine's editor).
	stall func() time.Duration
	// anyOrder: a note may stand out of order at the end (an append that
	// landed in a file greenlight had just displaced, while the editor's
	// next save read the new one, comes after that save's line); it must
	// still be there exactly once.
	anyOrder bool
}

type saveStyle int

const (
	renameTop  saveStyle = iota // vim: write a new file, rename it over
	inPlaceTop                  // nano, VS Code: truncate and write, in two parts
	appendEnd                   // echo note >> results.md
	renameEnd                   // vim, a line added at the end
	inPlaceEnd                  // an editor rewriting in place, a line at the end
	saveStyles
)

func noteLine(n int) string { return fmt.Sprintf("note %d from the user", n) }

func (e *editor) save(style saveStyle) {
	n := e.n
	e.n++
	line := noteLine(n) + "\n"
	if style == appendEnd {
		f, err := os.OpenFile(e.path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			e.t.Errorf("append: %v", err)
			return
		}
		f.WriteString(line)
		f.Close()
		e.end = append(e.end, n)
		return
	}
	b, err := os.ReadFile(e.path)
	if err != nil {
		e.t.Errorf("read: %v", err)
		return
	}
	text := string(b)
	switch style {
	case renameTop, inPlaceTop:
		i := strings.IndexByte(text, '\n') + 1
		text = text[:i] + line + text[i:]
		e.top = append([]int{n}, e.top...)
	default:
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += line
		e.end = append(e.end, n)
	}
	switch style {
	case renameTop, renameEnd:
		tmp := e.path + ".swp"
		os.WriteFile(tmp, []byte(text), 0o644)
		if err := os.Rename(tmp, e.path); err != nil {
			e.t.Errorf("rename: %v", err)
		}
	default:
		f, err := os.OpenFile(e.path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			e.t.Errorf("open: %v", err)
			return
		}
		if e.stall != nil {
			time.Sleep(e.stall())
		}
		half := len(text) / 2
		f.WriteString(text[:half])
		time.Sleep(50 * time.Microsecond)
		f.WriteString(text[half:])
		f.Close()
	}
}

var noteRe = regexp.MustCompile(`(?m)^note (\d+) from the user$`)

// check: every note once, in the place the user put it; the title first;
// nothing of greenlight's outside its blocks; one block per id.
func (e *editor) check(t testing.TB, st *runner.State) {
	t.Helper()
	b, _ := os.ReadFile(e.path)
	out := string(b)
	var got []int
	for _, m := range noteRe.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		got = append(got, n)
	}
	want := append(slices.Clone(e.top), e.end...)
	if e.anyOrder {
		got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	}
	if !slices.Equal(got, want) {
		for _, n := range want {
			if c := strings.Count(out, noteLine(n)+"\n"); c != 1 {
				t.Errorf("note %d appears %d times; in kept versions %v", n, c, inVersions(e.path, noteLine(n)))
			}
		}
		if len(got) == len(want) {
			t.Errorf("notes out of place:\ngot  %v\nwant %v", got, want)
		}
	}
	if !strings.HasPrefix(out, "# my notes\n") {
		t.Errorf("the user's title is no longer first: %q", out[:min(len(out), 80)])
	}
	for _, l := range strings.Split(mdfile.UserText(out), "\n") {
		if l != "" && l != "# my notes" && !noteRe.MatchString(l) {
			t.Errorf("text outside greenlight's blocks that the user did not write: %q", l)
		}
	}
	blockIDs, damaged := mdfile.BlockIDs(out)
	if len(damaged) > 0 {
		t.Errorf("damaged markers: %v", damaged)
	}
	ids := map[string]int{}
	for _, id := range blockIDs {
		ids[id]++
	}
	for id, c := range ids {
		if c != 1 {
			t.Errorf("block %s appears %d times", id, c)
		}
	}
	if st != nil {
		rows := len(st.Phase("bench").Steps[0].Results)
		if rows > fullRows && !strings.Contains(out, fmt.Sprintf("**%d rows**", rows)) {
			t.Errorf("the last write (%d rows) is not in the file", rows)
		}
	}
}

// stateWithRows is the golden state with n results in bench's first step.
func stateWithRows(base *runner.State, n int) *runner.State {
	s := *base
	s.Phases = slices.Clone(base.Phases)
	p := s.Phase("bench")
	p.Steps = slices.Clone(p.Steps)
	rows := make([]runner.Row, n)
	for i := range rows {
		rows[i] = runner.Row{Phase: "bench", Time: t0, Cols: []string{"i", "tok_s"}, Values: []any{float64(i), 50 + float64(i%17)}}
	}
	p.Steps[0].Results = rows
	s.Now = base.Now.Add(time.Duration(n) * time.Millisecond)
	return &s
}

// stormViaSymlink: the results file greenlight writes is a symlink into
// a notes folder, and the editor saves the file it points to (the edit
// storm's SYMLINK=1).
var stormViaSymlink = os.Getenv("SYMLINK") != ""

func newEditedFile(t testing.TB) (*Writer, *editor, *runner.State) {
	path := filepath.Join(t.TempDir(), "r.md")
	edited := path
	if stormViaSymlink {
		edited = filepath.Join(filepath.Dir(path), "notes", "r.md")
		os.MkdirAll(filepath.Dir(edited), 0o755)
		if err := os.Symlink("notes/r.md", path); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(edited, []byte("# my notes\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// With a state dir: every version a write replaced is kept, and a
	// failing storm says whether a lost line was ever read.
	w := NewWriter(path, testPlan(t), testEnv(), fakeGPUs{}, filepath.Join(filepath.Dir(path), "state"))
	st := fullState(w.plan)
	if err := w.Write(st); err != nil && !errors.Is(err, mdfile.ErrNoSwap) {
		t.Fatal(err)
	}
	return w, &editor{t: t, path: edited}, st
}

// inVersions says which kept versions hold line.
func inVersions(path, line string) []string {
	list, _ := mdfile.ListVersions(filepath.Join(filepath.Dir(path), "state"))
	var in []string
	for _, v := range list {
		if b, err := os.ReadFile(v.Path); err == nil && strings.Contains(string(b), line+"\n") {
			in = append(in, fmt.Sprintf("%d(%s)", v.N, v.Why))
		}
	}
	return in
}

// TestEditorsNeverLoseALine: one editor saves 1,000 times, in every style
// in turn and at random moments, while 300 results arrive and are written.
// Every line of the user's survives exactly once, in its place; none of
// greenlight's text lands outside its blocks.
func TestEditorsNeverLoseALine(t *testing.T) {
	w, ed, _ := newEditedFile(t)
	all := []saveStyle{renameTop, inPlaceTop, appendEnd, renameEnd, inPlaceEnd}
	ed.check(t, runStorm(t, w, ed, 1000, 300, 500*time.Microsecond, all))
}

// FuzzSavesLandingInAWrite drives the instants a save can land inside a
// write (after the read, after the new file is written, just before the
// swap, just after it) from the fuzzer's bytes: each byte is a save style
// or none. Just after the swap only appends land: a save that reads the
// file there would read the instant between a swap and its undo, which
// without the hook is one system call wide.
func FuzzSavesLandingInAWrite(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 0, 2})
	f.Add([]byte{5, 5, 0, 5, 5, 1, 5, 5, 2, 5, 5, 3, 5, 5, 4})
	f.Add([]byte{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2})
	f.Add([]byte{5, 5, 2, 3, 5, 5, 2, 0, 2, 2, 3, 3, 5, 5, 2, 3}) // a save, then a rename over ours just after the swap
	f.Add([]byte{0, 0, 0, 0, 1, 1, 1, 1, 3, 3, 3, 3, 4, 4, 4, 4})
	f.Fuzz(func(t *testing.T, plan []byte) {
		if len(plan) > 64 {
			plan = plan[:64]
		}
		w, ed, base := newEditedFile(t)
		w.file.SetTestHook(func(at string) {
			if len(plan) == 0 {
				return
			}
			style := saveStyle(int(plan[0]) % (int(saveStyles) + 1))
			plan = plan[1:]
			// Just after the swap, a save by rename lands on ours: the
			// write must not swap back over it, and must merge both.
			if style == saveStyles || at == "swapped" && style != appendEnd && style != renameEnd && style != renameTop {
				return
			}
			if at == "swapped" && style != appendEnd {
				// Two lines added at the end of two versions at once (one
				// appended to the file just displaced, one saved over ours):
				// both kept, in either order.
				ed.anyOrder = true
			}
			ed.save(style)
		})
		var last *runner.State
		for i := 1; len(plan) > 0 && i < 40; i++ {
			last = stateWithRows(base, i*3)
			if err := w.Write(last); err != nil && !errors.Is(err, mdfile.ErrNoSwap) {
				t.Fatal(err)
			}
		}
		w.file.SetTestHook(nil)
		if last != nil {
			w.Write(last)
		}
		w.Flush()
		ed.check(t, last)
	})
}

type noSamples struct{}

func (noSamples) Summarize(from, to time.Time, devices []int) []gpu.Summary {
	return []gpu.Summary{{Device: gpu.Device{Index: 0}}}
}

// TestZeroSecondPhaseHasNoEmptyTable: a phase shorter than the sampling
// interval says so rather than showing a GPU table with no rows.
func TestZeroSecondPhaseHasNoEmptyTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.md")
	w := NewWriter(path, testPlan(t), testEnv(), noSamples{}, "")
	if err := w.Write(fullState(w.plan)); err != nil {
		t.Fatal(err)
	}
	md := string(must(os.ReadFile(path)))
	if strings.Contains(md, "| GPU | Mean util") {
		t.Errorf("a GPU table with no rows:\n%s", md)
	}
	if !strings.Contains(md, "No GPU reading fell within the phase") {
		t.Error("the phase does not say why it has no GPU table")
	}
}
