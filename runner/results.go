package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// decodeObject reads one JSON object keeping its keys in order, since the
// order a step writes its columns in is the order a person wants them.
// Numbers become float64; nested values are kept as compact JSON text.
func decodeObject(line []byte) ([]string, []any, error) {
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
