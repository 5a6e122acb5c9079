package campaign

import (
	"errors"
	"strings"
	"testing"
)

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
	var fe *FileError
	var errs FileErrors
	switch {
	case errors.As(err, &errs):
		fe = errs[0]
	case errors.As(err, &fe):
	default:
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
		var fe *FileError
		var errs FileErrors
		switch {
		case errors.As(err, &errs):
			return errs[0]
		case errors.As(err, &fe):
			return fe
		}
		t.Fatalf("err = %v; want a FileError", err)
		return nil
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
