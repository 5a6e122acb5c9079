package mdfile

// The blocks: the owner has only the blocks between its markers and
// leaves every other byte to the person, whose edits made while the file
// is kept survive every write. A damaged or deleted block is re-appended
// once, never duplicated; text outside valid blocks comes back byte for
// byte.

import (
	"regexp"
	"strings"
)

var markerRe = regexp.MustCompile(`^<!-- greenlight:(begin|end) ([A-Za-z0-9_.:-]+) -->\r?\n?$`)

// BeginMarker and EndMarker are the lines around block id.
func BeginMarker(id string) string { return "<!-- greenlight:begin " + id + " -->\n" }

// EndMarker: see BeginMarker.
func EndMarker(id string) string { return "<!-- greenlight:end " + id + " -->\n" }

// segment is a run of the file: the user's text, or one of our blocks.
type segment struct {
	id   string // "" for the user's text
	text string // for a block: the whole of it, markers included
}

// parse splits a file into the user's text and our blocks. A begin marker
// without its end, an end without its begin, or a second block of the same
// id is damage: those marker lines are dropped and what stood between them
// stays as the user's text.
func parse(content string) (segs []segment, damaged []string) {
	lines := strings.SplitAfter(content, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	seen := map[string]bool{}
	var user strings.Builder
	flush := func() {
		if user.Len() > 0 {
			segs = append(segs, segment{text: user.String()})
			user.Reset()
		}
	}
	for i := 0; i < len(lines); i++ {
		m := markerRe.FindStringSubmatch(lines[i])
		if m == nil {
			user.WriteString(lines[i])
			continue
		}
		id := m[2]
		if m[1] == "end" {
			damaged = append(damaged, id)
			continue
		}
		end := -1
		for j := i + 1; j < len(lines); j++ {
			if mj := markerRe.FindStringSubmatch(lines[j]); mj != nil {
				if mj[1] == "end" && mj[2] == id {
					end = j
				}
				break
			}
		}
		if end < 0 || seen[id] {
			damaged = append(damaged, id)
			continue
		}
		seen[id] = true
		flush()
		segs = append(segs, segment{id: id, text: strings.Join(lines[i:end+1], "")})
		i = end
	}
	flush()
	return segs, damaged
}

// UserText is everything in the file that is not one of our blocks or a
// marker line.
func UserText(content string) string {
	segs, _ := parse(content)
	var b strings.Builder
	for _, s := range segs {
		if s.id == "" {
			b.WriteString(s.text)
		}
	}
	return b.String()
}

// merge puts blocks (id -> body, without markers) into content. order is
// the ids in the order new blocks should appear; an existing block is
// replaced in place; a new one goes after the block before it in order, or
// at the end. It returns the ids of blocks that were damaged and re-made.
func merge(content string, bodies map[string]string, order []string) (string, []string) {
	segs, damaged := parse(content)
	wrap := func(id string) string {
		body := neutralize(bodies[id])
		if body != "" && !strings.HasSuffix(body, "\n") {
			body += "\n"
		}
		return BeginMarker(id) + body + EndMarker(id)
	}
	have := map[string]bool{}
	for i := range segs {
		if id := segs[i].id; id != "" {
			if _, ours := bodies[id]; ours {
				segs[i].text = wrap(id)
			}
			have[id] = true
		}
	}
	var remade []string
	for _, d := range damaged {
		if !have[d] {
			remade = append(remade, d)
		}
	}
	for k, id := range order {
		if have[id] {
			continue
		}
		if _, ok := bodies[id]; !ok {
			continue
		}
		at := len(segs)
		for p := k - 1; p >= 0; p-- {
			if idx := indexOf(segs, order[p]); idx >= 0 && !contains(remade, id) {
				at = idx + 1
				break
			}
		}
		seg := segment{id: id, text: wrap(id)}
		// A marker must start a line: the one change ever made to the
		// user's text is a newline added after a last line that had none.
		if at > 0 && !strings.HasSuffix(segs[at-1].text, "\n") {
			segs[at-1].text += "\n"
		}
		segs = append(segs[:at], append([]segment{seg}, segs[at:]...)...)
		have[id] = true
	}
	var b strings.Builder
	for _, s := range segs {
		b.WriteString(s.text)
	}
	return b.String(), remade
}

func indexOf(segs []segment, id string) int {
	for i, s := range segs {
		if s.id == id {
			return i
		}
	}
	return -1
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// neutralize keeps text that steps wrote (a summary) from closing or
// opening a block: a marker line inside a body loses its marker form.
func neutralize(body string) string {
	if !strings.Contains(body, "<!-- greenlight:") {
		return body
	}
	lines := strings.SplitAfter(body, "\n")
	for i, l := range lines {
		if markerRe.MatchString(l) {
			lines[i] = strings.Replace(l, "<!-- greenlight:", "<!-- (quoted) greenlight:", 1)
		}
	}
	return strings.Join(lines, "")
}

// BlockIDs are the ids of the blocks in content, in order, a block said
// twice named twice, and the ids whose markers are damaged.
func BlockIDs(content string) (ids, damaged []string) {
	segs, damaged := parse(content)
	for _, s := range segs {
		if s.id != "" {
			ids = append(ids, s.id)
		}
	}
	return ids, damaged
}
