package campaign

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sweptServe is a campaign's head whose one phase is a swept service,
// serve (its axis seqs): the tests add the phases that use it.
const sweptServe = `name: w
phases:
  - id: serve
    sweep:
      seqs: [128, 256]
    service:
      run: |
        vllm serve m --max-num-seqs ${seqs}
      ready: {log: ready}
`

// firstError is the first FileError err holds; nil when it holds none.
func firstError(err error) *FileError {
	var fe *FileError
	var errs FileErrors
	switch {
	case errors.As(err, &errs) && len(errs) > 0:
		return errs[0]
	case errors.As(err, &fe):
		return fe
	}
	return nil
}

// TestModelVarOneSlipFromASetName: model: ${MODEL_DIR} unset is no error
// (set in the environment of the night's run), but a name one slip from
// one env: sets is a typo, said at model:'s line with the name it meant.
func TestModelVarOneSlipFromASetName(t *testing.T) {
	file := func(model string) []byte {
		return []byte(`name: m
env:
  MODEL_DIR: /models/k25
phases:
  - id: serve
    service:
      run: |
        sleep 1000
      model: ` + model + `
      ready: {log: "ready"}
`)
	}
	_, err := Parse("c.yaml", "/tmp/c.yaml", file("${MODEL_DRI}"))
	if err == nil || !strings.Contains(err.Error(), "c.yaml:9:14: ${MODEL_DRI} is not set") || !strings.Contains(err.Error(), "env: sets MODEL_DIR on line 3") {
		t.Errorf("${MODEL_DRI} beside MODEL_DIR: %v; want the slip said at model:", err)
	}
	if _, err := Parse("c.yaml", "/tmp/c.yaml", file("${MODEL_DIR}")); err != nil {
		t.Errorf("${MODEL_DIR} set: %v", err)
	}
	if _, err := Parse("c.yaml", "/tmp/c.yaml", file("${WEIGHTS_FOLDER_UNSET_HERE}")); err != nil {
		t.Errorf("a name unset and near none: %v; want no error (set at run time)", err)
	}
}

// TestLostItemLineSaidWhereItWas: a `- name:` line deleted leaves its
// keys indented under steps:; the parser fails at the next item, lines
// below. The error is said where the line was lost, naming why.
func TestLostItemLineSaidWhereItWas(t *testing.T) {
	src := `name: c
phases:
  - id: gemm
    steps:
        run: |
          python3 bench.py
        estimate: 90s
      - name: int4
        run: |
          python3 bench.py --int4
`
	_, err := Parse("c.yaml", "/c/c.yaml", []byte(src))
	fe := firstError(err)
	if fe == nil {
		t.Fatalf("err = %v; want a FileError", err)
	}
	if fe.Line != 5 || !strings.Contains(fe.Hint, "a line may be missing above this one") || !strings.Contains(fe.Msg, "line 8 goes back to 6") {
		t.Errorf("said at line %d: %s (hint %q); want line 5, the lost item line", fe.Line, fe.Msg, fe.Hint)
	}
}

// TestSlipsInAServiceSaidWhereTheyAre: a `run: |` line deleted leaves its
// command read as YAML: said at the command's first line; a `ready:`
// indented into the command's text is said where it is, with the
// indentation that loads; `repeat: {a: 3}` is told to write `repeat: 3`
// (the key renamed, max, would still not load).
func TestSlipsInAServiceSaidWhereTheyAre(t *testing.T) {
	first := func(src string) *FileError {
		t.Helper()
		_, err := Parse("c.yaml", "/c/c.yaml", []byte(src))
		fe := firstError(err)
		if fe == nil {
			t.Fatalf("err = %v; want a FileError", err)
		}
		return fe
	}
	service := `name: c
phases:
  - id: serve
    service:
      run: |
        head=$(hostname)
        want=8
        [ "$want" = 8 ] || { echo "never reported its $want GPUs (last: 0)"; exit 1; }
        exec vllm serve m --port 8000
      ready:
        http: http://localhost:8000/health
`
	lost := strings.Replace(service, "      run: |\n", "", 1)
	if e := first(lost); e.Line != 5 || !strings.Contains(e.Hint, "`run: |` line") {
		t.Errorf("run: | deleted: line %d: %s (hint %q); want line 5", e.Line, e.Msg, e.Hint)
	}
	inside := strings.Replace(service, "      ready:\n", "          ready:\n", 1)
	e := first(inside)
	if e.Line != 10 || e.Fix == nil {
		t.Fatalf("ready: indented into run: line %d: %s (hint %q); want line 10 with a fix", e.Line, e.Msg, e.Hint)
	}
	if _, err := Parse("c.yaml", "/c/c.yaml", []byte(strings.Join(e.Fix.Apply(strings.Split(inside, "\n")), "\n"))); err != nil {
		t.Errorf("the fix does not load: %v", err)
	}
	wrapped := "name: c\nphases:\n  - id: g\n    sweep: {m: [1, 2]}\n    repeat: {a: 3}\n    steps:\n      - run: |\n          true\n"
	e = first(wrapped)
	if e.Fix == nil || !strings.Contains(e.Hint, "repeat: 3") {
		t.Fatalf("repeat: {a: 3}: %s (hint %q); want it told to write repeat: 3", e.Msg, e.Hint)
	}
	if _, err := Parse("c.yaml", "/c/c.yaml", []byte(strings.Join(e.Fix.Apply(strings.Split(wrapped, "\n")), "\n"))); err != nil {
		t.Errorf("the fix does not load: %v", err)
	}
}

// TestLostLinesSaidAtTheGap: each slip that used to be said at a
// neighbour, said where it happened, with an edit that loads where one
// can be known: a deleted `ready:` whose keys now read as run:'s text; a
// deleted `slo:` (where it goes: after range:); a deleted `needs:` that
// leaves a swept service's axis unset, or a capture without ranks; a
// deleted `gpus:` whose keys now sit in env:; a sweep: left with no axes;
// an axis misspelled where plot: and the steps agree on the name. (Lines
// indented wrong are TestIndentSlipsFarFromTheirError's.)
func TestLostLinesSaidAtTheGap(t *testing.T) {
	service := `name: c
env:
  PORT: "8000"
gpus:
  count: 8
  sources: [auto, "dcgm:node2"]
phases:
  - id: serve
    service:
      # the server
      run: >-
        vllm serve m --tensor-parallel-size 8 --port 8000
        --trust-remote-code --max-model-len 32768
        --gpu-memory-utilization 0.92 --max-num-seqs 256
        --enable-chunked-prefill --enable-prefix-caching
        --disable-log-requests --disable-log-stats
      ready:
        http: http://localhost:8000/health
        log: 'Application startup complete'
  - id: macro
    needs: [serve]
    artifacts: [traces/*.pt.trace.json.gz]
    capture: {stall: 10m}
    steps:
      - run: |
          curl -X POST localhost:8000/start_profile
  - id: gemm
    gpus: [0]
    sweep:
      batch: [1, 64]
    plot: {x: batch, y: [tflops]}
    steps:
      - name: bench
        run: |
          nvidia-smi -L
          python3 gemm.py --m ${batch} --warmup 10
          python3 gemm.py --m ${batch} --iters 100
          python3 gemm.py --m ${batch} --iters 1000
          echo done
        estimate: 60s
`
	search := `name: s
phases:
  - id: limit
    search:
      axis: m
      range: [1, 16384]
      slo: {time_us: "<= 30"}
      resolution: 10%
    steps:
      - run: |
          python3 gemm.py --m ${m}
`
	swept := sweptServe + `  - id: decode
    needs: [serve]
    artifacts: ['bench/${seqs}/*.json']
    steps:
      - run: |
          vllm bench serve
`
	for _, c := range []struct {
		name, src, from, to string
		line                int
		msg                 string
		fix                 bool
	}{
		{"ready: deleted", service, "      ready:\n", "", 17, "the service has no readiness check: lines 17 to 18 read as its keys", true},
		{"slo: deleted", search, `      slo: {time_us: "<= 30"}` + "\n", "", 7, "a search needs an SLO: the terms each probe is judged by (slo: goes here, after range:)", false},
		{"needs: deleted, an axis unset", swept, "    needs: [serve]\n", "", 10, "${seqs} is not set: it is an axis of the swept service serve, which this phase does not need", true},
		{"needs: deleted, a capture without ranks", service, "    needs: [serve]\n", "", 20, "capture: gives no ranks, and this phase needs no service; the service serve says tensor-parallel 8", true},
		{"gpus: deleted", service, "gpus:\n", "", 4, "lines 4 to 5 read as the keys of gpus: (count:, sources:), but sit in env: (line 2)", true},
		{"sweep: left empty", service, "      batch: [1, 64]\n", "", 29, "sweep: has no axes", false},
		{"an axis misspelled", service, "      batch: [1, 64]\n", "      bacth: [1, 64]\n", 30, `axis "bacth": plot: (line 31) and the steps name ${batch}, one slip from it`, true},
	} {
		src := strings.Replace(c.src, c.from, c.to, 1)
		if src == c.src {
			t.Fatalf("%s: the slip did not apply", c.name)
		}
		_, err := Parse("c.yaml", "/c/c.yaml", []byte(src))
		fe := firstError(err)
		if fe == nil {
			t.Errorf("%s: %v; want a FileError", c.name, err)
			continue
		}
		if fe.Line != c.line || !strings.Contains(fe.Msg, c.msg) {
			t.Errorf("%s: line %d: %s; want line %d: %s", c.name, fe.Line, fe.Msg, c.line, c.msg)
			continue
		}
		if (fe.Fix != nil) != c.fix {
			t.Errorf("%s: fix %+v; want one: %v", c.name, fe.Fix, c.fix)
			continue
		}
		if fe.Fix != nil {
			if _, err := Parse("c.yaml", "/c/c.yaml", []byte(strings.Join(fe.Fix.Apply(strings.Split(src, "\n")), "\n"))); err != nil {
				t.Errorf("%s: the fix does not load: %v", c.name, err)
			}
		}
	}
	for name, src := range map[string]string{"service": service, "search": search, "swept": swept} {
		if _, err := Parse("c.yaml", "/c/c.yaml", []byte(src)); err != nil {
			t.Errorf("%s as written: %v", name, err)
		}
	}
}

// TestIndentSlipsFarFromTheirError: in the examples, where a line
// indented wrong shows only many lines below it (past a long script, out
// of the repair's reach), and a deleted needs: that leaves a floor:
// without the model its service names: a service's first key dedented out from under
// an empty `service:`; a step's `run: |` dedented out of its item;
// `run: |` indented past its own text. Each said at the slipped line,
// with the indentation that loads.
func TestIndentSlipsFarFromTheirError(t *testing.T) {
	for _, c := range []struct {
		file  string
		line  int // the slipped line
		shift int // spaces added (or, below 0, taken); 0: the line deleted
		msg   string
		at    int // where it is said, when not at line: a phase's line
	}{
		{"kimi-k25-vllm.yaml", 132, 0, "floor: needs the model's folder (its config.json), and this phase needs no service; the service serve says model: ${MODEL_DIR}", 130},
		{"kimi-k25-slurm.yaml", 44, -2, "this line is no deeper than service: (line 39), which has nothing under it", 0},
		{"h200-smoke.yaml", 41, -4, "this line is shallower than the keys around it", 0},
		{"kimi-k25-slurm.yaml", 44, 2, "run: opens a block at indentation 8, and the lines under it (from line 45) are no deeper", 0},
	} {
		b, err := os.ReadFile(filepath.Join("../../examples", c.file))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		switch {
		case c.shift == 0:
			lines = append(lines[:c.line-1:c.line-1], lines[c.line:]...)
		case c.shift < 0:
			lines[c.line-1] = lines[c.line-1][-c.shift:]
		default:
			lines[c.line-1] = strings.Repeat(" ", c.shift) + lines[c.line-1]
		}
		src := strings.Join(lines, "\n")
		_, err = Parse(c.file, "/c/"+c.file, []byte(src))
		fe := firstError(err)
		if fe == nil {
			t.Errorf("%s:%d shifted %d: %v; want a FileError", c.file, c.line, c.shift, err)
			continue
		}
		at := c.line
		if c.at > 0 {
			at = c.at
		}
		if fe.Line != at || !strings.Contains(fe.Msg, c.msg) || fe.Fix == nil {
			t.Errorf("%s:%d shifted %d: line %d: %s (fix %v); want line %d: %s, with a fix", c.file, c.line, c.shift, fe.Line, fe.Msg, fe.Fix, at, c.msg)
			continue
		}
		if _, err := Parse(c.file, "/c/"+c.file, []byte(strings.Join(fe.Fix.Apply(lines), "\n"))); err != nil {
			t.Errorf("%s:%d: the fix does not load: %v", c.file, c.line, err)
		}
	}
}

// TestAxesHintNamesNoWrongLine: a phase that uses a swept service and has
// no sweep: of its own names an axis that is none: the hint lists the
// axes, and names no line as their sweep: (its own `- id:` line was).
func TestAxesHintNamesNoWrongLine(t *testing.T) {
	src := sweptServe + `  - id: decode
    needs: [serve]
    steps:
      - run: |
          vllm bench serve --max-concurrency ${conc}
`
	_, err := Parse("c.yaml", "/c/c.yaml", []byte(src))
	fe := firstError(err)
	if fe == nil || fe.Line != 13 || !strings.Contains(fe.Msg, "${conc} names no axis") || fe.Hint != "the axes are seqs" {
		t.Errorf("err %v; want ${conc} at line 13, hinted with the axes and no line", err)
	}
}
