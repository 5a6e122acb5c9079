package supervise

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
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
	return &st, nil
}
