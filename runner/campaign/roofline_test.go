package campaign

import (
	"errors"
	"strings"
	"testing"
)

// TestRooflineLoads: the expressions compile, read the names they say,
// and evaluate against a row; bad input is said at its line.
func TestRooflineLoads(t *testing.T) {
	p, err := Parse("c.yaml", "/c.yaml", []byte(`name: r
phases:
  - id: calib
    sweep: {n: [4096]}
    roofline: {flops: 2*n*n*n, bytes: 6*n*n, seconds: time_ms / 1000, dtype: bf16}
    steps:
      - run: |
          true
  - id: gemm
    sweep: {m: [16, 4096], k: [7168]}
    roofline:
      flops: 2*m*n*k
      bytes: 2*(m*k + k*n + m*n)
      seconds: 2*m*n*k / (max(tflops, 1e-9) * 1e12)
      dtype: BF16
      ceiling: calib
    steps:
      - run: |
          true
`))
	if err != nil {
		t.Fatal(err)
	}
	r := p.Phase("gemm").Roofline
	if r == nil || r.Dtype != "bf16" || r.Ceiling != "calib" || strings.Join(r.Bytes.Names, ",") != "m,k,n" {
		t.Fatalf("roofline %+v", r)
	}
	row := map[string]any{"m": 4096.0, "n": 4096.0, "k": 7168.0, "tflops": 600.0}
	if v, err := r.Flops.Eval(row); err != nil || v != 2*4096*4096*7168 {
		t.Errorf("flops = %v, %v", v, err)
	}
	if strings.Join(r.Seconds.Names, ",") != "m,n,k,tflops" {
		t.Errorf("seconds reads %v; want m, n, k, tflops (max is a function)", r.Seconds.Names)
	}
	if _, err := r.Seconds.Eval(map[string]any{"m": 1.0, "n": 1.0, "k": 1.0}); err == nil || !strings.Contains(err.Error(), "tflops, which neither the row nor its point") {
		t.Errorf("a row without tflops: %v; want it said", err)
	}
	for _, c := range []struct{ body, want string }{
		{"roofline: {flops: '2*m*', bytes: m, seconds: s, dtype: bf16}", ":4:"},
		{"roofline: {flops: m, bytes: m, seconds: s, dtype: fp64}", `dtype "fp64"`},
		{"roofline: {flops: m, bytes: m, dtype: bf16}", "roofline: needs seconds:"},
		{"roofline: {flops: m, bytes: m, seconds: s, dtype: bf16, ceiling: calibb}", `ceiling: "calibb" is no phase with a roofline`},
	} {
		_, err := Parse("c.yaml", "/c.yaml", []byte("name: r\nphases:\n  - id: a\n    "+c.body+"\n    steps: [{run: x}]\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.body, err, c.want)
		}
	}
}

// TestExpressionSlipsAtTheirLine: a name one slip from an axis or a
// declared column, in floor:, roofline: or plot:, is refused when the
// file is read, at its line, with the name it likely means; short names
// (m beside an axis n) and names far from any (a column the step's JSON
// brings) are not taken for slips.
func TestExpressionSlipsAtTheirLine(t *testing.T) {
	for _, c := range []struct{ name, body, want, hint string }{
		{"floor batch", `sweep: {concurrency: [1, 16]}
    floor: {batch: concurency, context: 1000, tpot: mean_tpot_ms, model: /m}
    steps:
      - results: {format: vllm-bench}
        run: |
          bench ${concurrency}`, "c.yaml:5:20: batch: concurency reads concurency, which no axis or declared column of this phase has", "did you mean concurrency?"},
		{"plot y", `sweep: {m: [1, 2]}
    metrics: [tflops]
    plot: {x: m, y: [tflop]}
    steps:
      - run: |
          bench ${m}`, "c.yaml:6:11: plot: tflop names a column no axis or declared column of this phase has", "did you mean tflops?"},
		{"roofline field", `sweep:
      shape:
        - {name: a, m: 1, n: 2, k: 3}
    roofline: {flops: 2*shape.m*shape.n*shape.kk, bytes: 1, seconds: 1, dtype: bf16}
    steps:
      - run: |
          bench ${shape.m}`, "reads shape.kk, a field the axis shape does not have", "its fields: name, k, m, n"},
	} {
		_, err := Parse("c.yaml", "/c.yaml", []byte("name: r\nphases:\n  - id: a\n    "+c.body+"\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.hint) {
			t.Errorf("%s: %v; want %q with %q", c.name, err, c.want, c.hint)
		}
	}
	for _, body := range []string{
		`sweep: {n: [1, 2]}
    roofline: {flops: 2*m*n*k, bytes: 2*(m*k + k*n + m*n), seconds: time_ms / 1000, dtype: bf16}
    steps:
      - run: |
          bench ${n}`,
		`sweep: {c: [1, 2]}
    floor: {batch: in_flight_requests, context: 1000, tpot: tpot_ms, model: /m}
    steps:
      - run: |
          bench ${c}`,
	} {
		if _, err := Parse("c.yaml", "/c.yaml", []byte("name: r\nphases:\n  - id: a\n    "+body+"\n")); err != nil {
			t.Errorf("a campaign with no slip refused: %v", err)
		}
	}
}

// TestSlipsCarryTheirEdit: each name one slip from the one meant (an
// expression's, plot:'s, needs:, ceiling:, bandwidth:) comes with the edit
// that renames it, and the file loads with it applied.
func TestSlipsCarryTheirEdit(t *testing.T) {
	for name, body := range map[string]string{
		"floor batch": `  - id: a
    sweep: {concurrency: [1, 16]}
    floor: {batch: concurency, context: 1000, tpot: mean_tpot_ms, model: /m}
    steps:
      - results: {format: vllm-bench}
        run: |
          bench ${concurrency}`,
		"plot y": `  - id: a
    sweep: {m: [1, 2]}
    metrics: [tflops]
    plot: {x: m, y: [tflop]}
    steps:
      - run: |
          bench ${m}`,
		"needs": `  - id: serve
    service:
      run: |
        serve
      ready: {log: up}
  - id: a
    needs: [serv]
    steps:
      - run: |
          bench`,
		"ceiling": `  - id: calib
    roofline: {flops: 1, bytes: 1, seconds: 1, dtype: bf16}
    steps:
      - run: |
          calib
  - id: a
    roofline: {flops: 1, bytes: 1, seconds: 1, dtype: bf16, ceiling: calb}
    steps:
      - run: |
          bench`,
		"bandwidth": `  - id: stream
    roofline: {flops: 1, bytes: 1, seconds: 1, dtype: bf16}
    steps:
      - run: |
          stream
  - id: a
    sweep: {c: [1]}
    floor: {batch: c, context: 1000, tpot: tpot_ms, model: /m, bandwidth: stram}
    steps:
      - run: |
          bench ${c}`,
	} {
		src := "name: r\nphases:\n" + body + "\n"
		_, err := Parse("c.yaml", "/c.yaml", []byte(src))
		var fe *FileError
		if !errors.As(err, &fe) || !strings.Contains(fe.Hint, "did you mean") || fe.Fix == nil {
			t.Errorf("%s: %v; want a did-you-mean with its edit", name, err)
			continue
		}
		fixed := strings.Join(fe.Fix.Apply(strings.Split(src, "\n")), "\n")
		if _, err := Parse("c.yaml", "/c.yaml", []byte(fixed)); err != nil {
			t.Errorf("%s: the edit applied does not load: %v\n%s", name, err, fixed)
		}
	}
}
