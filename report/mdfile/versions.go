package mdfile

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Every version of the user's file that a write read and then replaced is
// kept in the state dir's versions/ folder, newest last, so that nothing
// the user typed is ever unrecoverable, even if a merge went wrong:
// `greenlight report --versions` lists them and `--version N` prints one.

const (
	versionsDir   = "versions"
	VersionsKept  = 200
	versionsBytes = 20 << 20
)

// Why a version was kept.
const (
	KeptReplaced = "replaced"  // the file at the path, displaced by a write
	KeptLate     = "late"      // written into a displaced file, then merged
	KeptDeleted  = "deleted"   // the file we wrote was gone: its last content
	KeptOverrode = "overruled" // two rewrites at once: the older, not merged
)

// Version is one kept version of the results file.
type Version struct {
	N    int
	Time time.Time
	Why  string
	Path string
	Size int64
}

// versions keeps versions in dir; a zero dir keeps none.
type versions struct {
	dir  string
	next int
	last string // the content kept last, not kept twice in a row
}

func newVersions(stateDir string) *versions {
	if stateDir == "" {
		return &versions{}
	}
	v := &versions{dir: filepath.Join(stateDir, versionsDir), next: 1}
	if list, err := ListVersions(stateDir); err == nil && len(list) > 0 {
		v.next = list[len(list)-1].N + 1
	}
	return v
}

// keep saves data as a version (best effort: a full disk must not stop
// the write that merges it) and prunes the oldest past the bounds.
func (v *versions) keep(data, why string) {
	if v.dir == "" || data == v.last {
		return
	}
	if os.MkdirAll(v.dir, 0o700) != nil {
		return
	}
	name := fmt.Sprintf("%06d-%s-%s.md", v.next, time.Now().UTC().Format("20060102T150405.000Z"), why)
	if os.WriteFile(filepath.Join(v.dir, name), []byte(data), 0o600) != nil {
		return
	}
	v.next++
	v.last = data
	v.prune()
}

func (v *versions) prune() {
	list, err := ListVersions(filepath.Dir(v.dir))
	if err != nil {
		return
	}
	var total int64
	for _, x := range list {
		total += x.Size
	}
	for len(list) > 1 && (len(list) > VersionsKept || total > versionsBytes) {
		os.Remove(list[0].Path)
		total -= list[0].Size
		list = list[1:]
	}
}

// ListVersions lists the versions kept in a state dir, oldest first.
func ListVersions(stateDir string) ([]Version, error) {
	dir := filepath.Join(stateDir, versionsDir)
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Version
	for _, e := range ents {
		parts := strings.SplitN(strings.TrimSuffix(e.Name(), ".md"), "-", 3)
		if len(parts) != 3 || !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		n, err := strconv.Atoi(parts[0])
		if err != nil {
			continue
		}
		t, _ := time.Parse("20060102T150405.000Z", parts[1])
		var size int64
		if fi, err := e.Info(); err == nil {
			size = fi.Size()
		}
		out = append(out, Version{N: n, Time: t, Why: parts[2], Path: filepath.Join(dir, e.Name()), Size: size})
	}
	slices.SortFunc(out, func(a, b Version) int { return a.N - b.N })
	return out, nil
}

// WhyKept says in words why a version was kept.
func WhyKept(why string) string {
	switch why {
	case KeptReplaced:
		return "the file as it stood, replaced by a write"
	case KeptLate:
		return "written into a file greenlight had replaced, merged"
	case KeptDeleted:
		return "the file's last content, after it was deleted"
	case KeptOverrode:
		return "one of two saves at once, the older, not merged"
	}
	return why
}
