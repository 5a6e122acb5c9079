package campaign

import (
	"fmt"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
)

// RooflineSpec puts each row of a phase against its roofline: what a run
// did (FLOPs and bytes, expressions of its axes and result columns), how
// long it took, and the dtype the board's peak is taken for.
//
//	roofline:
//	  flops: 2*m*n*k
//	  bytes: 2*(m*k + k*n + m*n)
//	  seconds: time_ms / 1000      # or 2*m*n*k / (tflops * 1e12)
//	  dtype: bf16
//	  ceiling: calib               # a phase whose best rows are the measured ceiling
type RooflineSpec struct {
	Flops   string `yaml:"flops" json:"flops"`
	Bytes   string `yaml:"bytes" json:"bytes"`
	Seconds string `yaml:"seconds" json:"seconds"`
	Dtype   string `yaml:"dtype" json:"dtype"`
	Ceiling string `yaml:"ceiling" json:"ceiling,omitempty"`
}

// Roofline is RooflineSpec checked: each expression compiled, with the
// names it reads.
type Roofline struct {
	Flops, Bytes, Seconds Expr
	Dtype                 string
	Ceiling               string // a phase id; "" none
}

// Expr is one roofline expression: its text and the names it reads (the
// axes and result columns a row must hold for it).
type Expr struct {
	Text  string
	Names []string
	// Members are the record fields it reads: "shape.m" for shape.m.
	Members []string
}

// RooflineDtypes are the dtypes a roofline may name (gpu.Dtypes: the
// board table has a rate for each; a test holds the two lists equal).
var RooflineDtypes = []string{"bf16", "fp16", "tf32", "fp8", "int8", "fp4", "w4a16"}

// Eval is the expression's value for the names' values: an error names
// what a row lacks or what the expression cannot make a number of.
func (e Expr) Eval(vals map[string]any) (float64, error) {
	for _, n := range e.Names {
		if _, ok := vals[n]; !ok {
			return 0, fmt.Errorf("%s reads %s, which neither the row nor its point's axes have", e.Text, n)
		}
	}
	out, err := expr.Eval(e.Text, vals)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", e.Text, exprLine(err.Error()))
	}
	switch v := out.(type) {
	case float64:
		return v, nil
	case int:
		return float64(v), nil
	case int64:
		return float64(v), nil
	}
	return 0, fmt.Errorf("%s gives %v, not a number", e.Text, out)
}

func exprLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

func (l *loader) roofline(rs *RooflineSpec, ph *Phase, at func(string) string) {
	r := &Roofline{Dtype: strings.ToLower(strings.TrimSpace(rs.Dtype)), Ceiling: strings.TrimSpace(rs.Ceiling)}
	for _, f := range []struct {
		key  string
		text string
		to   *Expr
		hint string
	}{
		{"flops", rs.Flops, &r.Flops, "write flops: 2*m*n*k: the FLOPs one run does, from its axes and columns"},
		{"bytes", rs.Bytes, &r.Bytes, "write bytes: 2*(m*k + k*n + m*n): the bytes one run moves to and from memory"},
		{"seconds", rs.Seconds, &r.Seconds, "write seconds: time_ms / 1000 (or 2*m*n*k / (tflops * 1e12)): how long one run took"},
	} {
		l.expression(at(".roofline"), "roofline", f.key, f.text, f.hint, f.to)
	}
	if rs.Dtype == "" {
		l.addOnKey(at(".roofline"), "roofline", "roofline: needs dtype:", "write dtype: bf16 (w4a16 for Marlin-style kernels: 4-bit weights, the multiply in 16 bits)")
	} else if !slices.Contains(RooflineDtypes, r.Dtype) {
		l.add(at(".roofline.dtype"), fmt.Sprintf("dtype %q: the roofline's peak is taken for one of %s", rs.Dtype, strings.Join(RooflineDtypes, ", ")),
			"write dtype: bf16 (w4a16 for Marlin-style kernels: 4-bit weights, the multiply in 16 bits)")
	}
	ph.Roofline = r
}

// expression checks one expression of a mapping (roofline:, floor:) at
// path, its key the mapping's key: missing, or one expr cannot compile,
// is said; else to is it, with the names it reads.
func (l *loader) expression(path, mapping, key, text, hint string, to *Expr) {
	text = strings.TrimSpace(text)
	if text == "" {
		l.addOnKey(path, mapping, fmt.Sprintf("%s: needs %s:", mapping, key), hint)
		return
	}
	tree, err := parser.Parse(text)
	if err == nil {
		_, err = expr.Compile(text, expr.AllowUndefinedVariables())
	}
	if err != nil {
		l.add(path+"."+key, fmt.Sprintf("%s: %s", key, exprLine(err.Error())), hint)
		return
	}
	*to = Expr{Text: text, Names: namesIn(tree.Node), Members: membersIn(tree.Node)}
}

// membersIn are the record fields an expression reads (shape.m), once
// each.
func membersIn(n ast.Node) []string {
	v := &memberVisitor{}
	ast.Walk(&n, v)
	return v.paths
}

type memberVisitor struct{ paths []string }

func (v *memberVisitor) Visit(n *ast.Node) {
	if m, ok := (*n).(*ast.MemberNode); ok {
		id, ok1 := m.Node.(*ast.IdentifierNode)
		prop, ok2 := m.Property.(*ast.StringNode)
		if ok1 && ok2 && !slices.Contains(v.paths, id.Value+"."+prop.Value) {
			v.paths = append(v.paths, id.Value+"."+prop.Value)
		}
	}
}

// namesIn are the variables an expression reads, in order, once each: a
// function it calls (max, ceil) is none.
func namesIn(n ast.Node) []string {
	v := &identVisitor{}
	ast.Walk(&n, v)
	var out []string
	for _, name := range v.names {
		if !slices.Contains(v.called, name) {
			out = append(out, name)
		}
	}
	return out
}

type identVisitor struct{ names, called []string }

func (v *identVisitor) Visit(n *ast.Node) {
	switch x := (*n).(type) {
	case *ast.IdentifierNode:
		if !slices.Contains(v.names, x.Value) {
			v.names = append(v.names, x.Value)
		}
	case *ast.CallNode:
		if id, ok := x.Callee.(*ast.IdentifierNode); ok {
			v.called = append(v.called, id.Value)
		}
	}
}

// rooflined are the ids of the phases with a roofline.
func rooflined(plan *Plan) []string {
	var out []string
	for _, ph := range plan.Phases {
		if ph.Roofline != nil {
			out = append(out, ph.ID)
		}
	}
	return out
}

// FloorSpec says a decode phase's rows against the floor under a decode
// step: the bytes the model's config.json says a step reads at the row's
// batch, at the board's memory bandwidth.
//
//	floor:
//	  batch: max_concurrency            # sequences in flight, from the row
//	  context: 1024 + 128/2             # tokens a sequence's KV cache holds, on average
//	  tpot: mean_tpot_ms                # the row's time per output token, ms
//	  model: /models/Kimi-K2.5          # default: the model: of the service it uses
//	  gpus: 8                           # GPUs sharing the reads; default: the service's -tp × -pp
type FloorSpec struct {
	Batch   string `yaml:"batch" json:"batch"`
	Context string `yaml:"context" json:"context"`
	TPOT    string `yaml:"tpot" json:"tpot"`
	Model   string `yaml:"model" json:"model,omitempty"`
	GPUs    int    `yaml:"gpus" json:"gpus,omitempty"`
	// Bandwidth names the phase that measured the box's memory bandwidth
	// (a copy or stream test with roofline: bytes and seconds): the floor
	// is a least time, so its bandwidth is the most the box can move,
	// never what a GEMM achieved. Absent: the board's spec.
	Bandwidth string `yaml:"bandwidth" json:"bandwidth,omitempty"`
}

// Floor is FloorSpec checked.
type Floor struct {
	Batch, Context, TPOT Expr
	Model                string // the model's folder, absolute
	GPUs                 int
	Inferred             string // where Model and GPUs came from: "model: and tensor-parallel 8 of serve"
	Unset                string // the service's model: as written, a variable in it unset when the file was read
	Bandwidth            string // the id of the phase whose best point is the box's bandwidth; "" for the board's spec
}

func (l *loader) floorOf(fs *FloorSpec, ph *Phase, dir string, at func(string) string) {
	f := &Floor{GPUs: fs.GPUs, Bandwidth: strings.TrimSpace(fs.Bandwidth)}
	for _, x := range []struct {
		key, text string
		to        *Expr
		hint      string
	}{
		{"batch", fs.Batch, &f.Batch, "write batch: max_concurrency: the sequences in flight, from the row's columns"},
		{"context", fs.Context, &f.Context, "write context: 1024 + 128/2: the tokens a sequence's KV cache holds, on average"},
		{"tpot", fs.TPOT, &f.TPOT, "write tpot: mean_tpot_ms: the row's time per output token, in ms"},
	} {
		l.expression(at(".floor"), "floor", x.key, x.text, x.hint, x.to)
	}
	if fs.GPUs < 0 {
		l.add(at(".floor.gpus"), "gpus must be one or more", "the GPUs that share a step's reads: the tensor-parallel size")
	}
	if fs.Model != "" {
		f.Model = l.abs(dir, fs.Model)
	}
	ph.Floor = f
}

// inferFloors gives each floor: without its model or GPUs those of the
// service its phase uses, and checks the phase its bandwidth: names.
func (l *loader) inferFloors(plan *Plan, ids map[string]int) {
	for _, ph := range plan.Phases {
		f := ph.Floor
		if f == nil {
			continue
		}
		if f.Bandwidth != "" {
			at := fmt.Sprintf("$.phases[%d].floor.bandwidth", ids[ph.ID])
			var roofs []string
			for _, q := range plan.Phases {
				if q.Roofline != nil {
					roofs = append(roofs, q.ID)
				}
			}
			switch bw := plan.Phase(f.Bandwidth); {
			case bw == nil:
				hint := "name the phase that measured the box's memory bandwidth (a copy or stream test with roofline: bytes and seconds)"
				if near := nearest(f.Bandwidth, roofs); near != "" {
					l.addSlip(at, fmt.Sprintf("floor: bandwidth: names no phase: %q", f.Bandwidth), f.Bandwidth, near, "")
					break
				} else if len(roofs) > 0 {
					hint += ": " + strings.Join(roofs, ", ")
				}
				l.add(at, fmt.Sprintf("floor: bandwidth: names no phase: %q", f.Bandwidth), hint)
			case bw.Roofline == nil:
				l.add(at, fmt.Sprintf("floor: bandwidth: %s has no roofline: (bytes: and seconds:), so it measures no bandwidth", f.Bandwidth),
					"give that phase roofline: {bytes: ..., seconds: ...} over a copy or stream test, or leave bandwidth: out to use the board's spec")
			}
		}
		var said []string
		for _, n := range plan.UsedPhases(ph.ID) {
			svc := plan.Phase(n)
			if svc == nil || svc.Service == nil {
				continue
			}
			switch {
			case f.Model == "" && svc.Service.Model != "":
				f.Model = svc.Service.Model
				said = append(said, "model: of "+n)
			case f.Model == "" && svc.Service.ModelUnset != "":
				f.Unset = svc.Service.ModelUnset + " (model: of " + n + ")"
			}
			if f.GPUs == 0 {
				if tp, pp, s := parallelism(svc.Service.Run); s != "" {
					f.GPUs = tp * pp
					said = append(said, s+" of "+n)
				}
			}
		}
		f.Inferred = strings.Join(said, " and ")
		if f.Model == "" && f.Unset == "" && !l.serviceNotNeeded(plan, ph, ids, "floor: needs the model's folder (its config.json)", "or write floor: {model: /models/NAME, ...}", func(s *Service) string {
			switch {
			case s.Model != "":
				return "model: " + s.Model
			case s.ModelUnset != "":
				return "model: " + s.ModelUnset
			}
			return ""
		}) {
			l.add(fmt.Sprintf("$.phases[%d].floor", ids[ph.ID]), "floor: needs the model's folder (its config.json), and no service this phase uses names one",
				"write floor: {model: /models/NAME, ...}, or model: on the service it needs")
		}
		if f.GPUs == 0 {
			f.GPUs = 1
		}
	}
}

// addOnKey says a problem of a mapping as a whole (a key missing from it)
// at the line of the key that holds it ("roofline:"), where a person
// looks, not at the mapping's first line (a block mapping's value starts
// on the line under its key).
func (l *loader) addOnKey(path, key, msg, hint string) {
	line, col := l.keyPos(path, key)
	e := l.mk(line, col, msg, hint)
	for _, o := range l.errs {
		if o.Line == e.Line && o.Col == e.Col && o.Msg == e.Msg {
			return
		}
	}
	l.errs = append(l.errs, e)
}

// keyPos is where the key that holds path's value is written: the
// value's own line for a flow or scalar value, the key's line above it
// for a block one.
func (l *loader) keyPos(path, key string) (int, int) {
	line, col := l.pos(path)
	for k := line; k >= 1 && k >= line-3; k-- {
		t := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l.lines[k-1]), "- "))
		if strings.HasPrefix(t, key+":") {
			return k, strings.Index(l.lines[k-1], key) + 1
		}
	}
	return line, col
}
