package supervise

import (
	"bufio"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A step in a cgroup (v2) of its own, under its campaign's, where this
// machine lets greenlight make one (root, or a delegated subtree): the
// whole tree is in it whatever it does (setsid, double forks), it is
// stopped with cgroup.kill, and its peak memory and CPU time are the
// tree's. Where no cgroup can be made the subreaper does the job and
// the figures are those of the processes the supervisor waited for.

// CampaignCgroup makes the campaign's cgroup beside the calling process's
// own (the runner's), named for the campaign (name: already safe for a
// file's name, campaign.SafeName) and its state dir, and
// hands its controllers (memory, cpu) down where the parent has them. It
// returns the folder, or why no cgroup can be made here.
func CampaignCgroup(name, stateDir string) (string, error) {
	mount, own, err := cgroup2Self()
	if err != nil {
		return "", err
	}
	parent := filepath.Join(mount, own)
	dir := filepath.Join(parent, "greenlight."+name[:min(len(name), 40)]+"."+shortHash(stateDir))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("cannot make a cgroup under %s: %w", parent, err)
	}
	handDown(dir)
	return dir, nil
}

// handDown gives a campaign's cgroup's steps the memory and cpu
// controllers, each asked for alone: one missing must not cost the
// other. Without memory there is no memory.peak; cpu.stat's usage is
// there either way.
func handDown(dir string) {
	avail, _ := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	for _, c := range strings.Fields(string(avail)) {
		if c == "memory" || c == "cpu" {
			_ = os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+c), 0o644)
		}
	}
}

// RemoveCgroups removes a campaign's cgroup and its steps' that are
// empty (a kept process's is not: it is removed at a later end).
func RemoveCgroups(dir string) {
	if dir == "" {
		return
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() {
			_ = unix.Rmdir(filepath.Join(dir, e.Name()))
		}
	}
	_ = unix.Rmdir(dir)
}

// KillCgroup ends what is left in a step's cgroup whose supervisor died:
// every process in it at once (cgroup.kill: no fork outruns it, and a
// process that cleared its environment is in it all the same), waiting up
// to wait for it to empty, then removes it. It returns how many processes
// it held; 0 where dir is "" or no cgroup.
func KillCgroup(dir string, wait time.Duration) int {
	if dir == "" {
		return 0
	}
	c := &stepCgroup{dir: dir}
	n := len(c.procs())
	if n > 0 {
		c.kill()
		for deadline := time.Now().Add(wait); populated(dir) && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
	}
	RemoveCgroups(dir)
	return n
}

// RemoveStaleCgroups removes the campaigns' cgroups beside this process's
// own (greenlight.*) that hold no live process: left by runners killed
// before their end. A populated one is left alone (the kernel refuses to
// remove it); an empty one of a live runner is made again by its next
// step (newStepCgroup). It returns how many it removed.
func RemoveStaleCgroups() int {
	mount, own, err := cgroup2Self()
	if err != nil {
		return 0
	}
	parent := filepath.Join(mount, own)
	ents, _ := os.ReadDir(parent)
	n := 0
	for _, e := range ents {
		dir := filepath.Join(parent, e.Name())
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "greenlight.") || populated(dir) {
			continue
		}
		RemoveCgroups(dir)
		if _, err := os.Stat(dir); err != nil {
			n++
		}
	}
	return n
}

// cgroup2Self is where the cgroup v2 hierarchy is mounted and this
// process's cgroup in it.
func cgroup2Self() (mount, own string, err error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", "", fmt.Errorf("cannot read /proc/self/cgroup: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			own = p
		}
	}
	if own == "" {
		return "", "", errors.New("this process is in no cgroup v2 (a cgroup v1 machine)")
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
		l := sc.Text()
		pre, post, ok := strings.Cut(l, " - ")
		fields, kind := strings.Fields(pre), strings.Fields(post)
		if ok && len(fields) >= 5 && len(kind) > 0 && kind[0] == "cgroup2" && fields[3] == "/" {
			return fields[4], own, nil
		}
	}
	return "", "", errors.New("cgroup v2 is not mounted here")
}

// shortHash tells two campaigns of one name apart by their state dirs.
func shortHash(s string) string {
	h := fnv.New32a()
	h.Write([]byte(s))
	return fmt.Sprintf("%08x", h.Sum32())
}

// stepCgroup is a step's cgroup, made in its campaign's, and open for
// starting the command in it (CLONE_INTO_CGROUP: no moment outside).
type stepCgroup struct {
	dir string
	fd  int
}

func newStepCgroup(campaign, name string) (*stepCgroup, error) {
	dir := filepath.Join(campaign, name)
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrNotExist) {
		// The campaign's own, removed while empty (another runner's
		// RemoveStaleCgroups): made again, its controllers handed down.
		if err = os.Mkdir(campaign, 0o755); err == nil || errors.Is(err, fs.ErrExist) {
			handDown(campaign)
			err = os.Mkdir(dir, 0o755)
		}
	}
	if errors.Is(err, fs.ErrExist) && !populated(dir) {
		err = nil // an earlier run's, empty: used again
	} else if errors.Is(err, fs.ErrExist) {
		dir = fmt.Sprintf("%s.%d", dir, os.Getpid())
		err = os.Mkdir(dir, 0o755)
	}
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = unix.Rmdir(dir)
		return nil, err
	}
	return &stepCgroup{dir: dir, fd: fd}, nil
}

// add moves a process into the cgroup: the fallback where the command
// could not be started in it.
func (c *stepCgroup) add(pid int) error {
	return os.WriteFile(filepath.Join(c.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
}

// procs are the cgroup's live processes, its sub-cgroups' included.
func (c *stepCgroup) procs() []int {
	if c == nil {
		return nil
	}
	var out []int
	_ = filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
		return nil
	})
	return out
}

// kill ends every process in the cgroup at once (SIGKILL), forks racing
// it included.
func (c *stepCgroup) kill() {
	if c != nil {
		_ = os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0o644)
	}
}

// usage is the cgroup's CPU time and, where the memory controller is
// handed down, its peak memory (0 when not).
func (c *stepCgroup) usage() (cpu time.Duration, peak uint64) {
	b, _ := os.ReadFile(filepath.Join(c.dir, "cpu.stat"))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			us, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			cpu = time.Duration(us) * time.Microsecond
		}
	}
	b, _ = os.ReadFile(filepath.Join(c.dir, "memory.peak"))
	peak, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return cpu, peak
}

// remove takes the cgroup away once it is empty; it is kept (with its
// processes) when it is not.
func (c *stepCgroup) remove() {
	if c == nil {
		return
	}
	unix.Close(c.fd)
	if !populated(c.dir) {
		_ = unix.Rmdir(c.dir)
	}
}

// populated says a cgroup (or one under it) has a live process.
func populated(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	return err == nil && strings.Contains(string(b), "populated 1")
}
