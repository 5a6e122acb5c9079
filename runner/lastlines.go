package runner

import (
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/greenlight-run/greenlight/internal/safe"
	"github.com/greenlight-run/greenlight/runner/campaign"
)

// A step or service that fails says why in its last lines ("can't open
// file ...fake_vllm.py", a Python traceback's last line): the record and
// the window quote them rather than only naming the log.

// errorLine is a line that says what went wrong.
var errorLine = regexp.MustCompile(`(?i)error|exception|traceback|can't|cannot|could not|no such|not found|denied|fatal|failed|killed|refused|out of memory|abort`)

// lastWords are up to n lines from the end of the log at path that say
// what went wrong (else its last lines), escaped and cut to one line each.
// Only the log's last 64 KiB are read.
func lastWords(path string, n int, ours ...string) []string {
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
		if strings.TrimSpace(l) != "" && !probeLine(l, ours) {
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

// accessLine is a server's access-log line for a request: vLLM's
// (uvicorn's) `INFO: 127.0.0.1:53412 - "GET /health HTTP/1.1" 200 OK`,
// and the common log format's `"GET /metrics HTTP/1.1" 200`.
var accessLine = regexp.MustCompile(`"(?:GET|HEAD) (/[^ "?]*)[^ "]* HTTP/[0-9.]+"`)

// probeLine says a log line is the server's note of greenlight's own
// request to one of the paths ours (its readiness and health probe, its
// /metrics scrape): the runner's words in the server's log, never the
// server's last words.
func probeLine(l string, ours []string) bool {
	if len(ours) == 0 {
		return false
	}
	m := accessLine.FindStringSubmatch(l)
	return m != nil && slices.Contains(ours, m[1])
}

// quoteLast is the reason with the log's last words quoted after it;
// ours are the paths of greenlight's own requests to a service, whose
// access-log lines are not its words.
func quoteLast(reason, log string, ours ...string) string {
	words := lastWords(log, 5, ours...)
	if len(words) == 0 {
		return reason
	}
	return reason + `; its last words: "` + strings.Join(words, `" / "`) + `"`
}

// probedPaths are the URL paths greenlight itself asks a service for:
// its readiness (and health) check and its /metrics.
func probedPaths(ph *campaign.Phase) []string {
	var out []string
	if svc := ph.Service; svc != nil {
		for _, raw := range []string{svc.ReadyHTTP, svc.MetricsURL} {
			if u, err := url.Parse(raw); err == nil && raw != "" {
				p := u.Path
				if p == "" {
					p = "/"
				}
				out = append(out, p)
			}
		}
	}
	return out
}
