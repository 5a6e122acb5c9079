package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"syscall"
	"testing"

	"github.com/greenlight-run/greenlight/runner/supervise"
)

// decodeObjectRef is the decoder results lines had before the fast one:
// encoding/json token by token. The fuzz test holds the two to the same
// answers.
func decodeObjectRef(line []byte) ([]string, []any, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, errors.New("not an object")
	}
	var cols []string
	var vals []any
	seen := map[string]int{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		key, _ := kt.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, err
		}
		var v any
		var n json.Number
		switch {
		case json.Unmarshal(raw, &n) == nil:
			f, err := n.Float64()
			if err != nil {
				v = n.String()
			} else {
				v = f
			}
		default:
			var x any
			if err := json.Unmarshal(raw, &x); err != nil {
				return nil, nil, err
			}
			switch x.(type) {
			case string, bool, nil:
				v = x
			default:
				var buf bytes.Buffer
				json.Compact(&buf, raw)
				v = buf.String()
			}
		}
		if i, dup := seen[key]; dup {
			vals[i] = v
			continue
		}
		seen[key] = len(cols)
		cols = append(cols, key)
		vals = append(vals, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, err
	}
	if dec.More() {
		return nil, nil, fmt.Errorf("text after the object")
	}
	return cols, vals, nil
}

func TestDecodeObject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		cols []string
		vals []any
	}{
		{`{"tok_s": 57.5, "model": "k2", "ok": true, "x": null}`, []string{"tok_s", "model", "ok", "x"}, []any{57.5, "k2", true, nil}},
		{`{"b": 1, "a": 2, "b": 3}`, []string{"b", "a"}, []any{3.0, 2.0}},
		{` { "nested" : {"a": [1, 2]}, "esc": "tab\there" } `, []string{"nested", "esc"}, []any{`{"a":[1,2]}`, "tab\there"}},
		{`{"big": 1e400}`, []string{"big"}, []any{"1e400"}},
		{`{}`, nil, nil},
	}
	for _, tt := range tests {
		cols, vals, err := decodeObject([]byte(tt.in))
		if err != nil || !reflect.DeepEqual(cols, tt.cols) || !reflect.DeepEqual(vals, tt.vals) {
			t.Errorf("decodeObject(%s) = %v, %v, %v; want %v, %v", tt.in, cols, vals, err, tt.cols, tt.vals)
		}
	}
	for _, bad := range []string{`[1]`, `{"a": 1`, `{"a": 01}`, `{"a": 1} x`, `{"a" 1}`, `{"a": tru}`, `{a: 1}`, `{"a": "x` + "\x01" + `"}`} {
		if _, _, err := decodeObject([]byte(bad)); err == nil {
			t.Errorf("decodeObject(%q) took a bad line", bad)
		}
	}
}

func FuzzDecodeObject(f *testing.F) {
	for _, s := range []string{`{"a": 1, "b": "x", "c": [1, {"d": null}], "e": -1.5e3}`, `{"\u00e9": "\ud83d\ude00"}`, `{"a":1}{`, "{\"a\": \"\xff\"}", `{"n": 123456789012345678901234567890}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		cols, vals, err := decodeObject(line)
		rc, rv, rerr := decodeObjectRef(line)
		if err != nil && rerr == nil && err.Error() == "text after the object" {
			return // the reference let a stray "]" after the object through
		}
		if (err == nil) != (rerr == nil) {
			t.Fatalf("%q: fast err %v, reference err %v", line, err, rerr)
		}
		if err == nil && (!reflect.DeepEqual(cols, rc) || !reflect.DeepEqual(vals, rv)) {
			t.Fatalf("%q: fast %v %v, reference %v %v", line, cols, vals, rc, rv)
		}
	})
}

func BenchmarkDecodeObject(b *testing.B) {
	line := []byte(`{"i": 12345, "t_ns": 1796279053123456789, "tok_s": 57, "kernel": "gemm_3"}`)
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			decodeObject(line)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			decodeObjectRef(line)
		}
	})
}

// TestSignalsSaidAsSignals: a step or server killed by a signal is said
// by the signal's name, number and usual sender, not Go's word for it
// ("killed by killed").
func TestSignalsSaidAsSignals(t *testing.T) {
	for said, want := range map[string]string{
		syscall.SIGKILL.String(): "killed by SIGKILL (9): the OOM killer, or kill -9",
		syscall.SIGSEGV.String(): "killed by SIGSEGV (11): a crash (segmentation fault)",
		syscall.SIGTERM.String(): "killed by SIGTERM (15): asked to stop",
		"a word no signal has":   "killed by a word no signal has",
	} {
		if got := exitReason(&supervise.Status{Signal: said}); got != want {
			t.Errorf("exitReason(signal %q) = %q; want %q", said, got, want)
		}
	}
}
