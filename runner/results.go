package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// decodeObject reads one JSON object keeping its keys in order, since the
// order a step writes its columns in is the order a person wants them.
// Numbers become float64; strings, booleans and null stay as they are;
// nested values are kept as compact JSON text.
//
// A results line is a flat object in nearly every case, and a step may
// write tens of thousands of them in a burst: the object is scanned here
// by hand, and encoding/json only validates what it is handed (a nested
// value, a string with escapes).
func decodeObject(line []byte) ([]string, []any, error) {
	d := scanner{b: line}
	d.space()
	if !d.eat('{') {
		return nil, nil, errors.New("not an object")
	}
	var cols []string
	var vals []any
	seen := map[string]int{}
	d.space()
	if d.eat('}') {
		return d.end(cols, vals)
	}
	for {
		d.space()
		key, err := d.str()
		if err != nil {
			return nil, nil, err
		}
		d.space()
		if !d.eat(':') {
			return nil, nil, d.errorf("expected ':' after key %q", key)
		}
		d.space()
		v, err := d.value()
		if err != nil {
			return nil, nil, err
		}
		if i, dup := seen[key]; dup {
			vals[i] = v
		} else {
			seen[key] = len(cols)
			cols = append(cols, key)
			vals = append(vals, v)
		}
		d.space()
		if d.eat('}') {
			return d.end(cols, vals)
		}
		if !d.eat(',') {
			return nil, nil, d.errorf("expected ',' or '}'")
		}
	}
}

type scanner struct {
	b []byte
	i int
}

func (d *scanner) errorf(f string, args ...any) error {
	return fmt.Errorf("at byte %d: %s", d.i+1, fmt.Sprintf(f, args...))
}

func (d *scanner) space() {
	for d.i < len(d.b) && (d.b[d.i] == ' ' || d.b[d.i] == '\t' || d.b[d.i] == '\r' || d.b[d.i] == '\n') {
		d.i++
	}
}

func (d *scanner) eat(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *scanner) end(cols []string, vals []any) ([]string, []any, error) {
	d.space()
	if d.i != len(d.b) {
		return nil, nil, errors.New("text after the object")
	}
	return cols, vals, nil
}

// str reads a JSON string.
func (d *scanner) str() (string, error) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return "", d.errorf("expected a string")
	}
	start := d.i
	escaped := false
	for j := d.i + 1; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '\\':
			escaped = true
			j++
		case c < 0x20:
			return "", d.errorf("control character in a string")
		case c == '"':
			d.i = j + 1
			if !escaped && utf8.Valid(d.b[start+1:j]) {
				return string(d.b[start+1 : j]), nil
			}
			var s string
			if err := json.Unmarshal(d.b[start:d.i], &s); err != nil {
				return "", err
			}
			return s, nil
		}
	}
	return "", d.errorf("unterminated string")
}

// value reads any JSON value.
func (d *scanner) value() (any, error) {
	if d.i >= len(d.b) {
		return nil, d.errorf("expected a value")
	}
	switch c := d.b[d.i]; {
	case c == '"':
		return d.str()
	case c == '{' || c == '[':
		return d.nested()
	case c == '-' || c >= '0' && c <= '9':
		start := d.i
		if !d.number() {
			return nil, d.errorf("bad number %q", d.b[start:min(len(d.b), d.i+1)])
		}
		text := d.b[start:d.i]
		f, err := strconv.ParseFloat(string(text), 64)
		if err != nil {
			return string(text), nil // too large for a float: kept as written
		}
		return f, nil
	}
	for _, lit := range []struct {
		word string
		v    any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if bytes.HasPrefix(d.b[d.i:], []byte(lit.word)) {
			d.i += len(lit.word)
			return lit.v, nil
		}
	}
	return nil, d.errorf("unexpected %q", d.b[d.i])
}

// nested reads an object or array and keeps it as compact JSON text.
func (d *scanner) nested() (any, error) {
	dec := json.NewDecoder(bytes.NewReader(d.b[d.i:]))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, err
	}
	d.i += int(dec.InputOffset())
	var buf bytes.Buffer
	json.Compact(&buf, raw)
	return buf.String(), nil
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *scanner) number() bool {
	digits := func() int {
		n := 0
		for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	d.eat('-')
	switch {
	case d.eat('0'):
	case digits() == 0:
		return false
	}
	if d.eat('.') && digits() == 0 {
		return false
	}
	if d.eat('e') || d.eat('E') {
		if !d.eat('+') {
			d.eat('-')
		}
		if digits() == 0 {
			return false
		}
	}
	// A number ends where the object's syntax goes on.
	return d.i == len(d.b) || bytes.IndexByte([]byte(" \t\r\n,}]"), d.b[d.i]) >= 0
}
