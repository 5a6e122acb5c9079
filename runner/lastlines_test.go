package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLastWordsAreTheServersOwn: a vLLM server killed after it served
// greenlight's health probes and /metrics scrapes for a while: its last
// words are its own lines (the engine's error), not uvicorn's access lines
// for greenlight's requests; a client's own GET of another path is the
// server's to say.
func TestLastWordsAreTheServersOwn(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	lines := []string{
		"INFO 12-06 02:10:11 [api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8000",
		"ERROR 12-06 02:41:07 [core.py:711] EngineCore encountered a fatal error.",
		"RuntimeError: NCCL error: unhandled system error",
		`INFO:     127.0.0.1:40022 - "GET /v1/models HTTP/1.1" 200 OK`,
	}
	for i := 0; i < 8; i++ {
		lines = append(lines, `INFO:     127.0.0.1:53412 - "GET /health HTTP/1.1" 200 OK`, `INFO:     127.0.0.1:53418 - "GET /metrics?x=1 HTTP/1.1" 200 OK`)
	}
	os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	got := quoteLast("the service serve died (killed by SIGKILL (9))", log, "/health", "/metrics")
	for _, want := range []string{"EngineCore encountered a fatal error", "NCCL error: unhandled system error"} {
		if !strings.Contains(got, want) {
			t.Errorf("last words %q lack the server's %q", got, want)
		}
	}
	if strings.Contains(got, "/health") || strings.Contains(got, "/metrics") {
		t.Errorf("last words %q quote greenlight's own probes", got)
	}
	// No line says an error: the last lines are the server's, past the
	// probes'; without the paths (a step's log) they are the last lines.
	os.WriteFile(log, []byte("INFO Shutting down\n"+strings.Join(lines[4:], "\n")+"\n"), 0o644)
	if got := lastWords(log, 1, "/health", "/metrics"); len(got) != 1 || got[0] != "INFO Shutting down" {
		t.Errorf("a service's last line %q; want its own", got)
	}
	if got := lastWords(log, 1); len(got) != 1 || !strings.Contains(got[0], "/metrics") {
		t.Errorf("a step's last line %q; want the log's last", got)
	}
	// The paths come from the campaign: ready: http and metrics: url.
	p := loadCampaign(t, `name: s
phases:
  - id: serve
    service:
      run: |
        sleep 1
      ready: {http: "http://localhost:8000/health"}
      metrics: {url: "http://localhost:8000/metrics"}
`)
	if got := probedPaths(p.Phase("serve")); strings.Join(got, " ") != "/health /metrics" {
		t.Errorf("probed paths %q", got)
	}
}
