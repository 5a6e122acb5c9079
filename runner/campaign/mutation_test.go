package campaign

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The mutation test: every example campaign and every campaign in the
// README, broken one seeded slip at a time as a person breaks a file, must
// be refused at the line the slip is on (or with that line named), and a
// hint that proposes a fix must give, applied, a file that loads; a
// misspelled key's "did you mean" must name the key that was meant.

var (
	mutationN    = flag.Int("mutation.n", 4000, "mutations the mutation test tries")
	mutationSeed = flag.Uint64("mutation.seed", 42, "the mutation test's seed")
	mutationShow = flag.Int("mutation.show", 0, "misses of each kind the mutation test prints")
	// A corpus the examples did not shape: each file is slipped perfile
	// times, from the seed (TestMutationsOfACorpus).
	mutationCorpus  = flag.String("mutation.corpus", "testdata/corpus/*.yaml", "the campaign files TestMutationsOfACorpus slips (a glob)")
	mutationPerFile = flag.Int("mutation.perfile", 300, "slips of each corpus file")
)

// mutationFloor is the share of broken files the loader must get right:
// all of them, at 4,000 slips of the examples as they are (seeds 42, 7,
// 99, 1000 and 5 each at 100%). A slip that is said at a neighbour, or
// with a hint whose edit does not load, fails the test, and its log names
// it. Under the race detector 600 slips are tried.
const mutationFloor = 1.0

type source struct {
	name  string
	lines []string
}

// campaignSources are the example campaigns and the README's.
func campaignSources(t *testing.T) []source {
	t.Setenv("DEMO_PORT", "18080") // the demo's, set by greenlight demo
	var out []source
	files, _ := filepath.Glob("../../examples/*.yaml")
	demo, _ := filepath.Glob("../../examples/demo/*.yaml")
	for _, f := range append(files, demo...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(f, "/"+f, b); err != nil {
			t.Fatalf("%s does not load as it is: %v", f, err)
		}
		out = append(out, source{filepath.Base(f), strings.Split(string(b), "\n")})
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	for i, m := range block.FindAllStringSubmatch(string(readme), -1) {
		if _, err := Parse("r.yaml", "/r.yaml", []byte(m[1])); err == nil {
			out = append(out, source{fmt.Sprintf("README#%d", i+1), strings.Split(m[1], "\n")})
		}
	}
	if len(out) < 7 {
		t.Fatalf("campaign sources: %d", len(out))
	}
	return out
}

// mutation is one slip: the file after it, the kind, the lines where the
// error belongs, and for a misspelled key the key meant.
type mutation struct {
	kind  string
	lines []string
	at    []int // 1-based lines of the mutated file
	meant string
	from  string // the source and its line, for the log
}

var keyColon = regexp.MustCompile(`^( *(?:- +)?)([A-Za-z_][A-Za-z0-9_]*):( .*)?$`)

// mutate breaks one line of src, or returns false when the kind does not
// apply to the line drawn.
func mutate(r *rand.Rand, src source) (mutation, bool) {
	lines := src.lines
	i := r.IntN(len(lines))
	line := lines[i]
	if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
		return mutation{}, false
	}
	with := func(kind string, repl ...string) mutation {
		out := append(append(append([]string{}, lines[:i]...), repl...), lines[i+1:]...)
		return mutation{kind: kind, lines: out, at: []int{i + 1}, from: fmt.Sprintf("%s:%d", src.name, i+1)}
	}
	km := keyColon.FindStringSubmatch(line)
	inBlock := (&loader{lines: lines}).inBlock(i + 1)
	switch kinds := []string{"dedent", "indent", "delete", "scalar<->mapping", "misspell", "drop colon", "block->flow", "tab"}; kinds[r.IntN(len(kinds))] {
	case "dedent":
		k := 1 + r.IntN(4)
		if indentOf(line) < k || inBlock {
			return mutation{}, false
		}
		return with(fmt.Sprintf("dedent %d", k), line[k:]), true
	case "indent":
		if inBlock {
			return mutation{}, false
		}
		k := 1 + r.IntN(4)
		return with(fmt.Sprintf("indent %d", k), strings.Repeat(" ", k)+line), true
	case "delete":
		if inBlock {
			return mutation{}, false
		}
		m := with("delete")
		m.lines = append(append([]string{}, lines[:i]...), lines[i+1:]...)
		// A line taken out leaves no line to point at: the lines on either
		// side of the gap, or the start of the mapping it was in (where
		// "the step has no run:" is said), are where a person looks.
		m.at = []int{i, i + 1}
		for j := i + 1; j < len(lines); j++ { // past any comment under the gap
			if t := strings.TrimSpace(lines[j]); t != "" && !strings.HasPrefix(t, "#") {
				m.at = append(m.at, j)
				break
			}
		}
		for j := i - 1; j >= 0; j-- {
			if strings.TrimSpace(lines[j]) != "" && !strings.HasPrefix(strings.TrimSpace(lines[j]), "#") && indentOf(lines[j]) < indentOf(line) {
				m.at = append(m.at, j+1)
				break
			}
		}
		return m, true
	case "scalar<->mapping":
		if km == nil || inBlock {
			return mutation{}, false
		}
		v := strings.TrimSpace(stripComment(km[3]))
		switch {
		case v == "" || strings.HasPrefix(v, "|") || strings.HasPrefix(v, ">") || strings.HasPrefix(v, "&") || strings.HasPrefix(v, "*"):
			return mutation{}, false
		case strings.HasPrefix(v, "{") || strings.HasPrefix(v, "["):
			return with("flow->scalar", km[1]+km[2]+": x"), true
		case r.IntN(2) == 0:
			return with("scalar->mapping", km[1]+km[2]+": {a: "+v+"}"), true
		default:
			return with("scalar->list", km[1]+km[2]+": ["+v+"]"), true
		}
	case "misspell":
		if km == nil || len(km[2]) < 3 || inBlock {
			return mutation{}, false
		}
		bad := misspell(r, km[2])
		m := with("misspell", km[1]+bad+":"+km[3])
		m.meant = km[2]
		return m, bad != km[2]
	case "drop colon":
		if km == nil || inBlock {
			return mutation{}, false
		}
		return with("drop colon", km[1]+km[2]+km[3]), true
	case "block->flow":
		if km == nil || km[3] != "" || inBlock {
			return mutation{}, false
		}
		var pairs []string
		j := i + 1
		for ; j < len(lines) && indentOf(lines[j]) > indentOf(line) && strings.TrimSpace(lines[j]) != ""; j++ {
			c := keyColon.FindStringSubmatch(lines[j])
			if c == nil || strings.Contains(c[1], "-") || indentOf(lines[j]) != indentOf(lines[i+1]) || strings.TrimSpace(c[3]) == "" || strings.TrimSpace(c[3]) == "|" {
				return mutation{}, false
			}
			pairs = append(pairs, c[2]+": "+strings.TrimSpace(stripComment(c[3])))
		}
		if len(pairs) == 0 {
			return mutation{}, false
		}
		m := with("block->flow", km[1]+km[2]+": {"+strings.Join(pairs, ", ")+"}")
		m.lines = append(append(append([]string{}, lines[:i]...), m.lines[i]), lines[j:]...)
		return m, true
	default:
		if indentOf(line) == 0 || inBlock {
			return mutation{}, false
		}
		k := r.IntN(indentOf(line))
		return with("tab", line[:k]+"\t"+line[k+1:]), true
	}
}

// misspell makes one slip of the fingers: two letters swapped, one
// dropped, one doubled or one struck for its neighbour.
func misspell(r *rand.Rand, s string) string {
	b := []byte(s)
	k := r.IntN(len(b) - 1)
	switch r.IntN(4) {
	case 0:
		b[k], b[k+1] = b[k+1], b[k]
	case 1:
		b = append(b[:k], b[k+1:]...)
	case 2:
		b = append(b[:k+1], b[k:]...)
	default:
		b[k] = "qwertyuiopasdfghjklzxcvbnm"[r.IntN(26)]
	}
	return string(b)
}

// verdict is how the loader did on one broken file.
type verdict struct {
	located bool   // the first error is at the slip's line, or names it
	miss    string // what went wrong; "" when all is right
}

// judge loads a mutated file; ok is false when it still loads (the slip
// made another campaign, not a broken file).
func judge(m mutation) (v verdict, ok bool) {
	_, err := Parse("m.yaml", "/m.yaml", []byte(strings.Join(m.lines, "\n")))
	if err == nil {
		return v, false
	}
	var errs FileErrors
	var fe *FileError
	switch {
	case errors.As(err, &errs):
		fe = errs[0]
	case errors.As(err, &fe):
	default:
		v.miss = "not a FileError: " + err.Error()
		return v, true
	}
	if v.located = namesLine(fe, m.at); !v.located {
		v.miss = fmt.Sprintf("at line %d, not %v: %s (hint %q)", fe.Line, m.at, fe.Msg, fe.Hint)
		return v, true
	}
	switch {
	case m.meant != "" && strings.Contains(fe.Hint, "did you mean") && !strings.Contains(fe.Hint, fmt.Sprintf("%q", m.meant)):
		v.miss = fmt.Sprintf("meant %q: %s", m.meant, fe.Hint)
	case fe.Fix != nil:
		fixed := fe.Fix.Apply(m.lines)
		if _, err := Parse("m.yaml", "/m.yaml", []byte(strings.Join(fixed, "\n"))); err != nil {
			v.miss = fmt.Sprintf("the hint %q, applied, does not load: %v", fe.Hint, firstLine(err.Error()))
		}
	case concreteHint.MatchString(fe.Hint):
		v.miss = fmt.Sprintf("the hint %q proposes a fix it does not carry", fe.Hint)
	}
	return v, true
}

// concreteHint matches the hints that propose one edit: each must carry it.
var concreteHint = regexp.MustCompile(`did you mean|indent it|write it as a block|move it to`)

func namesLine(fe *FileError, at []int) bool {
	for _, n := range at {
		if fe.Line == n || strings.Contains(fe.Msg+" "+fe.Hint, fmt.Sprintf("line %d", n)) {
			return true
		}
	}
	return false
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

func TestMutations(t *testing.T) {
	srcs := campaignSources(t)
	r := rand.New(rand.NewPCG(*mutationSeed, 1))
	n := *mutationN
	if raceOn && n == 4000 {
		n = 600
	}
	var s slips
	for s.tried < n {
		s.try(r, srcs[r.IntN(len(srcs))])
	}
	s.say(t, mutationFloor)
}

// TestMutationsOfACorpus slips each file of a corpus the loader's rules
// were not fitted to (testdata/corpus: campaigns written as other people
// write them, four-space indents, sequences not indented under their key,
// flow mappings, comments at the end of lines, quoted keys) perfile times
// from the seed, each file on its own draw: every broken file must be
// said at its line. -mutation.corpus points it at any folder of files.
func TestMutationsOfACorpus(t *testing.T) {
	files, _ := filepath.Glob(*mutationCorpus)
	if len(files) == 0 {
		t.Fatalf("no campaign files match %s", *mutationCorpus)
	}
	per := *mutationPerFile
	if raceOn && per == 300 {
		per = 40
	}
	var all slips
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(f, "/"+f, b); err != nil {
			t.Fatalf("%s does not load as it is: %v", f, err)
		}
		src := source{filepath.Base(f), strings.Split(string(b), "\n")}
		r := rand.New(rand.NewPCG(*mutationSeed, 1))
		var s slips
		for n := 0; s.tried < per && n < 100*per; n++ {
			s.try(r, src)
		}
		if s.broken > 0 {
			t.Logf("%s: %d slips, %d broke it, %.1f%% said at their line", src.name, s.tried, s.broken, 100*float64(s.located)/float64(s.broken))
		}
		all.add(s)
	}
	all.say(t, corpusFloor)
}

// corpusFloor is the share of a corpus's broken files said right: a
// deleted line whose loss shows only where what it held is used (a
// phase that needs: a deleted phase, a ${PORT} whose env: line went) is
// said there, not at the gap. testdata/corpus is at 99.8% (2,664 broken
// at seed 1: those five alone), a second corpus written after the rules
// at 99.8% (1,571); before the view (quoted keys, anchors, --- and merge
// keys) and the rules it let in, 97.4% and 99.1%.
const corpusFloor = 0.995

// slips tallies a mutation test: slips tried, files broken, those said at
// their line and those right in all (a hint's edit loads), and the
// misses by kind.
type slips struct {
	tried, broken, located, right int
	misses                        map[string][]string
}

// try makes one slip of src and judges it.
func (s *slips) try(r *rand.Rand, src source) {
	m, ok := mutate(r, src)
	if !ok {
		return
	}
	s.tried++
	v, invalid := judge(m)
	if !invalid {
		return
	}
	s.broken++
	if v.located {
		s.located++
	}
	if v.miss == "" {
		s.right++
		return
	}
	if s.misses == nil {
		s.misses = map[string][]string{}
	}
	s.misses[m.kind] = append(s.misses[m.kind], m.from+": "+v.miss)
}

func (s *slips) add(o slips) {
	s.tried += o.tried
	s.broken += o.broken
	s.located += o.located
	s.right += o.right
	for k, v := range o.misses {
		if s.misses == nil {
			s.misses = map[string][]string{}
		}
		s.misses[k] = append(s.misses[k], v...)
	}
}

// say logs the tally and its misses, and fails below the floor.
func (s *slips) say(t *testing.T, floor float64) {
	tried, broken, located, right, misses := s.tried, s.broken, s.located, s.right, s.misses
	if broken == 0 {
		t.Fatalf("%d slips broke no file", tried)
	}
	share := float64(right) / float64(broken)
	t.Logf("%d mutations, %d broke the file; %.1f%% named at their line, %.1f%% also with a hint that loads", tried, broken, 100*float64(located)/float64(broken), 100*share)
	var kinds []string
	for k := range misses {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		t.Logf("  %s: %d misses", k, len(misses[k]))
		for i, s := range misses[k] {
			if i >= *mutationShow {
				break
			}
			t.Logf("    %s", s)
		}
	}
	if share < floor {
		t.Errorf("%.1f%% of broken files right; the floor is %.1f%%", 100*share, 100*floor)
	}
}
