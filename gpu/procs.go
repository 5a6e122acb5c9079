package gpu

import (
	"fmt"
	"os"
	"strings"
)

// procInfo reads a process's name, session id and process group from
// /proc. ok is false when the pid is not visible here (another pid
// namespace: a container).
func procInfo(pid int) (name string, sid, pgrp int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, 0, false
	}
	s := string(b)
	open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || close < open || close+2 >= len(s) {
		return "", 0, 0, false
	}
	name = s[open+1 : close]
	var state byte
	var ppid int
	if _, err := fmt.Sscanf(s[close+2:], "%c %d %d %d", &state, &ppid, &pgrp, &sid); err != nil {
		return name, 0, 0, true
	}
	return name, sid, pgrp, true
}

// parentOf is a process's parent pid from /proc; 0 when it cannot be read.
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	var state byte
	var ppid int
	if i < 0 || i+2 >= len(s) {
		return 0
	}
	if _, err := fmt.Sscanf(s[i+2:], "%c %d", &state, &ppid); err != nil {
		return 0
	}
	return ppid
}
