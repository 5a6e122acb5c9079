package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/greenlight-run/greenlight/record"
)

// TestRunWithRemoteGPUs: a campaign whose gpus.sources name a dcgm-exporter
// (served here from the fixture) and a node that does not answer. The run
// goes on; the results file lists the remote GPUs, the dead node with its
// error, and the phase's summary of the remote GPUs. The step's facts,
// as the monitor's witness gave them at its end, are journaled (its
// remote GPUs' power and clock, and the XID as its stamp), and its row
// carries the stamp in NAME.json, live and rebuilt by greenlight report.
func TestRunWithRemoteGPUs(t *testing.T) {
	body, err := os.ReadFile("gpu/testdata/dcgm-exporter-h200x8.prom")
	if err != nil {
		t.Fatal(err)
	}
	// Its first answers are errors: the fleet is known only after the
	// results file's first write, as a slow exporter's is.
	var asked atomic.Int32
	exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if asked.Add(1) <= 3 {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		w.Write(body)
	}))
	defer exporter.Close()
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := l.Addr().String()
	l.Close()

	dir := t.TempDir()
	campaign := filepath.Join(dir, "remote.yaml")
	os.WriteFile(campaign, []byte(fmt.Sprintf(`name: remote
gpus:
  sources: [none, "dcgm:${EXPORTER}/metrics,%s"]
phases:
  - id: a
    steps: [{run: 'sleep 2.5; echo "{\"x\": 1}" >> $GREENLIGHT_RESULTS'}]
`, dead)), 0o644)
	t.Setenv("EXPORTER", exporter.URL)
	out, code := runBin(t, dir, "run", "--plain", "--interval", "200ms", campaign)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	header := []string{
		"**GPUs:** 8 · driver 550.90.07",
		"| gpu-node-07:3 | NVIDIA H200 | 140 GiB |",
		"- gpu-node-07 (`" + exporter.URL + "/metrics`): 8 GPUs, driver 550.90.07, answering",
	}
	b, _ := os.ReadFile(filepath.Join(dir, "remote.md"))
	md := string(b)
	for _, want := range []string{
		"**GPUs:** 8 · driver 550.90.07",
		"| gpu-node-07:3 | NVIDIA H200 | 140 GiB |",
		"- gpu-node-07 (`" + exporter.URL + "/metrics`): 8 GPUs, driver 550.90.07, answering",
		"- 127.0.0.1 (`http://" + dead + "/metrics`): not answering: dial: connect: connection refused",
		"| gpu-node-07:7 | 12 % | 12 % |",
		"GPU gpu-node-07:3 reported XID error(s) 79",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("remote.md lacks %q:\n%s", want, md)
		}
	}
	stamped := func(when string) {
		rec, err := record.Read(filepath.Join(dir, "remote.json"))
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Rows) != 1 || !slices.Contains(rec.Rows[0].Stamp, "GPU gpu-node-07:3 reported XID 79") {
			t.Errorf("%s: the row's stamp: %+v", when, rec.Rows)
		}
		// (Read from its start, its energy; from part-way, when the
		// exporter's first answers came after the step began, none.)
		if g := rec.Rows[0].GPU; g == nil || g.Readings == 0 || g.PowerGPUs != 7 || g.SMClockMHz <= 0 || (g.EnergyWh > 0) == !g.ReadFrom.IsZero() {
			t.Errorf("%s: the row's GPU facts: %+v; want its step's, the journal's", when, g)
		}
	}
	stamped("live")
	j, _ := os.ReadFile(filepath.Join(dir, ".greenlight", "remote", "journal.jsonl"))
	var facts []string
	for _, l := range strings.Split(string(j), "\n") {
		if strings.Contains(l, `"kind":"facts"`) {
			facts = append(facts, l)
		}
	}
	// GPU 5 of the fixture reads DCGM's blank for power: 7 GPUs sum it.
	if len(facts) != 1 || !strings.Contains(facts[0], `"power_gpus":7`) || !strings.Contains(facts[0], `"sm_mhz":`) || !strings.Contains(facts[0], "reported XID 79") {
		t.Errorf("the journal's facts of the step: %q", facts)
	}
	os.Remove(filepath.Join(dir, "remote.json"))
	if out, code := runBin(t, dir, "report", campaign); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	stamped("rebuilt")
	// The fleet as it was last seen, not as the first write found it
	// (before the exporter had answered).
	b, _ = os.ReadFile(filepath.Join(dir, "remote.md"))
	for _, want := range header {
		if !strings.Contains(string(b), want) {
			t.Errorf("remote.md rebuilt by greenlight report lacks %q:\n%s", want, b)
		}
	}
}
