package campaign

import (
	"reflect"
	"sort"
	"strings"
)

// Words a person may have misspelled: the campaign file's keys, and the
// distance from a slip to the word meant.

var allKeys = func() []string {
	seen := map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			if tag := strings.Split(f.Tag.Get("yaml"), ",")[0]; tag != "" && tag != "-" {
				if seen[tag] {
					continue
				}
				seen[tag] = true
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(CampaignSpec{}))
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}()

// isKeyword says whether a word is a key of some mapping of the file.
var isKeyword = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range allKeys {
		m[k] = true
	}
	return m
}()

func closestKey(s string) string { return nearest(s, allKeys) }

// editDistance counts the edits from a to b: a letter put in, taken out,
// struck for another, or two neighbours swapped (the optimal string
// alignment distance: "rnu" is one edit from "run", not two).
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// nearest is the word of words nearest to s within two edits, "" if none;
// case is not counted (keys are lower case, whatever a person types).
func nearest(s string, words []string) string { return nearestExact(strings.ToLower(s), words) }

// Nearest is the word of words nearest to s within two edits, case
// counted, "" if none: a result column's name for a did-you-mean.
func Nearest(s string, words []string) string { return nearestExact(s, words) }

// nearestExact is nearest with case counted (names of env: and axes).
func nearestExact(s string, words []string) string {
	if s == "" {
		return ""
	}
	best, bestRank := "", [3]int{3, 0, 0}
	for _, w := range words {
		d := editDistance(s, w)
		if d > 2 || d >= len(w) {
			continue
		}
		rank := [3]int{d, 1, abs(len(w) - len(s))}
		if w[0] == s[0] {
			rank[1] = 0
		}
		if best == "" || less(rank, bestRank) {
			best, bestRank = w, rank
		}
	}
	return best
}

func less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
