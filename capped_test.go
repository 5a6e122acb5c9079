package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/greenlight-run/greenlight/record"
)

// cappedServer stands in for a vLLM server that runs at most slots
// requests at once (its max_num_seqs) and queues the rest: the client's
// step writes the concurrency it drives into load (0 when it ends), and
// /metrics says, in vLLM's names, min(load, slots) running and the rest
// waiting.
func cappedServer(t *testing.T, dir string, slots int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := os.ReadFile(filepath.Join(dir, "load"))
		c, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		running, waiting := min(c, slots), max(c-slots, 0)
		fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\"} %d\n", running)
		fmt.Fprintf(w, "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{engine=\"0\"} %d\n", waiting)
		fmt.Fprintf(w, "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{engine=\"0\"} %g\n", 0.4*float64(running)/float64(slots))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestSearchAgainstACappedServer: an SLO search for the largest
// concurrency whose TPOT meets 50 ms, against a server that runs 24
// requests at most (the rest wait) while the client's TPOT stays 20 ms at
// any concurrency it names. A search that believed the rows would claim
// 64; the runs above 24 are stamped "capped by the server", the search
// decides by none of them, and it claims no limit above 24, saying why.
func TestSearchAgainstACappedServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := cappedServer(t, dir, 24)
	c := writeCampaign(t, dir, `name: capped
phases:
  - id: serve
    gpus: none
    service:
      run: |
        echo up; exec sleep 600
      ready: {log: up}
      metrics:
        url: `+srv.URL+`/metrics
  - id: decode
    needs: [serve]
    gpus: none
    search:
      axis: concurrency
      range: [4, 64]
      slo: {mean_tpot_ms: "<= 50"}
      resolution: 10%
    repeat: 2
    steps:
      - run: |
          echo ${concurrency} > load
          sleep 1.6
          echo "{\"max_concurrency\": ${concurrency}, \"mean_tpot_ms\": 20}" >> "$GREENLIGHT_RESULTS"
          echo 0 > load
`)
	out, code := runBin(t, dir, "run", "--plain", c)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	rec, err := record.Read(filepath.Join(dir, "capped.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ph *record.Phase
	for i := range rec.Phases {
		if rec.Phases[i].ID == "decode" {
			ph = &rec.Phases[i]
		}
	}
	if ph == nil || ph.Model == nil || ph.Model.Search == nil {
		t.Fatalf("no search in the record:\n%s", out)
	}
	s := ph.Model.Search
	if !s.Found || s.Limit > 24 {
		t.Errorf("the search claimed %d (found %v), above the server's cap of 24: %s", s.Limit, s.Found, s.Words)
	}
	md := readFile(t, filepath.Join(dir, "capped.md"))
	if !strings.Contains(md, "capped by the server serve") {
		t.Errorf("no row was stamped capped by the server:\n%s", md)
	}
	// Each run's load, as asked and as the server saw it over its own
	// window, is tabled: a probe above 24 ran 24 at most, and says why.
	table := md[strings.Index(md, "### Load by run"):]
	if !strings.Contains(md, "### Load by run") || !strings.Contains(table, "| serve | ") || !regexp.MustCompile(`\| / 24 \|[^\n]*capped by the server serve`).MatchString(strings.ReplaceAll(table, "| 24 / 24 |", "| / 24 |")) {
		t.Errorf("the record's load by run does not show a probe held at 24 running and capped:\n%s", table)
	}
	// Rebuilt from the state dir alone, the server's view of each run is
	// the one journaled as it ended.
	if out, code := runBin(t, dir, "report", c); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	again := readFile(t, filepath.Join(dir, "capped.md"))
	if i := strings.Index(again, "### Load by run"); i < 0 || !strings.HasPrefix(again[i:], table[:strings.Index(table, "\nAsked:")]) {
		t.Errorf("greenlight report rebuilt another load by run:\n%s", again[max(i, 0):])
	}
	// A cap is the server's setup: a value it capped is not run again.
	if n := regexp.MustCompile(`concurrency=25 \(repeat \d+\)`).FindAllString(table, -1); len(n) != 1 {
		t.Errorf("25, capped at its first run, ran %d times; want once", len(n))
	}
	if !strings.Contains(s.Words, "capped by the server") {
		t.Errorf("the search's words do not say why the value above its limit was not taken: %q", s.Words)
	}
}
