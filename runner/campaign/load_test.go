package campaign

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLoadRefusesBadInput(t *testing.T) {
	tests := []struct {
		name, body string
		want       string // FILE:LINE:COL: message, after the file name
		hint       string
	}{
		{"unknown key", "name: x\nphases:\n  - id: a\n    retires: 2\n    steps: [{run: x}]\n", `:4:5: unknown key "retires"`, `did you mean "retries"?`},
		{"wrong type", "name: x\ngpus: eight\nphases:\n  - id: a\n    steps: [{run: x}]\n", `:2:1: gpus: takes a whole number; it has text`, "write a number, unquoted"},
		{"duplicate key", "name: x\nname: y\nphases:\n  - id: a\n    steps: [{run: x}]\n", `:2:1: duplicate key "name"`, "appear once"},
		{"bad duration", "name: x\nphases:\n  - id: a\n    timeout: 5 minutes\n    steps: [{run: x}]\n", `:4:14: bad duration "5 minutes"`, "90s, 36m"},
		{"bad size", "name: x\npreflight: {disk_free: lots}\nphases:\n  - id: a\n    steps: [{run: x}]\n", `:2:24: bad size "lots"`, "50GiB"},
		{"unknown needs", "name: x\nphases:\n  - id: a\n    needs: [b]\n    steps: [{run: x}]\n", `:4:13: unknown phase "b" in needs`, "ids of other phases"},
		{"cycle", "name: x\nphases:\n  - id: a\n    needs: [b]\n    steps: [{run: x}]\n  - id: b\n    needs: [a]\n    steps: [{run: x}]\n", `dependency cycle: a -> b -> a`, "remove one"},
		{"unknown after", "name: x\nphases:\n  - id: decode\n    steps: [{run: x}]\n  - id: b\n    after: [decod]\n    steps: [{run: x}]\n", `:6:13: unknown phase "decod" in after`, "did you mean decode?"},
		{"cycle through after", "name: x\nphases:\n  - id: a\n    after: [b]\n    steps: [{run: x}]\n  - id: b\n    needs: [a]\n    steps: [{run: x}]\n", `dependency cycle: a -> b -> a`, "remove one"},
		{"on_failure misspelled", "name: x\nphases:\n  - id: a\n    sweep: {m: [1, 2]}\n    on_failure: contine\n    steps: [{run: x}]\n", `:5:17: on_failure: "contine" is not continue or stop`, "did you mean continue?"},
		{"on_failure without a sweep", "name: x\nphases:\n  - id: a\n    on_failure: continue\n    steps: [{run: x}]\n", `:4:17: on_failure: lets a sweep go on past a failed point`, "retries:"},
		{"self need", "name: x\nphases:\n  - id: a\n    needs: [a]\n    steps: [{run: x}]\n", `:4:13: phase "a" lists itself in needs`, ""},
		{"invalid regex", "name: x\nphases:\n  - id: a\n    steps:\n      - run: x\n        progress: '(\\d+'\n", `:6:19: invalid regex`, "RE2"},
		{"invalid step regex", "name: x\ntraces: {step: 'execute_model('}\nphases:\n  - id: a\n    steps: [{run: x}]\n", `:2:16: invalid regex`, "step: '^execute_model$'"},
		{"unnamed results regex", "name: x\nphases:\n  - id: a\n    steps:\n      - run: x\n        results: {regex: '(\\d+)'}\n", `results regex has no named group`, "(?P<"},
		{"empty run", "name: x\nphases:\n  - id: a\n    steps:\n      - run: \"  \"\n", `:5:14: the step has no command to run`, "run:"},
		{"no name", "phases:\n  - id: a\n    steps: [{run: x}]\n", `the campaign has no name`, "name:"},
		{"no phases", "name: x\n", `the campaign has no phases`, ""},
		{"duplicate id", "name: x\nphases:\n  - id: a\n    steps: [{run: x}]\n  - id: a\n    steps: [{run: y}]\n", `:5:9: phase id "a" is already used`, ""},
		{"bad id", "name: x\nphases:\n  - id: 'a b'\n    steps: [{run: x}]\n", `may use only letters`, ""},
		{"steps and service", "name: x\nphases:\n  - id: a\n    steps: [{run: x}]\n    service: {run: y, ready: {log: z}}\n", `has both steps (line 4) and a service (line 5)`, "split"},
		{"neither", "name: x\nphases:\n  - id: a\n    title: t\n", `has neither steps nor a service`, ""},
		{"service without ready", "name: x\nphases:\n  - id: a\n    service: {run: y}\n", `the service has no readiness check`, "ready:"},
		{"deep glob", "name: x\nphases:\n  - id: a\n    artifacts: ['out/**']\n    steps: [{run: x}]\n", `:4:17: "out/**": ** matches one name`, "out/*/*.json"},
		{"unknown results format", "name: x\nphases:\n  - id: a\n    steps:\n      - run: x\n        results: {format: genai-perf}\n", `unknown results format "genai-perf"`, "aiperf, guidellm"},
		{"bad gate", "name: x\nphases:\n  - id: a\n    gate: maybe\n    steps: [{run: x}]\n", `:4:11: gate "maybe" is not manual or auto`, ""},
		{"empty gpus", "name: x\nphases:\n  - id: a\n    gpus: []\n    steps: [{run: x}]\n", `:4:11: gpus: [] names no GPU`, "gpus: none"},
		{"gpus word", "name: x\nphases:\n  - id: a\n    gpus: some\n    steps: [{run: x}]\n", `:4:5: gpus: takes a list of GPU indices, or none; it has text`, "write a list"},
		{"gpu past count", "name: x\ngpus: 2\nphases:\n  - id: a\n    gpus: [0, 5]\n    steps: [{run: x}]\n", `:5:15: GPU index 5 is past the campaign's 2 GPUs`, "0 to 1"},
		{"bad expect", "name: x\nphases:\n  - id: a\n    expect: {tok_s: 'lots'}\n    steps: [{run: x}]\n", `expect "tok_s"`, ""},
		{"bad url", "name: x\nphases:\n  - id: a\n    service: {run: y, ready: {http: 'localhost:8000'}}\n", `is not an http(s) URL`, "full URL"},
		{"unset variable", "name: x\nphases:\n  - id: a\n    service: {run: y, ready: {http: 'http://h:${GREENLIGHT_TEST_UNSET}/'}}\n", `${GREENLIGHT_TEST_UNSET} is not set`, "environment"},
		{"not yaml", "name: x\nphases: [\n", ``, "YAML"},
		{"colon in a list run", "name: x\nphases:\n  - id: a\n    steps:\n      - run: curl -H \"Content-Type: application/json\" http://h\n", `:5:35: the value of run holds ": "`, "- run: |\n                curl -H"},
		{"colon in a run", "name: x\nphases:\n  - id: a\n    steps:\n      - name: n\n        run: echo {\"x\": 1} >> f\n", `:6:23: the value of run holds ": "`, "run: 'echo {\"x\": 1} >> f'"},
		{"colon in a service run", "name: x\nphases:\n  - id: a\n    service:\n      run: serve --opt a: b\n      ready: {log: up}\n", `:5:25: the value of run holds ": "`, "run: |"},
		{"unknown gpus key", "name: x\ngpus:\n  count: 8\n  source: [nvml]\nphases:\n  - id: a\n    steps: [{run: x}]\n", `:4:3: unknown key "source"`, `did you mean "sources"?`},
		{"unknown gpu source", "name: x\ngpus: {sources: [nvml, prometheus]}\nphases:\n  - id: a\n    steps: [{run: x}]\n", `:2:24: unknown GPU source "prometheus"`, "dcgm:http://NODE:9400/metrics"},
		{"two local sources", "name: x\ngpus: {sources: [nvml, 'fake:8']}\nphases:\n  - id: a\n    steps: [{run: x}]\n", `two sources for this machine's GPUs (nvml and fake:8)`, "keep one"},
		{"bad exporter", "name: x\ngpus:\n  sources: ['dcgm:http://node2:9400/metrics,ftp://node3']\nphases:\n  - id: a\n    steps: [{run: x}]\n", `:3:13: exporter "ftp://node3" is not an http(s) URL`, "dcgm:NODE"},
		{"empty dcgm", "name: x\ngpus: {sources: ['dcgm:']}\nphases:\n  - id: a\n    steps: [{run: x}]\n", `dcgm: names no exporter`, ""},
		{"empty file", "", `the file is empty`, ""},
		{"slurm unknown key", "name: x\nslurm:\n  partiton: h200\nphases:\n  - id: a\n    steps: [{run: x}]\n", `:3:3: unknown key "partiton"`, `did you mean "partition"?`},
		{"slurm bad nodes", "name: x\nphases:\n  - id: a\n    slurm: {nodes: -2}\n    steps: [{run: x}]\n", `:4:20: nodes must be 1 or more`, ""},
		{"slurm nodes not a number", "name: x\nphases:\n  - id: a\n    slurm: {nodes: two}\n    steps: [{run: x}]\n", `:4:13: nodes: takes a whole number; it has text`, ""},
		{"slurm bad time", "name: x\nslurm: {time: soon}\nphases:\n  - id: a\n    steps: [{run: x}]\n", `:2:15: bad time limit "soon"`, "D-HH:MM:SS"},
		{"slurm zero time", "name: x\nslurm: {time: 0m}\nphases:\n  - id: a\n    steps: [{run: x}]\n", `time limit "0m" is not above zero`, ""},
		{"slurm owned arg", "name: x\nphases:\n  - id: a\n    slurm:\n      args: [--exclusive, --output=x.log]\n    steps: [{run: x}]\n", `:5:27: --output is set by greenlight`, "leave it out"},
		{"slurm arg with a key", "name: x\nphases:\n  - id: a\n    slurm: {args: ['-p', h200]}\n    steps: [{run: x}]\n", `-p is set by the key partition:`, "under slurm:"},
		{"slurm arg not an option", "name: x\nphases:\n  - id: a\n    slurm: {args: [exclusive]}\n    steps: [{run: x}]\n", `"exclusive" is not an sbatch option`, "one item"},
		{"slurm true", "name: x\nphases:\n  - id: a\n    slurm: true\n    steps: [{run: x}]\n", `slurm: true says nothing`, ""},
		{"slurm bad partition", "name: x\nslurm: {partition: 'h200 fast'}\nphases:\n  - id: a\n    steps: [{run: x}]\n", `partition "h200 fast" is not a Slurm partition name`, "sinfo"},
		{"slurm with local gpus", "name: x\nslurm: {partition: h200}\nphases:\n  - id: a\n    gpus: [0, 1]\n    steps: [{run: x}]\n", `:5:11: gpus: names GPUs of this machine, but the phase runs as a Slurm job`, "gpus_per_node"},
		{"slurm off on the campaign", "name: x\nslurm: off\nphases:\n  - id: a\n    steps: [{run: x}]\n", `slurm: off on the campaign says nothing`, "leave it out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "c.yaml")
			os.WriteFile(path, []byte(tt.body), 0o644)
			_, err := Load(path)
			if err == nil {
				t.Fatalf("Load(%q) accepted it", tt.body)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) || !strings.Contains(msg, tt.hint) {
				t.Errorf("Load = %q; want it to contain %q and hint %q", msg, tt.want, tt.hint)
			}
			if !strings.HasPrefix(msg, path) {
				t.Errorf("message %q does not start with the file name", msg)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Errorf("Load created files: %v", ents)
			}
		})
	}
}

func TestLoadResolves(t *testing.T) {
	t.Setenv("GL_TEST_PORT", "8123")
	p := loadCampaign(t, `
name: ok campaign
env: {A: "1", PORT: "${GL_TEST_PORT}"}
phases:
  - id: s
    service:
      run: serve
      ready: {http: "http://localhost:${PORT}/health"}
      estimate: 36m
  - id: b
    needs: [s]
    gpus: [0]
    retries: 2
    expect: {tok_s: {value: 57, rel: 5%}}
    steps:
      - run: bench
        dir: sub
        env: {A: "2"}
        estimate: "90"
`)
	if p.Report != filepath.Join(p.Dir, "ok-campaign.md") {
		t.Errorf("Report = %s", p.Report)
	}
	s, b := p.Phase("s"), p.Phase("b")
	if s.Service.ReadyHTTP != "http://localhost:8123/health" || s.Service.Estimate != 36*time.Minute {
		t.Errorf("service = %+v", s.Service)
	}
	st := b.Steps[0]
	if st.Dir != filepath.Join(p.Dir, "sub") || st.Env["A"] != "2" || st.Env["PORT"] != "8123" || st.Estimate != 90*time.Second {
		t.Errorf("step = dir %s env %v estimate %s", st.Dir, st.Env, st.Estimate)
	}
	if e := b.Expect[0]; !e.Check(55) || e.Check(54) || e.String() != "57 ± 5%" {
		t.Errorf("expect %s: Check(55)=%v Check(54)=%v", e, e.Check(55), e.Check(54))
	}
}

// FuzzLoad: any input is either a plan or a FileError naming the file;
// never a panic.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("name: x\nphases:\n  - id: a\n    steps: [{run: x}]\n"))
	f.Add([]byte("name: x\nphases:\n  - id: a\n    needs: [b]\n    steps: [{run: x}]\n  - id: b\n    needs: [a]\n    service: {run: y, ready: {log: z}}\n"))
	f.Add([]byte("name: x\nphases:\n  - id: a\n    expect: {t: {value: 1, rel: '5%'}}\n    steps: [{run: x, results: {regex: '(?P<t>\\d+)'}}]\n"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.yaml", "/tmp/fuzz.yaml", data)
		if err == nil {
			if p.Name == "" || len(p.Phases) == 0 {
				t.Fatalf("accepted a plan without name or phases: %q", data)
			}
			return
		}
		if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}

// TestColonHintFixLoads: the block the ": " hint shows, put in place of the
// line, makes a file that loads.
func TestColonHintFixLoads(t *testing.T) {
	for _, body := range []string{
		"name: x\nphases:\n  - id: a\n    steps:\n      - run: curl -H \"Content-Type: application/json\" http://h\n",
		"name: x\nphases:\n  - id: a\n    steps:\n      - name: n\n        run: echo {\"x\": 1} >> f\n",
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "c.yaml")
		os.WriteFile(path, []byte(body), 0o644)
		_, err := Load(path)
		var fe *FileError
		if !errors.As(err, &fe) {
			t.Fatalf("Load = %v", err)
		}
		i := strings.Index(fe.Hint, "\n") + 1
		j := strings.Index(fe.Hint, "\n    or quote")
		var fixed []string
		for _, l := range strings.Split(fe.Hint[i:j], "\n") {
			fixed = append(fixed, strings.TrimPrefix(l, "      "))
		}
		lines := strings.Split(body, "\n")
		lines[fe.Line-1] = strings.Join(fixed, "\n")
		os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644)
		p, err := Load(path)
		if err != nil {
			t.Fatalf("the fixed file does not load: %v\n%s", err, strings.Join(lines, "\n"))
		}
		if got := p.Phases[0].Steps[0].Run; !strings.Contains(got, ": ") {
			t.Errorf("the fixed command lost its colon: %q", got)
		}
	}
}

// loadCampaign writes a campaign file into a fresh folder and loads it.
func loadCampaign(t *testing.T, body string) *Plan {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte(strings.TrimLeft(body, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return p
}

func TestSlurmKeyResolves(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	os.WriteFile(path, []byte(`name: x
slurm: {partition: h200, gpus_per_node: 8, time: "1-02:00:00", args: [--exclusive]}
phases:
  - id: here
    slurm: off
    steps: [{run: x}]
  - id: two
    slurm: {nodes: 2, time: 90m}
    steps: [{run: x}]
  - id: serve
    service:
      run: vllm serve
      ready: {http: "http://${GREENLIGHT_NODE}:8000/health"}
  - id: local-serve
    slurm: off
    service:
      run: vllm serve
      ready: {http: "http://${GREENLIGHT_NODE}:8000/health"}
`), 0o644)
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if p.Phase("here").Slurm != nil {
		t.Error("slurm: off still runs on Slurm")
	}
	two := p.Phase("two").Slurm
	if two == nil || two.Partition != "h200" || two.Nodes != 2 || two.GPUsPerNode != 8 || two.Time != 90*time.Minute || len(two.Args) != 1 {
		t.Errorf("two = %+v; want the campaign's default with nodes and time its own", two)
	}
	if s := p.Phase("serve").Slurm; s == nil || s.Time != 26*time.Hour || s.Nodes != 1 {
		t.Errorf("serve = %+v", s)
	}
	if u := p.Phase("serve").Service.ReadyHTTP; u != "http://${GREENLIGHT_NODE}:8000/health" {
		t.Errorf("a Slurm service's ready.http = %q; want ${GREENLIGHT_NODE} kept for the job's node", u)
	}
	if u := p.Phase("local-serve").Service.ReadyHTTP; u != "http://localhost:8000/health" {
		t.Errorf("a local service's ready.http = %q; want localhost", u)
	}
	if p.Phase("two").Hash == p.Phase("here").Hash {
		t.Error("where a phase runs is not part of its work's hash")
	}
}

// TestSlurmDefaultCheckedOnce: a bad key in the campaign's `slurm:` is one
// error at its line, not one for each phase that inherits it.
func TestSlurmDefaultCheckedOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	os.WriteFile(path, []byte("name: x\nslurm: {time: soon}\nphases:\n  - id: a\n    steps: [{run: x}]\n  - id: b\n    steps: [{run: x}]\n  - id: c\n    slurm: {nodes: -1}\n    steps: [{run: x}]\n"), 0o644)
	_, err := Load(path)
	var errs FileErrors
	if !errors.As(err, &errs) || len(errs) != 2 || !strings.Contains(errs[0].Error(), `:2:15: bad time limit "soon"`) || !strings.Contains(errs[1].Error(), ":9:20: nodes must be 1 or more") {
		t.Errorf("errors %v; want the default's bad time once, then phase c's nodes", err)
	}
}

// TestGPUsNone: a phase with gpus: none holds no GPU: it shares none with a
// phase that uses every GPU, or some, and its work differs from a list's.
func TestGPUsNone(t *testing.T) {
	p := loadCampaign(t, `
name: none
phases:
  - id: client
    gpus: none
    steps: [{run: x}]
  - id: all
    steps: [{run: x}]
  - id: zero
    gpus: [0]
    steps: [{run: x}]
`)
	client, all, zero := p.Phase("client"), p.Phase("all"), p.Phase("zero")
	if client.GPUs == nil || len(client.GPUs) != 0 {
		t.Fatalf("gpus: none resolved to %v; want an empty set", client.GPUs)
	}
	if Contend(client, all) || Contend(client, zero) || !Contend(all, zero) {
		t.Errorf("contention: none/all %v, none/[0] %v, all/[0] %v; want false, false, true",
			Contend(client, all), Contend(client, zero), Contend(all, zero))
	}
}

// TestEveryKeyErrorAtOnce: every unknown key is reported in one go, each
// with its line and column; a key of another level says where it goes; a
// tab in the indentation gets its own words.
func TestEveryKeyErrorAtOnce(t *testing.T) {
	body := "name: k\nphases:\n  - id: a\n    retires: 2\n    steps:\n      - run: |\n          true\n        gate: manual\n        progres: x\n"
	_, err := Parse("c.yaml", "/c.yaml", []byte(body))
	var errs FileErrors
	if !errors.As(err, &errs) || len(errs) != 3 {
		t.Fatalf("want 3 errors at once, got %v", err)
	}
	want := []struct{ at, msg, hint string }{
		{"c.yaml:4:5", `unknown key "retires" in a phase`, `did you mean "retries"?`},
		{"c.yaml:8:9", `unknown key "gate" in a step`, "gate is a key of a phase, not of a step: move it there"},
		{"c.yaml:9:9", `unknown key "progres" in a step`, `did you mean "progress"?`},
	}
	for i, w := range want {
		if got := errs[i].Error(); !strings.Contains(got, w.at+": "+w.msg) || errs[i].Hint != w.hint {
			t.Errorf("error %d = %q (hint %q); want %s: %s (hint %q)", i, got, errs[i].Hint, w.at, w.msg, w.hint)
		}
	}
	// The misplaced key's fix, applied, loads.
	fixed := "name: k\nphases:\n  - id: a\n    retries: 2\n    gate: manual\n    steps:\n      - run: |\n          true\n        progress: '(\\d+)%'\n"
	if _, err := Parse("c.yaml", "/c.yaml", []byte(fixed)); err != nil {
		t.Errorf("the file with the hints applied does not load: %v", err)
	}
	_, err = Parse("t.yaml", "/t.yaml", []byte("name: k\nphases:\n\t- id: a\n"))
	var fe *FileError
	if !errors.As(err, &fe) || fe.Line != 3 || fe.Col != 1 || !strings.Contains(fe.Msg, "tabs are not allowed here") || !strings.Contains(fe.Hint, "indent with spaces") {
		t.Errorf("a tab: %v", err)
	}
}

// TestIndentHintFixLoads: a key dedented by a slip (to the column of the
// list dashes above, or out of its phase) is named with the column it
// belongs at, and the file with that fix applied loads.
func TestIndentHintFixLoads(t *testing.T) {
	hintSpaces := regexp.MustCompile(`^indent it (\d+) spaces, in line with (\w+): on line \d+`)
	for _, tt := range []struct{ body, key, with string }{
		{"name: x\nphases:\n  - id: a\n    steps:\n      - run: |\n          vllm bench serve\n      results:\n          format: vllm-bench\n", "results", "8"},
		{"name: x\nphases:\n  - id: a\n    steps:\n      - run: |\n          true\n  gate: manual\n", "gate", "4"},
		{"name: x\nphases:\n  - id: a\n    gate: manual\n    steps:\n      - run: |\n          true\n        progress: '(\\d+)%'\n  retries: 2\n", "retries", "4"},
	} {
		_, err := Parse("c.yaml", "/c.yaml", []byte(tt.body))
		var fe *FileError
		if !errors.As(err, &fe) {
			t.Fatalf("Parse = %v; want one FileError", err)
		}
		m := hintSpaces.FindStringSubmatch(fe.Hint)
		if !strings.Contains(fe.Msg, tt.key+": is indented") || m == nil || m[1] != tt.with {
			t.Errorf("%s:%d:%d: %s (hint %q); want %s: named, to go %s spaces in", fe.File, fe.Line, fe.Col, fe.Msg, fe.Hint, tt.key, tt.with)
			continue
		}
		if fe.Fix == nil {
			t.Errorf("%s: the hint %q carries no fix", tt.key, fe.Hint)
			continue
		}
		fixed := strings.Join(fe.Fix.Apply(strings.Split(tt.body, "\n")), "\n")
		if got := fe.Fix.With[0]; indentOf(got) != mustAtoi(m[1]) {
			t.Errorf("the hint says %s spaces; its fix gives %q", m[1], got)
		}
		if _, err := Parse("c.yaml", "/c.yaml", []byte(fixed)); err != nil {
			t.Errorf("the fix the hint gives does not load: %v\n%s", err, fixed)
		}
	}
}

func mustAtoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}

// TestMetricsURLAlone: `metrics: URL`, as a person writes it, means
// {url: URL}; the mapping still works, and a list is refused at its line.
func TestMetricsURLAlone(t *testing.T) {
	for _, c := range []struct{ metrics, want string }{
		{"metrics: http://127.0.0.1:18792/metrics", "http://127.0.0.1:18792/metrics"},
		{"metrics: {url: \"http://127.0.0.1:18792/metrics\", series: [\"vllm:x\"]}", "http://127.0.0.1:18792/metrics"},
	} {
		p, err := Parse("c.yaml", "/c.yaml", []byte("name: m\nphases:\n  - id: serve\n    service:\n      run: |\n        sleep 100\n      ready: {log: up}\n      "+c.metrics+"\n"))
		if err != nil {
			t.Fatalf("%s: %v", c.metrics, err)
		}
		if got := p.Phase("serve").Service.MetricsURL; got != c.want {
			t.Errorf("%s: url %q; want %q", c.metrics, got, c.want)
		}
	}
	_, err := Parse("c.yaml", "/c.yaml", []byte("name: m\nphases:\n  - id: serve\n    service:\n      run: |\n        sleep 100\n      ready: {log: up}\n      metrics: [a, b]\n"))
	if err == nil || !strings.Contains(err.Error(), "8:") {
		t.Errorf("a list for metrics: %v; want an error at line 8", err)
	}
}

// TestSlipBesideAFlowMapping: a key dedented under a line that is a flow
// mapping ({x: a, y: b} holds ": " by right) is named at its own line,
// with a fix that loads, never as the flow mapping's ": " with a hint to
// quote it (which breaks plot:); `metrics: URL` beside ready: {http: ...}
// loads.
func TestSlipBesideAFlowMapping(t *testing.T) {
	body := "name: x\nphases:\n  - id: decode\n    sweep: {concurrency: [1, 4]}\n    plot: {x: mean_tpot_ms, y: output_token_throughput_tok_s, label: concurrency}\n  steps:\n      - run: |\n          echo ${concurrency}\n"
	_, err := Parse("c.yaml", "/c.yaml", []byte(body))
	var fe *FileError
	if !errors.As(err, &fe) {
		t.Fatalf("Parse = %v; want one FileError", err)
	}
	if fe.Line != 6 || strings.Contains(fe.Msg, "plot") || strings.Contains(fe.Hint, "quote") || fe.Fix == nil {
		t.Fatalf("%v; want line 6 (steps:) with a fix, not plot:", err)
	}
	fixed := strings.Join(fe.Fix.Apply(strings.Split(body, "\n")), "\n")
	if p, err := Parse("c.yaml", "/c.yaml", []byte(fixed)); err != nil || len(p.Phases) == 0 || p.Phases[0].Plot == nil {
		t.Fatalf("the fix does not load with plot: kept: %v\n%s", err, fixed)
	}
	svc := "name: m\nphases:\n  - id: serve\n    service:\n      run: |\n        vllm serve m --port 18792\n      ready: {http: \"http://127.0.0.1:18792/health\"}\n      metrics: http://127.0.0.1:18792/metrics\n"
	if p, err := Parse("c.yaml", "/c.yaml", []byte(svc)); err != nil || p.Phase("serve").Service.MetricsURL != "http://127.0.0.1:18792/metrics" {
		t.Fatalf("metrics: URL beside ready: {http: ...}: %v", err)
	}
}

// TestDidYouMeanTheKeyMeant: two letters swapped cost one edit, and a
// key the mapping already has is never proposed.
func TestDidYouMeanTheKeyMeant(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"      - rnu: |", "run"},
		{"      - run: |\n        nmae: x", "name"},
	} {
		body := "name: x\nphases:\n  - id: a\n    steps:\n" + c.line + "\n          true\n"
		if c.want == "name" {
			body = "name: x\nphases:\n  - id: a\n    steps:\n      - run: |\n          true\n        nmae: x\n"
		}
		_, err := Parse("c.yaml", "/c.yaml", []byte(body))
		var fe *FileError
		if !errors.As(err, &fe) || fe.Hint != fmt.Sprintf("did you mean %q?", c.want) || fe.Fix == nil {
			t.Errorf("%q: %v; want did you mean %q with its fix", c.line, err, c.want)
			continue
		}
		if _, err := Parse("c.yaml", "/c.yaml", []byte(strings.Join(fe.Fix.Apply(strings.Split(body, "\n")), "\n"))); err != nil {
			t.Errorf("%q: the fix does not load: %v", c.line, err)
		}
	}
	if got := nearest("m", []string{"id", "name"}); got != "" {
		t.Errorf("nearest(m) = %q; a one-letter key is no slip of a longer one", got)
	}
}

// TestModelAndPrewarm: model: names the model's folder (relative to the
// campaign file, ${NAME} expanded; unset, the load goes unmeasured, no
// error); prewarm: without a model is refused at its line.
func TestModelAndPrewarm(t *testing.T) {
	svc := func(extra string) string {
		return "name: m\nphases:\n  - id: serve\n    service:\n      run: |\n        vllm serve x\n      ready: {log: up}\n" + extra
	}
	t.Setenv("GL_TEST_MODEL", "/models/k2")
	for _, c := range []struct{ extra, want string }{
		{"      model: ${GL_TEST_MODEL}\n      prewarm: true\n", "/models/k2"},
		{"      model: weights\n", "/c/weights"},
		{"      model: ${GL_TEST_UNSET_MODEL}\n", ""},
	} {
		p, err := Parse("c.yaml", "/c/c.yaml", []byte(svc(c.extra)))
		if err != nil {
			t.Fatalf("%q: %v", c.extra, err)
		}
		if got := p.Phase("serve").Service.Model; got != c.want {
			t.Errorf("%q: model %q; want %q", c.extra, got, c.want)
		}
	}
	_, err := Parse("c.yaml", "/c/c.yaml", []byte(svc("      prewarm: true\n")))
	if err == nil || !strings.Contains(err.Error(), "c.yaml:8:") || !strings.Contains(err.Error(), "names none") {
		t.Errorf("prewarm without a model: %v; want an error at line 8", err)
	}
}

// TestSlurmGroups: `groups:` under slurm: asks for a heterogeneous job,
// each group its own partition, nodes, GPUs and args, the job's time,
// account and args on each; the groups are part of the phase's work.
// Bad input is said at its key.
func TestSlurmGroups(t *testing.T) {
	p := loadCampaign(t, `
name: het
slurm: {partition: h200, time: 2h, args: [--exclusive]}
phases:
  - id: plain
    slurm: {nodes: 3}
    steps: [{run: x}]
  - id: pair
    slurm:
      groups:
        - {nodes: 2, gpus_per_node: 8}
        - {partition: cpu, args: [--mem=8G]}
    steps: [{run: x}]
`)
	pair := p.Phase("pair").Slurm
	want := []SlurmGroup{{Nodes: 2, GPUsPerNode: 8}, {Partition: "cpu", Nodes: 1, Args: []string{"--mem=8G"}}}
	if pair == nil || !reflect.DeepEqual(pair.Groups, want) || pair.Nodes != 3 || pair.Partition != "h200" || pair.Time != 2*time.Hour {
		t.Fatalf("pair = %+v; want groups %+v of the campaign's partition and time, 3 nodes in all", pair, want)
	}
	if got := pair.String(); got != "partition h200, a heterogeneous job (group 0: 2 nodes × 8 GPUs; group 1: 1 node in cpu --mem=8G), time limit 2h00m, --exclusive" {
		t.Errorf("said %q", got)
	}
	if plain := p.Phase("plain").Slurm; plain.Groups != nil {
		t.Errorf("plain = %+v; a phase without groups asks for a job of one component", plain)
	}
	if p.Phase("plain").Hash == p.Phase("pair").Hash {
		t.Error("the groups are not part of the phase's work")
	}
	for _, c := range []struct{ body, want string }{
		{"slurm: {groups: [{nodes: 2}]}", "4:21: a heterogeneous job needs two groups or more"},
		{"slurm: {nodes: 2, groups: [{nodes: 1}, {nodes: 1}]}", "4:20: nodes: is given per group when slurm: has groups"},
		{"slurm: {groups: [{nodes: 1, time: 1h}, {nodes: 1}]}", "4:39: time: is the whole job's, not a group's"},
		{"slurm: {groups: [{nodes: 1}, {gpus_per_node: -2}]}", "4:50: gpus_per_node must be zero or more"},
		{"slurm: {groups: [{nodes: 1}, {args: [--nodes=2]}]}", "--nodes is set by the key nodes:"},
	} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		os.WriteFile(path, []byte("name: x\nphases:\n  - id: a\n    "+c.body+"\n    steps: [{run: x}]\n"), 0o644)
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.body, err, c.want)
		}
	}
}

// TestRepeatUntil: repeat: takes a number or {until: 2%, max: 10} (min 3
// unless said); a plain number hashes as it always did; bad input is said
// at its key.
func TestRepeatUntil(t *testing.T) {
	p := loadCampaign(t, `
name: r
phases:
  - id: tight
    sweep: {m: [1, 2]}
    repeat: {until: 2%, max: 10}
    steps: [{run: "echo ${m}"}]
  - id: fixed
    repeat: 4
    steps: [{run: x}]
`)
	if r := p.Phase("tight").Sweep.Repeats; r != (Repeats{Min: 3, Max: 10, Precision: 0.02}) || p.Phase("tight").Sweep.Repeat != 10 || len(p.Phase("tight").Sweep.Units) != 20 {
		t.Errorf("tight = %+v (%d units); want 3 to 10 runs until 2%%, 10 planned", r, len(p.Phase("tight").Sweep.Units))
	}
	if r := p.Phase("fixed").Sweep.Repeats; r != (Repeats{Min: 4, Max: 4}) {
		t.Errorf("fixed = %+v", r)
	}
	for _, c := range []struct{ body, want string }{
		{"repeat: {until: 2, max: 10}", `4:21: until: "2" is not a percentage`},
		{"repeat: {until: 2%}", "needs max:"},
		{"repeat: {until: 2%, max: 2}", "4:30: max: 2 is below min: 3"},
		{"repeat: {until: 2%, max: 5, min: 1}", "4:38: min: 1 gives no interval to judge by"},
		{"repeat: {max: 5}", "says when to stop"},
		{"repeat: often", `repeat: "often" is neither a number of runs nor a mapping`},
		{"repeat: {until: 2%, max: 5, upto: 3}", "upto"},
	} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		os.WriteFile(path, []byte("name: x\nphases:\n  - id: a\n    "+c.body+"\n    steps: [{run: x}]\n"), 0o644)
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.body, err, c.want)
		}
	}
}

// TestSearchBadInput: each mistake of a search: said at its key, all at
// once, with what to write instead.
func TestSearchBadInput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(path, []byte(`name: x
phases:
  - id: a
    search: {axis: c, range: [8, 2], slo: {p99: "< 50"}, resolution: ten}
    steps: [{run: "echo ${c}"}]
  - id: fine
    search: {axis: c, range: [1, 1000000], slo: {p99: "<= 50"}, resolution: 1%}
    steps: [{run: "echo ${c}"}]
  - id: b
    sweep: {m: [1, 2]}
    until: failed
    expect: {p99: "<= 50"}
    repeat: 1
    search: {axis: c, range: [1, 64], slo: {p99: "<= 50"}}
    steps: [{run: "echo ${m} ${cc}"}]
`), 0o644)
	_, err := Load(path)
	for _, want := range []string{
		"4:30: range: [8 2] is not [low, high] of whole numbers, 1 <= low < high",
		`4:49: SLO term p99: "< 50" is not <= or >= a number`,
		`4:70: resolution: "ten" is not a percentage`,
		"7:77: the search's grid has 1033 values, 12396 units with their runs: more than 10000",
		"10:12: sweep: cannot go with search:",
		"11:12: until: cannot go with search:",
		"13:13: repeat: 1 gives a probe no interval to judge it by",
		"${cc} names no axis of the search",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
}
