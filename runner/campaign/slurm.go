package campaign

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/internal/format"
)

// SlurmSpec is `slurm:` as written, on the campaign (every phase's
// default) or on a phase (what it changes of that default), or
// `slurm: off` on a phase that runs here all the same:
//
//	slurm:
//	  partition: h200
//	  nodes: 2
//	  gpus_per_node: 8
//	  time: 2h
//	  account: perf
//	  args: [--exclusive]
type SlurmSpec struct {
	Off         bool     `yaml:"-" json:"off,omitempty"`
	Bad         string   `yaml:"-" json:"-"` // neither off nor a mapping
	Partition   string   `yaml:"partition" json:"partition,omitempty"`
	Nodes       int      `yaml:"nodes" json:"nodes,omitempty"`
	GPUsPerNode int      `yaml:"gpus_per_node" json:"gpus_per_node,omitempty"`
	Time        string   `yaml:"time" json:"time,omitempty"`
	Account     string   `yaml:"account" json:"account,omitempty"`
	Args        []string `yaml:"args" json:"args,omitempty"`
	// Groups ask for a heterogeneous job: one component each, in order,
	// each with its own partition, nodes, gpus_per_node and args:
	//
	//	slurm:
	//	  groups:
	//	    - {nodes: 2, gpus_per_node: 8}          # the server
	//	    - {nodes: 1, partition: cpu}            # its load generator
	Groups []SlurmSpec `yaml:"groups" json:"groups,omitempty"`
}

// UnmarshalYAML takes `off` (or false) or the mapping, decoded strictly.
// Another word is kept in Bad and reported with its line by the loader.
func (s *SlurmSpec) UnmarshalYAML(unmarshal func(any) error) error {
	var word string
	if unmarshal(&word) == nil {
		if w := strings.ToLower(strings.TrimSpace(word)); w == "off" || w == "false" || w == "local" {
			*s = SlurmSpec{Off: true}
		} else {
			*s = SlurmSpec{Bad: word}
		}
		return nil
	}
	type plain SlurmSpec
	return unmarshal((*plain)(s))
}

// Slurm is how a phase runs as Slurm jobs: what each of its jobs asks for.
type Slurm struct {
	Partition   string
	Nodes       int
	GPUsPerNode int
	Time        time.Duration
	Account     string
	Args        []string
	// Groups, two or more, make each job heterogeneous (sbatch's `:`):
	// the batch script runs on the first group's first node; `srun
	// --het-group=N` reaches group N. Nodes is then their sum, and
	// GPUsPerNode unused.
	Groups []SlurmGroup
}

// SlurmGroup is one component of a heterogeneous job.
type SlurmGroup struct {
	Partition   string
	Nodes       int
	GPUsPerNode int
	Args        []string
}

// NodeVar, in a Slurm service's ready.http, is the node its job landed
// on, known once the job runs.
const NodeVar = "${GREENLIGHT_NODE}"

var slurmName = regexp.MustCompile(`^[A-Za-z0-9_.+-]+$`)

// slurmOwned are sbatch options greenlight sets itself, and the key to
// use instead where there is one.
var slurmOwned = map[string]string{
	"--output": "", "-o": "", "--error": "", "-e": "", "--job-name": "", "-J": "", "--parsable": "",
	"--wrap": "", "--open-mode": "", "--export": "", "--chdir": "dir:", "-D": "dir:",
	"--partition": "partition:", "-p": "partition:", "--nodes": "nodes:", "-N": "nodes:",
	"--time": "time:", "-t": "time:", "--account": "account:", "-A": "account:", "--gpus-per-node": "gpus_per_node:",
}

// slurmDefault checks the campaign's `slurm:`, once, where it is written,
// and resolves it; nil when the campaign says none.
func (l *loader) slurmDefault(s *SlurmSpec) *Slurm {
	switch {
	case s == nil:
		return nil
	case s.Off:
		l.add("$.slurm", "slurm: off on the campaign says nothing", "leave it out; `slurm: off` is for a phase that runs here when the campaign runs on Slurm")
		return nil
	}
	out := l.slurmKeys(s, "$.slurm")
	if out != nil {
		out.Nodes = max(out.Nodes, 1)
	}
	return out
}

// slurm resolves a phase's `slurm:` over the campaign's default (already
// checked): the keys the phase sets, checked where it sets them, replace
// the default's. nil: the phase runs here.
func (l *loader) slurm(def *Slurm, own *SlurmSpec, at string) *Slurm {
	if own == nil {
		if def == nil {
			return nil
		}
		c := *def
		return &c
	}
	if own.Off {
		return nil
	}
	set := l.slurmKeys(own, at+".slurm")
	if set == nil {
		return nil
	}
	var out Slurm
	if def != nil {
		out = *def
	}
	if set.Partition != "" {
		out.Partition = set.Partition
	}
	if set.Nodes != 0 {
		out.Nodes = set.Nodes
	}
	if set.GPUsPerNode != 0 {
		out.GPUsPerNode = set.GPUsPerNode
	}
	if set.Time != 0 {
		out.Time = set.Time
	}
	if set.Account != "" {
		out.Account = set.Account
	}
	if own.Args != nil {
		out.Args = set.Args
	}
	switch {
	case set.Groups != nil:
		out.Groups, out.Nodes, out.GPUsPerNode = set.Groups, set.Nodes, 0
	case set.Nodes != 0 || set.GPUsPerNode != 0:
		out.Groups = nil // the phase asks for a job of one component
	}
	out.Nodes = max(out.Nodes, 1)
	return &out
}

// slurmKeys checks the keys one `slurm:` mapping sets, each error at the
// key, and returns them resolved (zero where unset); nil when the mapping
// is not one (`slurm: true`).
func (l *loader) slurmKeys(s *SlurmSpec, path string) *Slurm {
	switch {
	case s.Bad == "":
	case strings.EqualFold(s.Bad, "true") || strings.EqualFold(s.Bad, "on"):
		l.add(path, "slurm: "+s.Bad+" says nothing of where to run", "give a mapping: slurm: {partition: h200, gpus_per_node: 8, time: 2h}")
		return nil
	default:
		l.add(path, fmt.Sprintf("slurm: %q is neither a mapping nor off", s.Bad), "give a mapping: slurm: {partition: h200, gpus_per_node: 8, time: 2h}, or `slurm: off` on a phase that runs here")
		return nil
	}
	out := &Slurm{Partition: s.Partition, Nodes: s.Nodes, GPUsPerNode: s.GPUsPerNode, Account: s.Account, Args: s.Args}
	l.slurmGroups(s, out, path)
	if s.Partition != "" && !slurmName.MatchString(s.Partition) {
		l.add(path+".partition", fmt.Sprintf("partition %q is not a Slurm partition name", s.Partition), "`sinfo -s` lists the partitions")
	}
	if s.Account != "" && !slurmName.MatchString(s.Account) {
		l.add(path+".account", fmt.Sprintf("account %q is not a Slurm account name", s.Account), "`sacctmgr show assoc user=$USER` lists yours")
	}
	if s.Nodes < 0 {
		l.add(path+".nodes", "nodes must be 1 or more", "")
	}
	if s.GPUsPerNode < 0 {
		l.add(path+".gpus_per_node", "gpus_per_node must be zero or more", "")
	}
	if s.Time != "" {
		d, err := slurmTime(s.Time)
		if err != nil {
			l.add(path+".time", err.Error(), "a duration such as 90m or 2h, or Slurm's own D-HH:MM:SS")
		}
		out.Time = d
	}
	for i, a := range s.Args {
		p := fmt.Sprintf("%s.args[%d]", path, i)
		name, _, _ := strings.Cut(a, "=")
		switch key, owned := slurmOwned[name]; {
		case !strings.HasPrefix(a, "-"):
			l.add(p, fmt.Sprintf("%q is not an sbatch option", a), "write each option as one item, e.g. args: [--exclusive, --constraint=h200]")
		case owned && key != "":
			l.add(p, fmt.Sprintf("%s is set by the key %s", name, key), fmt.Sprintf("write `%s` under slurm: instead", key))
		case owned:
			l.add(p, fmt.Sprintf("%s is set by greenlight", name), "greenlight names the job, sends its output to the step's log and passes the environment on; leave it out")
		}
	}
	return out
}

// slurmGroups checks a heterogeneous job's groups and resolves them
// into out.
func (l *loader) slurmGroups(s *SlurmSpec, out *Slurm, path string) {
	if s.Groups == nil {
		return
	}
	if len(s.Groups) < 2 {
		l.add(path+".groups", "a heterogeneous job needs two groups or more", "for one group, write nodes: and gpus_per_node: on slurm: itself")
	}
	for _, k := range []struct {
		set  bool
		name string
	}{{s.Nodes != 0, "nodes"}, {s.GPUsPerNode != 0, "gpus_per_node"}} {
		if k.set {
			l.add(path+"."+k.name, k.name+": is given per group when slurm: has groups", "move it into each group")
		}
	}
	out.Nodes, out.GPUsPerNode, out.Groups = 0, 0, []SlurmGroup{}
	for i := range s.Groups {
		g := &s.Groups[i]
		at := fmt.Sprintf("%s.groups[%d]", path, i)
		for _, k := range []struct {
			set  bool
			name string
		}{{g.Time != "", "time"}, {g.Account != "", "account"}, {g.Groups != nil, "groups"}} {
			if k.set {
				l.add(at+"."+k.name, k.name+": is the whole job's, not a group's", "write it on slurm: itself (a group has partition, nodes, gpus_per_node and args)")
			}
		}
		if g.Off || g.Bad != "" {
			l.add(at, "a group is a mapping", "write {nodes: 1, gpus_per_node: 8}, with partition: and args: where the group needs its own")
			continue
		}
		one := l.slurmKeys(&SlurmSpec{Partition: g.Partition, Nodes: g.Nodes, GPUsPerNode: g.GPUsPerNode, Args: g.Args}, at)
		if one == nil {
			continue
		}
		gr := SlurmGroup{Partition: one.Partition, Nodes: max(one.Nodes, 1), GPUsPerNode: one.GPUsPerNode, Args: one.Args}
		out.Groups = append(out.Groups, gr)
		out.Nodes += gr.Nodes
	}
}

// slurmTime reads a time limit: a greenlight duration (90m, 2h), or
// Slurm's own forms as sbatch --time takes them: MM (a bare number is
// minutes, as for Slurm), MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS.
func slurmTime(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if !strings.ContainsAny(s, ":-") {
		if n, err := strconv.Atoi(s); err == nil {
			s = strconv.Itoa(n) + "m"
		}
		d, err := parseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("bad time limit %q", s)
		}
		if d <= 0 {
			return 0, fmt.Errorf("time limit %q is not above zero", s)
		}
		return d, nil
	}
	days := 0
	rest := s
	if d, r, ok := strings.Cut(s, "-"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("bad time limit %q", s)
		}
		days, rest = n, r
	}
	parts := strings.Split(rest, ":")
	var nums []int
	for _, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || len(parts) > 3 {
			return 0, fmt.Errorf("bad time limit %q", s)
		}
		nums = append(nums, n)
	}
	var d time.Duration
	switch {
	case strings.Contains(s, "-"): // D-HH[:MM[:SS]]
		units := []time.Duration{time.Hour, time.Minute, time.Second}
		for i, n := range nums {
			d += time.Duration(n) * units[i]
		}
	case len(nums) == 1: // MM
		d = time.Duration(nums[0]) * time.Minute
	case len(nums) == 2: // MM:SS
		d = time.Duration(nums[0])*time.Minute + time.Duration(nums[1])*time.Second
	default: // HH:MM:SS
		d = time.Duration(nums[0])*time.Hour + time.Duration(nums[1])*time.Minute + time.Duration(nums[2])*time.Second
	}
	d += time.Duration(days) * 24 * time.Hour
	if d <= 0 {
		return 0, fmt.Errorf("time limit %q is not above zero", s)
	}
	return d, nil
}

// String says what each of the phase's jobs asks Slurm for:
// "partition h200, 2 nodes, 8 GPUs per node, time limit 2h00m".
func (sl *Slurm) String() string {
	var parts []string
	if sl.Partition != "" {
		parts = append(parts, "partition "+sl.Partition)
	}
	switch {
	case len(sl.Groups) > 0:
		var gs []string
		for i, g := range sl.Groups {
			w := fmt.Sprintf("group %d: %s", i, format.Count(g.Nodes, "node"))
			if g.GPUsPerNode > 0 {
				w += " × " + format.Count(g.GPUsPerNode, "GPU")
			}
			if g.Partition != "" {
				w += " in " + g.Partition
			}
			if len(g.Args) > 0 {
				w += " " + strings.Join(g.Args, " ")
			}
			gs = append(gs, w)
		}
		parts = append(parts, "a heterogeneous job ("+strings.Join(gs, "; ")+")")
	default:
		parts = append(parts, format.Count(sl.Nodes, "node"))
		if sl.GPUsPerNode > 0 {
			parts = append(parts, format.Count(sl.GPUsPerNode, "GPU")+" per node")
		}
	}
	if sl.Time > 0 {
		parts = append(parts, "time limit "+format.Duration(sl.Time))
	}
	if sl.Account != "" {
		parts = append(parts, "account "+sl.Account)
	}
	if len(sl.Args) > 0 {
		parts = append(parts, strings.Join(sl.Args, " "))
	}
	return strings.Join(parts, ", ")
}
