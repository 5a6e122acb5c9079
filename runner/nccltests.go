package runner

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ncclTests reads the table nccl-tests print (all_reduce_perf and its
// siblings), line by line:
//
//	#                                                              out-of-place                       in-place
//	#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
//	#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
//	           8             2     float     sum      -1    23.61    0.00    0.00      0    23.33    0.00    0.00      0
//	# Out of bounds values : 0 OK
//	# Avg bus bandwidth    : 45.1234
//
// Each size is a row: size_b, count, type, redop, root (older builds
// print no root column: the header says which), then the out-of-place
// and the in-place time_us, algbw_gbs, busbw_gbs and wrong. The summary's
// average bus bandwidth is a row of its own (avg_busbw_gbs). What is
// wrong with a line is said with its line number: a row with #wrong > 0
// (kept: the bandwidth of a wrong answer), a value that is no number,
// a row cut short, a table that ends without its summary.
type ncclTests struct {
	seen     int // the log's lines seen
	root     bool
	inTable  bool
	rows     int
	summary  bool
	problems []string
}

// ncclCols are a row's columns, root left out where the header has none.
var ncclCols = []string{"size_b", "count", "type", "redop", "root",
	"oop_time_us", "oop_algbw_gbs", "oop_busbw_gbs", "oop_wrong",
	"ip_time_us", "ip_algbw_gbs", "ip_busbw_gbs", "ip_wrong"}

// maxNCCLLine bounds a line the reader looks into: a table's line is
// short; a 10 MB line is no row.
const maxNCCLLine = 4096

// line takes one log line; a row when it is one.
func (n *ncclTests) line(b []byte) (cols []string, vals []any, ok bool) {
	n.seen++
	if len(b) > maxNCCLLine {
		if n.inTable {
			n.say("a line of %d bytes in the table: not a row", len(b))
		}
		return nil, nil, false
	}
	s := strings.TrimSpace(string(b))
	if strings.HasPrefix(s, "#") {
		body := strings.TrimSpace(strings.TrimPrefix(s, "#"))
		switch {
		case strings.HasPrefix(body, "size") && strings.Contains(body, "count") && strings.Contains(body, "busbw"):
			n.inTable, n.root = true, strings.Contains(body, "root")
		case strings.HasPrefix(body, "Avg bus bandwidth"):
			_, v, _ := strings.Cut(body, ":")
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			n.inTable, n.summary = false, true
			if err != nil || math.IsNaN(f) {
				n.say("the average bus bandwidth %q is no number", strings.TrimSpace(v))
				return nil, nil, false
			}
			return []string{"avg_busbw_gbs"}, []any{f}, true
		}
		return nil, nil, false
	}
	if !n.inTable || s == "" {
		return nil, nil, false
	}
	f := strings.Fields(s)
	want := len(ncclCols)
	names := ncclCols
	if !n.root {
		want--
		names = append(append([]string{}, ncclCols[:4]...), ncclCols[5:]...)
	}
	if len(f) != want {
		if _, err := strconv.ParseFloat(f[0], 64); err == nil {
			n.say("a row of %d fields, not %d: cut short?", len(f), want)
		}
		return nil, nil, false
	}
	for i, name := range names {
		var v any = f[i]
		if name != "type" && name != "redop" {
			x, err := strconv.ParseFloat(f[i], 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				if f[i] == "N/A" && strings.HasSuffix(name, "wrong") {
					v = nil // in-place not checked
				} else {
					n.say("%s %q is no number", name, f[i])
					return nil, nil, false
				}
			} else {
				v = x
			}
		}
		cols, vals = append(cols, name), append(vals, v)
	}
	for i, name := range names {
		if strings.HasSuffix(name, "wrong") {
			if x, ok := vals[i].(float64); ok && x > 0 {
				n.say("%s at %s bytes: %.0f wrong values (kept: the bandwidth of a wrong answer)", name, f[0], x)
			}
		}
	}
	n.rows++
	return cols, vals, true
}

func (n *ncclTests) say(format string, a ...any) {
	if len(n.problems) < 20 {
		n.problems = append(n.problems, fmt.Sprintf("line %d: ", n.seen)+fmt.Sprintf(format, a...))
	}
}

// end is what the step's end says of its table: cut (rows and no
// summary), or none at all.
func (n *ncclTests) end() []string {
	out := n.problems
	switch {
	case n.rows > 0 && !n.summary:
		out = append(out, fmt.Sprintf("the table ends at line %d without its \"# Avg bus bandwidth\" line: cut short (the run killed?)", n.seen))
	case n.rows == 0 && !n.summary:
		out = append(out, "no nccl-tests table in its output (a header with size, count and busbw, then rows)")
	}
	return out
}
