package campaign

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/greenlight-run/greenlight/runner/format"
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

// slurm resolves a phase's `slurm:` over the campaign's; nil: run here.
func (l *loader) slurm(spec *CampaignSpec, ps *PhaseSpec, at string) *Slurm {
	def, own := spec.Slurm, ps.Slurm
	for _, b := range []struct {
		s    *SlurmSpec
		path string
	}{{def, "$.slurm"}, {own, at + ".slurm"}} {
		switch {
		case b.s == nil || b.s.Bad == "":
		case strings.EqualFold(b.s.Bad, "true") || strings.EqualFold(b.s.Bad, "on"):
			l.add(b.path, "slurm: "+b.s.Bad+" says nothing of where to run", "give a mapping: slurm: {partition: h200, gpus_per_node: 8, time: 2h}")
			return nil
		default:
			l.add(b.path, fmt.Sprintf("slurm: %q is neither a mapping nor off", b.s.Bad), "give a mapping: slurm: {partition: h200, gpus_per_node: 8, time: 2h}, or `slurm: off` on a phase that runs here")
			return nil
		}
	}
	if own != nil && own.Off {
		return nil
	}
	if def == nil && own == nil {
		return nil
	}
	if def != nil && def.Off {
		l.add("$.slurm", "slurm: off on the campaign says nothing", "leave it out; `slurm: off` is for a phase that runs here when the campaign runs on Slurm")
		return nil
	}
	var m SlurmSpec
	if def != nil {
		m = *def
	}
	if own != nil {
		if own.Partition != "" {
			m.Partition = own.Partition
		}
		if own.Nodes != 0 {
			m.Nodes = own.Nodes
		}
		if own.GPUsPerNode != 0 {
			m.GPUsPerNode = own.GPUsPerNode
		}
		if own.Time != "" {
			m.Time = own.Time
		}
		if own.Account != "" {
			m.Account = own.Account
		}
		if own.Args != nil {
			m.Args = own.Args
		}
	}
	// Each key's error points at the file where that key was written.
	where := func(key string, phaseHas bool) string {
		if phaseHas {
			return at + ".slurm." + key
		}
		return "$.slurm." + key
	}
	has := func(f func(*SlurmSpec) bool) bool { return own != nil && f(own) }
	out := &Slurm{Partition: m.Partition, Nodes: max(m.Nodes, 1), GPUsPerNode: m.GPUsPerNode, Account: m.Account, Args: m.Args}
	if m.Partition != "" && !slurmName.MatchString(m.Partition) {
		l.add(where("partition", has(func(s *SlurmSpec) bool { return s.Partition != "" })), fmt.Sprintf("partition %q is not a Slurm partition name", m.Partition), "`sinfo -s` lists the partitions")
	}
	if m.Account != "" && !slurmName.MatchString(m.Account) {
		l.add(where("account", has(func(s *SlurmSpec) bool { return s.Account != "" })), fmt.Sprintf("account %q is not a Slurm account name", m.Account), "`sacctmgr show assoc user=$USER` lists yours")
	}
	if m.Nodes < 0 {
		l.add(where("nodes", has(func(s *SlurmSpec) bool { return s.Nodes != 0 })), "nodes must be 1 or more", "")
	}
	if m.GPUsPerNode < 0 {
		l.add(where("gpus_per_node", has(func(s *SlurmSpec) bool { return s.GPUsPerNode != 0 })), "gpus_per_node must be zero or more", "")
	}
	if m.Time != "" {
		d, err := slurmTime(m.Time)
		if err != nil {
			l.add(where("time", has(func(s *SlurmSpec) bool { return s.Time != "" })), err.Error(), "a duration such as 90m or 2h, or Slurm's own D-HH:MM:SS")
		}
		out.Time = d
	}
	for i, a := range m.Args {
		p := where(fmt.Sprintf("args[%d]", i), has(func(s *SlurmSpec) bool { return s.Args != nil }))
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
	parts = append(parts, format.Count(sl.Nodes, "node"))
	if sl.GPUsPerNode > 0 {
		parts = append(parts, format.Count(sl.GPUsPerNode, "GPU")+" per node")
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
