package runner

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/greenlight-run/greenlight/runner/campaign"
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
// and the in-place time_us, algbw_gbs, busbw_gbs and wrong, then what
// the header says of the run: ranks, the GPUs it ran on (its "# Rank N"
// lines, else nThread × nGpus), and collective, the test's name where it
// prints one ("# Collective test starting: all_reduce_perf"). A table
// without them is still read; NCCLCollective infers both from a row. The summary's
// average bus bandwidth is a row of its own (avg_busbw_gbs). What is
// wrong with a line is said with its line number: a row with #wrong > 0
// (kept: the bandwidth of a wrong answer), a value that is no number,
// a row cut short, a table that ends without its summary.
type ncclTests struct {
	seen       int // the log's lines seen
	root       bool
	ranks      int    // "#  Rank  N ..." lines of the header
	threadGPUs int    // nThread × nGpus of its first line
	collective string // "all_reduce_perf", where the header says
	inTable    bool
	rows       int
	summary    bool
	problems   []string
}

// ncclCols are a row's columns, root left out where the header has none.
var ncclCols = campaign.NCCLTestsColumns

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
		switch f := strings.Fields(body); {
		case len(f) >= 4 && f[0] == "nThread" && f[2] == "nGpus":
			t, err1 := strconv.Atoi(f[1])
			g, err2 := strconv.Atoi(f[3])
			if err1 == nil && err2 == nil && t > 0 && g > 0 {
				n.threadGPUs, n.ranks = t*g, 0 // a new run's header
			}
		case len(f) >= 2 && f[0] == "Rank" && !n.inTable:
			if _, err := strconv.Atoi(f[1]); err == nil {
				n.ranks++
			}
		case strings.HasPrefix(body, "Collective test starting:"):
			n.collective = strings.TrimSpace(strings.TrimPrefix(body, "Collective test starting:"))
		}
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
	if r := n.gpus(); r > 0 {
		cols, vals = append(cols, "ranks"), append(vals, float64(r))
	}
	if n.collective != "" {
		cols, vals = append(cols, "collective"), append(vals, n.collective)
	}
	n.rows++
	return cols, vals, true
}

// gpus is the GPU count the header says: its rank lines (one a GPU,
// whatever the processes and threads), else nThread × nGpus (one
// process); 0 where it says neither.
func (n *ncclTests) gpus() int {
	if n.ranks > 0 {
		return n.ranks
	}
	return n.threadGPUs
}

// NCCLCollective says what an nccl-tests row measured: the collective
// (all_reduce_perf's "all_reduce") and the GPU count, from the row's own
// ranks and collective columns where the header gave them, else from its
// numbers: an all-reduce sums with no root, moves count × the type's
// size, and its bus bandwidth is algbw × 2(n−1)/n, so n = 2/(2 − busbw ÷
// algbw) (read where both are large enough to carry the ratio: 1 GB/s
// and up). basis says which; "" values where it cannot be told.
func NCCLCollective(row map[string]any) (collective string, gpus int, basis string) {
	num := func(k string) float64 { f, _ := row[k].(float64); return f }
	said, _ := row["collective"].(string)
	collective = strings.TrimSuffix(strings.TrimSuffix(said, "_perf"), "_mpi")
	gpus = int(num("ranks"))
	if collective != "" && gpus > 0 {
		return collective, gpus, "the table's header"
	}
	redop, _ := row["redop"].(string)
	alg, bus := num("oop_algbw_gbs"), num("oop_busbw_gbs")
	size, count := num("size_b"), num("count")
	typeBytes := map[string]float64{"int8": 1, "uint8": 1, "char": 1, "half": 2, "bfloat16": 2, "float": 4, "int32": 4, "uint32": 4, "int": 4, "float32": 4, "double": 8, "int64": 8, "uint64": 8, "float64": 8}[fmt.Sprint(row["type"])]
	// (At 2 GPUs a sendrecv_perf row reads the same, bus = algbw: rare
	// beside an all-reduce; a header's collective line settles it.)
	root, hasRoot := row["root"].(float64)
	if collective == "" && redop == "sum" && (!hasRoot || root < 0) && typeBytes > 0 && count > 0 && size == count*typeBytes && alg >= 1 && bus >= alg*0.99 {
		collective = "all_reduce"
	}
	if gpus == 0 && collective == "all_reduce" && alg >= 1 && bus >= alg*0.99 && bus < 2*alg {
		n := 2 / (2 - bus/alg)
		if r := math.Round(n); r >= 2 && math.Abs(n-r) < 0.15 {
			gpus = int(r)
		}
	}
	switch {
	case collective == "" || gpus == 0:
		return collective, gpus, ""
	case said != "":
		return collective, gpus, "the table's header and its bus ÷ algorithm bandwidth"
	case row["ranks"] != nil:
		return collective, gpus, "the table's header (GPUs) and its numbers (a sum of count × type bytes, no root)"
	}
	return collective, gpus, "the table's numbers (a sum of count × type bytes, no root; bus ÷ algorithm bandwidth)"
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
