// Package conditions is what a campaign ran under, recorded once at its
// start and checked again at each phase's start: the machine, its GPUs'
// setup, the campaign file, its folder's git state, and the outputs of
// the campaign's own conditions: commands. A comparison of two campaigns
// says their differences before any number (package compare).
//
// conditions imports gpu and runner/campaign, nothing above them.
package conditions

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/greenlight-run/greenlight/gpu"
	"github.com/greenlight-run/greenlight/internal/files"
	"github.com/greenlight-run/greenlight/internal/safe"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// Conditions is one reading of what the campaign runs under.
type Conditions struct {
	Taken    time.Time         `json:"taken"`
	Host     string            `json:"host,omitempty"`
	Kernel   string            `json:"kernel,omitempty"`
	CPU      string            `json:"cpu,omitempty"`
	CPUs     int               `json:"cpus,omitempty"`
	Driver   string            `json:"driver,omitempty"`
	CUDA     string            `json:"cuda,omitempty"`
	GPUs     []gpu.Conditions  `json:"gpus,omitempty"`
	File     string            `json:"campaign_file,omitempty"`
	FileHash string            `json:"campaign_sha256,omitempty"`
	Git      *Git              `json:"git,omitempty"`
	Commands []Command         `json:"commands,omitempty"`
	Packages map[string]string `json:"packages,omitempty"` // name: version, from pip list; "" when not installed
	// The interconnect's setup beside the GPUs' own: the kernel's command
	// line, the IOMMU as it says and as the kernel shows it, NCCL's
	// library, and every NCCL_* variable of the campaign's environment.
	Cmdline string            `json:"cmdline,omitempty"`
	IOMMU   string            `json:"iommu,omitempty"`
	NCCL    string            `json:"nccl,omitempty"`
	NCCLEnv map[string]string `json:"nccl_env,omitempty"`
}

// Git is the campaign folder's commit and whether it had changes.
type Git struct {
	Commit string `json:"commit,omitempty"`
	Dirty  bool   `json:"dirty,omitempty"`
	Why    string `json:"why,omitempty"` // why there is no commit: not a repository, no git
}

// Command is one conditions: command and what it printed.
type Command struct {
	Run    string `json:"run"`
	Output string `json:"output"`
	Error  string `json:"error,omitempty"` // its exit status, or why it did not run
}

// Source is what the machine's GPUs say of themselves: *gpu.Sampler.
type Source interface {
	Inventory() gpu.Inventory
	Conditions() []gpu.Conditions
}

// Machine reads the cheap part, checked at each phase's start: the host,
// the GPUs' setup, the campaign file and its folder's git state.
func Machine(plan *campaign.Plan, src Source) Conditions {
	c := Conditions{Taken: time.Now().UTC(), CPUs: runtime.NumCPU(), File: plan.File, FileHash: plan.Hash}
	c.Host, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		c.Kernel = strings.TrimSpace(string(b))
	}
	c.CPU = cpuModel()
	if b, err := os.ReadFile("/proc/cmdline"); err == nil {
		c.Cmdline = strings.TrimSpace(string(b))
	}
	c.IOMMU = iommuMode(c.Cmdline)
	c.NCCL = ncclLibrary()
	c.NCCLEnv = ncclEnv(plan)
	if src != nil {
		inv := src.Inventory()
		c.Driver, c.CUDA = inv.Driver, inv.CUDA
		c.GPUs = src.Conditions()
	}
	c.Git = gitState(plan.Dir)
	return c
}

// Gather is Machine and the campaign's own conditions: commands and
// packages, each given up after timeout.
func Gather(ctx context.Context, plan *campaign.Plan, src Source, timeout time.Duration) Conditions {
	c := Machine(plan, src)
	c.Commands = make([]Command, len(plan.Conditions.Commands))
	RunCommands(ctx, plan, timeout, func(i int, cmd Command) { c.Commands[i] = cmd })
	if len(plan.Conditions.Packages) > 0 {
		c.Packages = Packages(ctx, plan, timeout)
	}
	return c
}

// RunCommands runs the campaign's conditions: commands side by side, each
// in a process group of its own, and gives each one's outcome as it ends
// (its output, its exit status, or no answer in timeout), in any order,
// from the caller's goroutine one at a time; it returns once every one
// has. One that hangs keeps no other's output from the record; ctx ended
// stops what still runs (its whole group), said as no answer.
func RunCommands(ctx context.Context, plan *campaign.Plan, timeout time.Duration, got func(i int, cmd Command)) {
	type done struct {
		i   int
		cmd Command
	}
	ch := make(chan done)
	start := time.Now()
	for i, run := range plan.Conditions.Commands {
		go func() {
			out, err := shell(ctx, plan.Dir, run, timeout, maxOutput)
			cmd := Command{Run: run, Output: safe.Text(strings.TrimRight(out, "\n"), safe.Summary)}
			switch {
			case err != nil && ctx.Err() != nil:
				cmd.Error = fmt.Sprintf("gave no answer in %v: stopped (its process group) at the campaign's end", time.Since(start).Round(time.Second))
			case err != nil:
				cmd.Error = err.Error()
			}
			ch <- done{i, cmd}
		}()
	}
	for range plan.Conditions.Commands {
		d := <-ch
		got(d.i, d.cmd)
	}
}

// Packages is the named Python packages' versions (pip list), given up
// after timeout.
func Packages(ctx context.Context, plan *campaign.Plan, timeout time.Duration) map[string]string {
	return packages(ctx, plan.Dir, plan.Conditions.Packages, timeout)
}

const (
	maxOutput   = 16 << 10 // a command's output kept in the record
	maxPipList  = 8 << 20  // pip list's JSON, read whole
	killedAfter = time.Second
)

// shell runs a command under sh -c in dir, in a process group of its
// own: at the timeout the whole group is killed (not sh alone, which left
// a hung command's children running), and what it printed is read
// through a bounded buffer (a command printing 100 MB costs limit bytes,
// the rest counted and dropped).
func shell(ctx context.Context, dir, run string, timeout time.Duration, limit int) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", run)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = killedAfter // a child that left the group and holds the output open
	out := &capped{limit: limit}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	text := out.String()
	if ctx.Err() == context.DeadlineExceeded {
		return text, fmt.Errorf("gave no answer in %v: its process group was killed", timeout)
	}
	return text, err
}

// capped keeps the first limit bytes written to it and counts the rest.
type capped struct {
	limit   int
	b       []byte
	dropped int64
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.limit - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
		c.dropped += int64(len(p) - min(room, len(p)))
	} else {
		c.dropped += int64(len(p))
	}
	return len(p), nil
}

func (c *capped) String() string {
	if c.dropped == 0 {
		return string(c.b)
	}
	return string(c.b) + fmt.Sprintf("\n[cut: %d more bytes]", c.dropped)
}

// packages are the named packages' versions from pip list.
func packages(ctx context.Context, dir string, names []string, timeout time.Duration) map[string]string {
	out := map[string]string{}
	text, err := shell(ctx, dir, "python3 -m pip list --format=json --disable-pip-version-check 2>/dev/null", timeout, maxPipList)
	var listed []struct{ Name, Version string }
	if err != nil || json.Unmarshal([]byte(text), &listed) != nil {
		for _, n := range names {
			out[n] = "?" // pip gave no list
		}
		return out
	}
	norm := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "-")) }
	for _, n := range names {
		out[n] = ""
		for _, p := range listed {
			if norm(p.Name) == norm(n) {
				out[n] = p.Version
			}
		}
	}
	return out
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func gitState(dir string) *Git {
	if _, err := exec.LookPath("git"); err != nil {
		return &Git{Why: "git is not installed"}
	}
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
		var out bytes.Buffer
		cmd.Stdout = &out
		err := cmd.Run()
		return strings.TrimSpace(out.String()), err
	}
	commit, err := run("rev-parse", "HEAD")
	if err != nil {
		return &Git{Why: "the campaign's folder is not in a git repository with a commit"}
	}
	status, err := run("status", "--porcelain", "--untracked-files=no", "--", ".")
	return &Git{Commit: commit, Dirty: err == nil && status != ""}
}

// Change is one difference between two readings, said as a person would:
// "driver 580.95 → 590.12".
type Change struct {
	What  string    `json:"what"`
	Old   string    `json:"old"`
	New   string    `json:"new"`
	Phase string    `json:"phase,omitempty"` // whose start saw it, for a change during a campaign
	At    time.Time `json:"at,omitzero"`
}

func (c Change) String() string {
	return fmt.Sprintf("%s %s → %s", c.What, orNone(c.Old), orNone(c.New))
}

// onHostsOf counts the GPUs of gs on the hosts others has GPUs on too,
// and every GPU of this machine.
func onHostsOf(gs, others []gpu.Conditions) int {
	n := 0
	for _, g := range gs {
		if g.Host == "" || slices.ContainsFunc(others, func(o gpu.Conditions) bool { return o.Host == g.Host }) {
			n++
		}
	}
	return n
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// Diff lists what differs from old to new. The time taken never does;
// the commands and packages only where both readings have them (a phase
// start does not run them again).
func Diff(old, new Conditions) []Change {
	var out []Change
	add := func(what, a, b string) {
		if a != b {
			out = append(out, Change{What: what, Old: a, New: b})
		}
	}
	add("host", old.Host, new.Host)
	add("kernel", old.Kernel, new.Kernel)
	if old.Cmdline != "" && new.Cmdline != "" {
		add("kernel command line", old.Cmdline, new.Cmdline)
	}
	add("IOMMU", old.IOMMU, new.IOMMU)
	add("NCCL library", old.NCCL, new.NCCL)
	for _, k := range unionKeys(old.NCCLEnv, new.NCCLEnv) {
		add(k, firstNonEmpty(old.NCCLEnv[k], "unset"), firstNonEmpty(new.NCCLEnv[k], "unset"))
	}
	add("CPU", old.CPU, new.CPU)
	// A reading without GPUs has no driver: the nodes of a campaign's
	// Slurm jobs (dcgm:slurm-nodes) are read only while a job runs there.
	if old.Driver != "" && new.Driver != "" {
		add("driver", old.Driver, new.Driver)
	}
	if old.CUDA != "" && new.CUDA != "" {
		add("CUDA", old.CUDA, new.CUDA)
	}
	add("campaign file", short(old.FileHash), short(new.FileHash))
	if old.Git != nil && new.Git != nil {
		add("git commit", short(old.Git.Commit)+dirty(old.Git), short(new.Git.Commit)+dirty(new.Git))
	}
	// GPUs counted on the hosts both readings have: a Slurm job's nodes
	// come and go with the job, which is no change of conditions; a GPU
	// gone from a host that is still read is.
	add("GPU count", fmt.Sprint(onHostsOf(old.GPUs, new.GPUs)), fmt.Sprint(onHostsOf(new.GPUs, old.GPUs)))
	for _, n := range new.GPUs {
		i := slices.IndexFunc(old.GPUs, func(o gpu.Conditions) bool { return o.Host == n.Host && o.Index == n.Index })
		if i < 0 {
			continue
		}
		o, g := old.GPUs[i], "GPU "+n.Label()+" "
		add(g+"model", o.Name, n.Name)
		add(g+"VBIOS", o.VBIOS, n.VBIOS)
		add(g+"power limit", watts(o.PowerLimitW), watts(n.PowerLimitW))
		add(g+"application clocks", clocks(o), clocks(n))
		add(g+"ECC", o.ECC, n.ECC)
		add(g+"persistence mode", o.Persistence, n.Persistence)
		add(g+"MIG", o.MIG, n.MIG)
		add(g+"PCIe link", link(o.PCIeGen, o.PCIeWidth), link(n.PCIeGen, n.PCIeWidth))
		if o.BAR1MiB > 0 && n.BAR1MiB > 0 {
			add(g+"BAR1", fmt.Sprintf("%d MiB", o.BAR1MiB), fmt.Sprintf("%d MiB", n.BAR1MiB))
		}
		for _, np := range n.Peers {
			if k := slices.IndexFunc(o.Peers, func(p gpu.Peer) bool { return p.Index == np.Index }); k >= 0 {
				add(fmt.Sprintf("%slink to GPU %d", g, np.Index), peerWords(o.Peers[k]), peerWords(np))
			}
		}
	}
	if old.Commands != nil && new.Commands != nil {
		for _, n := range new.Commands {
			for _, o := range old.Commands {
				if o.Run == n.Run {
					add(fmt.Sprintf("output of `%s`", CommandLabel(n.Run)), firstLine(o.Output, o.Error), firstLine(n.Output, n.Error))
				}
			}
		}
	}
	if old.Packages != nil && new.Packages != nil {
		names := make([]string, 0, len(new.Packages))
		for n := range new.Packages {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			if o, ok := old.Packages[n]; ok {
				add(n, o, new.Packages[n])
			}
		}
	}
	return out
}

// CommandLabel is a conditions: command as one line: its first, with
// "…" when there are more.
func CommandLabel(run string) string {
	first, _, more := strings.Cut(strings.TrimSpace(run), "\n")
	if more {
		first += " …"
	}
	return first
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func dirty(g *Git) string {
	if g.Dirty {
		return " (with changes)"
	}
	return ""
}

func watts(w float64) string {
	if w == 0 {
		return ""
	}
	return fmt.Sprintf("%.0f W", w)
}

func clocks(c gpu.Conditions) string {
	if c.AppClockSM == 0 && c.AppClockMem == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d MHz", c.AppClockSM, c.AppClockMem)
}

func link(gen, width int) string {
	if gen == 0 && width == 0 {
		return ""
	}
	return fmt.Sprintf("gen %d x%d", gen, width)
}

func firstLine(out, err string) string {
	if err != "" {
		return "error: " + err
	}
	s, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}

// Book is the campaign's conditions as kept in its state dir: the first
// reading, the last one a phase's start took, and every change between.
type Book struct {
	First   Conditions `json:"first"`
	Last    Conditions `json:"last"`
	Changes []Change   `json:"changes,omitempty"`
}

// NewBook starts a book with the campaign's first reading.
func NewBook(first Conditions) Book { return Book{First: first, Last: first} }

// GPU is device d's setup as last read; false when none was (no book, or
// the device was never listed).
func (b *Book) GPU(d gpu.Device) (gpu.Conditions, bool) {
	if b == nil {
		return gpu.Conditions{}, false
	}
	for _, c := range b.Last.GPUs {
		if c.Host == d.Host && c.Index == d.Index {
			return c, true
		}
	}
	return gpu.Conditions{}, false
}

const bookFile = "conditions.json"

// Load reads the book a campaign kept; ok is false when it has none.
func Load(stateDir string) (Book, bool, error) {
	b, err := os.ReadFile(filepath.Join(stateDir, bookFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Book{}, false, nil
	}
	if err != nil {
		return Book{}, false, err
	}
	var book Book
	if err := json.Unmarshal(b, &book); err != nil {
		return Book{}, false, fmt.Errorf("%s: %w", bookFile, err)
	}
	return book, true, nil
}

// Save writes the book atomically.
func (b Book) Save(stateDir string) error {
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	return files.WriteAtomic(filepath.Join(stateDir, bookFile), data)
}

// Check compares a phase start's reading with the last one and keeps
// what differs, so that each change is said once; it returns the new
// changes. The commands and packages are not run again (they may take a
// while): the first reading's stand.
func (b *Book) Check(now Conditions, phase string) []Change {
	now.Commands, now.Packages = b.Last.Commands, b.Last.Packages
	var seen []Change
	for _, c := range Diff(b.Last, now) {
		c.Phase, c.At = phase, now.Taken
		seen = append(seen, c)
	}
	b.Changes = append(b.Changes, seen...)
	b.Last = now
	return seen
}

// peerWords is a link between two GPUs in words: "one PCIe switch, P2P
// read ok, write the chipset does not support it".
func peerWords(p gpu.Peer) string {
	return fmt.Sprintf("%s, P2P read %s, write %s", p.Link, p.Read, p.Write)
}

// iommuMode is the IOMMU as the kernel's command line sets it and as
// /sys/class/iommu shows it: "iommu=pt, intel_iommu=on; 2 IOMMU units".
func iommuMode(cmdline string) string {
	var said []string
	for _, f := range strings.Fields(cmdline) {
		if strings.Contains(f, "iommu") {
			said = append(said, f)
		}
	}
	units, _ := os.ReadDir("/sys/class/iommu")
	switch {
	case len(units) > 0:
		said = append(said, fmt.Sprintf("%d IOMMU unit(s)", len(units)))
	case cmdline != "":
		said = append(said, "no IOMMU unit in /sys/class/iommu")
	}
	return strings.Join(said, "; ")
}

// ncclLibrary is the NCCL library the dynamic loader knows, by its file's
// version ("libnccl.so.2.21.5"); "" when none is found.
func ncclLibrary() string {
	for _, dir := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/lib", "/usr/lib"} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if n := e.Name(); strings.HasPrefix(n, "libnccl.so.") && strings.Count(n, ".") >= 4 {
				return n
			}
		}
	}
	return ""
}

// ncclEnv are the NCCL_* variables of the campaign's environment: this
// process's and the campaign file's env:.
func ncclEnv(plan *campaign.Plan) map[string]string {
	out := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "NCCL_") {
			out[k] = v
		}
	}
	if plan != nil {
		for k, v := range plan.Env {
			if strings.HasPrefix(k, "NCCL_") {
				out[k] = v
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func unionKeys(a, b map[string]string) []string {
	var out []string
	for k := range a {
		out = append(out, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func firstNonEmpty(s, or string) string {
	if s == "" {
		return or
	}
	return s
}
