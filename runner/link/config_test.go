package link

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestConfigReuse: a runner started again without flags takes the GPU
// source, interval and results file of the last one, and says so; a
// flag given wins, and the difference is said.
func TestConfigReuse(t *testing.T) {
	dir := t.TempDir()
	first := Config{StateDir: dir, GPU: []string{"fake:8"}, Interval: 2 * time.Second, Report: "/r/bench.md"}
	first.Save()
	var said bytes.Buffer
	again := Config{StateDir: dir, Interval: time.Second, Given: map[string]bool{}}
	again.Reuse(&said)
	if !reflect.DeepEqual(again.GPU, first.GPU) || again.Interval != first.Interval || again.Report != first.Report {
		t.Errorf("reused %+v; want the first runner's flags", again)
	}
	for _, want := range []string{"--gpu fake:8, as the campaign was started with", "--report /r/bench.md, as the campaign was started with"} {
		if !strings.Contains(said.String(), want) {
			t.Errorf("not said: %q in\n%s", want, said.String())
		}
	}
	said.Reset()
	given := Config{StateDir: dir, GPU: []string{"none"}, Interval: time.Second, Report: "/r/other.md", Given: map[string]bool{"gpu": true, "interval": true, "report": true}}
	given.Reuse(&said)
	if given.GPU[0] != "none" || given.Interval != time.Second || given.Report != "/r/other.md" {
		t.Errorf("given flags lost: %+v", given)
	}
	for _, want := range []string{"where the campaign was started with --gpu fake:8", "where the campaign was started with 2s", "where the campaign was started with --report /r/bench.md"} {
		if !strings.Contains(said.String(), want) {
			t.Errorf("not said: %q in\n%s", want, said.String())
		}
	}
	if SavedReport(dir) != "/r/bench.md" {
		t.Errorf("SavedReport = %q", SavedReport(dir))
	}
}
