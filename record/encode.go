package record

import (
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendRow appends a row as one JSON object, as encoding/json would
// write it (values' keys sorted), without reflection: a record of
// 400,000 rows is encoded in a fraction of the time, on a runner that
// has one core to give.
func AppendRow(b []byte, r Row) []byte {
	keys := make([]string, 0, len(r.Values))
	for k := range r.Values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	vals := make([]any, len(keys))
	for i, k := range keys {
		vals[i] = r.Values[k]
	}
	return AppendColumns(b, r, keys, vals, nil)
}

// AppendColumns is AppendRow for a row whose values are columns in the
// order they were written (the runner's rows), those skip names left
// out: no map is built for it.
func AppendColumns(b []byte, r Row, cols []string, vals []any, skip map[string]bool) []byte {
	b = append(b, `{"phase":`...)
	b = appendString(b, r.Phase)
	b = append(b, `,"step":`...)
	b = strconv.AppendInt(b, int64(r.Step), 10)
	if r.Point != "" {
		b = append(b, `,"point":`...)
		b = appendString(b, r.Point)
	}
	if r.Repeat != 0 {
		b = append(b, `,"repeat":`...)
		b = strconv.AppendInt(b, int64(r.Repeat), 10)
	}
	b = append(b, `,"time":"`...)
	b = r.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","values":{`...)
	first := true
	for i, k := range cols {
		if skip[k] {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, k)
		b = append(b, ':')
		b = appendValue(b, vals[i])
	}
	b = append(b, '}')
	if len(r.Stamp) > 0 {
		b = append(b, `,"stamp":[`...)
		for i, s := range r.Stamp {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, s)
		}
		b = append(b, ']')
	}
	if g := r.GPU; g != nil {
		b = append(b, `,"gpu":{"readings":`...)
		b = strconv.AppendInt(b, int64(g.Readings), 10)
		for _, f := range []struct {
			name string
			v    float64
		}{{"power_w", g.PowerW}, {"power_gpus", float64(g.PowerGPUs)}, {"energy_wh", g.EnergyWh}, {"sm_mhz", g.SMClockMHz}, {"sm_samples", float64(g.SMSamples)}} {
			if f.v != 0 {
				b = append(b, ',', '"')
				b = append(b, f.name...)
				b = append(b, '"', ':')
				b = appendValue(b, f.v)
			}
			if f.name == "energy_wh" && g.EnergyFrom != "" {
				b = append(b, `,"energy_from":`...)
				b = appendString(b, g.EnergyFrom)
			}
		}
		if !g.ReadFrom.IsZero() {
			b = append(b, `,"read_from":"`...)
			b = g.ReadFrom.UTC().AppendFormat(b, time.RFC3339Nano)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	if len(r.Checks) > 0 {
		b = append(b, `,"checks":[`...)
		for i, c := range r.Checks {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"metric":`...)
			b = appendString(b, c.Metric)
			b = append(b, `,"expect":`...)
			b = appendString(b, c.Expect)
			b = append(b, `,"value":`...)
			b = appendFloat(b, c.Value)
			b = append(b, `,"pass":`...)
			b = strconv.AppendBool(b, c.Pass)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func appendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return append(b, "null"...)
		}
		return appendFloat(b, x)
	case bool:
		return strconv.AppendBool(b, x)
	case string:
		return appendString(b, x)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	}
	return append(b, "null"...)
}

// appendFloat writes f as encoding/json does.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string: quotes, backslashes and control
// bytes escaped, invalid UTF-8 as U+FFFD, U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
