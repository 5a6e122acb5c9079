package supervise

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/greenlight-run/greenlight/internal/files"
)

// A step's status file must be writable when the step has filled the
// disk: that is when a trace-heavy step ends. The runner creates it at
// statusSize bytes before the supervisor starts, every version is padded
// to that size, and a write that cannot go through a new file (temp,
// fsync, rename) overwrites the allocated bytes in place. JSON ignores
// the padding.
const statusSize = 4096

// Preallocate makes the status file hold statusSize bytes of blanks.
func Preallocate(path string) error {
	return os.WriteFile(path, bytes.Repeat([]byte{' '}, statusSize), 0o644)
}

func WriteStatus(path string, st *Status) error { return putStatus(path, st, true) }

// WriteStatusNoSync replaces the status file without fsync.
func WriteStatusNoSync(path string, st *Status) error { return putStatus(path, st, false) }

// putStatus writes st. The final status (sync) is retried for up to
// StatusRetry on failure: a full disk is often freed by the person
// watching within seconds. The first one is not: the step has started.
func putStatus(path string, st *Status, sync bool) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if len(b) < statusSize-1 {
		b = append(b, bytes.Repeat([]byte{' '}, statusSize-1-len(b))...)
	}
	b = append(b, '\n')
	deadline := time.Now().Add(StatusRetry)
	for {
		err = files.Replace(path, b, sync)
		if err == nil {
			return nil
		}
		if ierr := overwriteInPlace(path, b); ierr == nil {
			return nil
		}
		if !sync || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// StatusRetry is how long a status write is retried.
const StatusRetry = 30 * time.Second

// overwriteInPlace writes b over the start of the existing file at path,
// which must already hold at least len(b) bytes (so no block is needed),
// and fsyncs it.
func overwriteInPlace(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() < int64(len(b)) {
		return fmt.Errorf("status file %s: %d bytes preallocated, %d needed", path, fi.Size(), len(b))
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return err
	}
	return f.Sync()
}

func ReadStatus(path string) (*Status, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("status file %s: not written yet", path)
	}
	var st Status
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("status file %s: %w", path, err)
	}
	if !st.CommandEnded() {
		// Its supervisor has not said the end; the step's own shell may
		// have (StepShell), where the supervisor died first: an exit
		// code on disk is an end seen.
		if code, at, ok := readExit(ExitFile(path)); ok {
			st.State, st.ExitCode, st.Ended, st.EndFromShell = StateEnded, code, at, true
			if code > 128 && code < 128+65 {
				st.Signal = syscall.Signal(code - 128).String()
			}
		}
	}
	return &st, nil
}

// StepShell runs a step's command ($1) as `sh -c` would, and writes its
// exit status to $GREENLIGHT_EXIT as the shell exits (an EXIT trap):
// the step's end on disk even when its supervisor died before it could
// write it (killed while the command ran, the command going on to its
// end), so a completed run is never run again. A command that execs
// another program, or sets its own EXIT trap, leaves no such file: its
// supervisor's word stands alone, as before.
const StepShell = `trap 'rc=$?; [ -z "$GREENLIGHT_EXIT" ] || printf '"'"'%s\n'"'"' "$rc" > "$GREENLIGHT_EXIT" 2>/dev/null; exit $rc' EXIT
__greenlight_cmd=$1; shift; eval "$__greenlight_cmd"`

// ExitFile is where a step's shell writes its exit status: beside its
// status file.
func ExitFile(statusPath string) string { return filepath.Join(filepath.Dir(statusPath), "exit") }

// readExit reads the exit status a step's shell wrote, and when.
func readExit(path string) (code int, at time.Time, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil || !bytes.HasSuffix(b, []byte("\n")) {
		return 0, time.Time{}, false // none, or not written whole
	}
	code, err = strconv.Atoi(string(bytes.TrimSpace(b)))
	if err != nil || code < 0 || code > 255 {
		return 0, time.Time{}, false
	}
	if fi, err := os.Stat(path); err == nil {
		at = fi.ModTime()
	}
	return code, at, true
}
