package runner

import (
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/greenlight-run/greenlight/internal/safe"
)

// A step or service that fails says why in its last lines ("can't open
// file ...fake_vllm.py", a Python traceback's last line): the record and
// the window quote them rather than only naming the log.

// errorLine is a line that says what went wrong.
var errorLine = regexp.MustCompile(`(?i)error|exception|traceback|can't|cannot|could not|no such|not found|denied|fatal|failed|killed|refused|out of memory|abort`)

// lastWords are up to n lines from the end of the log at path that say
// what went wrong (else its last lines), escaped and cut to one line each.
// Only the log's last 64 KiB are read.
func lastWords(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	const tail = 64 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > tail {
		f.Seek(-tail, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	var lines []string
	for _, l := range strings.FieldsFunc(string(b), func(r rune) bool { return r == '\n' || r == '\r' }) {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	var pick []string
	for i := len(lines) - 1; i >= 0 && len(pick) < n; i-- {
		if errorLine.MatchString(lines[i]) {
			pick = append([]string{lines[i]}, pick...)
		}
	}
	if len(pick) == 0 {
		pick = lines[max(0, len(lines)-n):]
	}
	for i, l := range pick {
		pick[i] = safe.Line(strings.TrimSpace(l), 200)
	}
	return pick
}

// quoteLast is the reason with the log's last words quoted after it.
func quoteLast(reason, log string) string {
	words := lastWords(log, 5)
	if len(words) == 0 {
		return reason
	}
	return reason + `; its last words: "` + strings.Join(words, `" / "`) + `"`
}
