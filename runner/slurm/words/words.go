// Package words reads Slurm's words as its commands print them: a job's
// state (PENDING, TIMEOUT, ...) and a node list (gpu[01-03]). A leaf,
// without running Slurm: the campaign's state types read a job's words
// with it, and the slurm package that runs Slurm's commands too.
package words

import (
	"strconv"
	"strings"
)

// State is Slurm's word for where a job is: PENDING, RUNNING, SUSPENDED,
// COMPLETING, COMPLETED, FAILED, TIMEOUT, CANCELLED, NODE_FAIL,
// OUT_OF_MEMORY, PREEMPTED, BOOT_FAIL, DEADLINE, ...
type State string

// Pending: queued, not yet on a node.
func (s State) Pending() bool { return s == "PENDING" || s == "REQUEUED" || s == "REQUEUE_HOLD" }

// Terminal: the job is over; its processes are gone or going.
func (s State) Terminal() bool {
	switch s {
	case "COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY",
		"PREEMPTED", "BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT", "REVOKED":
		return true
	}
	return false
}

// Abnormal: Slurm ended the job itself, which says more than the exit
// code does (a TIMEOUT's step dies of a signal like any other).
func (s State) Abnormal() bool {
	switch s {
	case "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "CANCELLED":
		return true
	}
	return false
}

// Hostnames expands a Slurm node list ("gpu[01-03,07],login1",
// "rack[1-2]-gpu[1-2]") into names, as `scontrol show hostnames` does,
// without asking Slurm: ranges keep their zero padding. A list it cannot
// read is returned as one name, whole.
func Hostnames(list string) []string {
	var out []string
	for _, item := range splitTop(list) {
		if item == "" || item == "(null)" {
			continue
		}
		out = append(out, expandItem(item)...)
	}
	return out
}

// splitTop splits at the commas outside brackets.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func expandItem(item string) []string {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		return []string{item}
	}
	end := strings.IndexByte(item[open:], ']')
	if end < 0 {
		return []string{item}
	}
	end += open
	prefix, body, rest := item[:open], item[open+1:end], item[end+1:]
	var out []string
	for _, part := range strings.Split(body, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || b < a || b-a > 100000 {
			return []string{item}
		}
		for n := a; n <= b; n++ {
			num := strconv.Itoa(n)
			for len(num) < len(lo) {
				num = "0" + num
			}
			for _, tail := range expandItem(rest) {
				out = append(out, prefix+num+tail)
			}
		}
	}
	return out
}

// Reason says Slurm's pending reason with what it means.
func Reason(reason string) string {
	switch reason {
	case "Resources":
		return "Resources (waiting for nodes to free up)"
	case "Priority":
		return "Priority (jobs of higher priority go first)"
	case "BeginTime":
		return "BeginTime (not before its start time)"
	case "Dependency":
		return "Dependency (waits for another job)"
	case "QOSMaxJobsPerUserLimit", "AssocMaxJobsLimit", "QOSMaxGRESPerUser":
		return reason + " (a limit of your account or QOS)"
	case "PartitionNodeLimit", "PartitionTimeLimit":
		return reason + " (the request exceeds what the partition allows: it will never start)"
	case "ReqNodeNotAvail":
		return reason + " (a node it needs is down, drained or reserved)"
	}
	return reason
}
