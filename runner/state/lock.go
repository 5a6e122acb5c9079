package state

import (
	"fmt"
	"os"
	"syscall"
)

// LockHolder says whether a greenlight holds a state dir's lock now, and
// the pid its lock file names.
func LockHolder(stateDir string) (pid int, held bool) {
	path := Layout(stateDir).Lock()
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return 0, false
	}
	b, _ := os.ReadFile(path)
	fmt.Sscanf(string(b), "%d", &pid)
	return pid, true
}
