package campaign

import (
	"strings"
	"testing"
)

// TestSweepExpands: a 3x2 grid run twice is 12 units, each a step with
// its values put in and its point in its environment; interleaved goes
// round the grid once per repeat, grouped runs a point's repeats
// together; repeat alone repeats one point.
func TestSweepExpands(t *testing.T) {
	body := `
name: sw
phases:
  - id: gemm
    sweep:
      m: [1, 8, 64]
      shape:
        - {name: gate_up, n: 4096, k: 7168}
        - {name: down, n: 7168, k: 2048}
    repeat: 2
    order: %s
    artifacts: ['out/${shape}/*.csv']
    steps:
      - run: |
          gemm --m ${m} --n ${shape.n} --k ${shape.k} --home ${HOME}
        env: {TAG: "m${m}"}
`
	p := loadCampaign(t, strings.Replace(body, "%s", "interleaved", 1))
	ph := p.Phases[0]
	if ph.Sweep == nil || ph.Sweep.Points != 6 || len(ph.Steps) != 12 {
		t.Fatalf("sweep %+v, %d steps; want 6 points, 12 steps", ph.Sweep, len(ph.Steps))
	}
	s := ph.Steps[3] // repeat 1, point 4: m=8, shape=down
	if !strings.Contains(s.Run, "gemm --m 8 --n 7168 --k 2048 --home ${HOME}") || s.Env["TAG"] != "m8" {
		t.Errorf("step 4 runs %q with TAG %q", s.Run, s.Env["TAG"])
	}
	if s.Env["GREENLIGHT_POINT"] != "m=8,shape=down" || s.Env["GREENLIGHT_REPEAT"] != "1" || s.Env["GREENLIGHT_P_M"] != "8" || s.Env["GREENLIGHT_P_SHAPE"] != "down" {
		t.Errorf("step 4's point environment: %v", s.Env)
	}
	if s.Index != 3 || !strings.Contains(s.Label(), "point 4/6 (m=8,shape=down) · repeat 1/2") {
		t.Errorf("step 4: index %d, label %q", s.Index, s.Label())
	}
	for i, st := range ph.Steps {
		if want := 1 + i/6; st.Unit.Repeat != want || st.Unit.Point != i%6 {
			t.Errorf("interleaved unit %d = point %d repeat %d; want point %d repeat %d", i, st.Unit.Point, st.Unit.Repeat, i%6, want)
		}
	}
	if len(ph.Artifacts) != 2 || !strings.HasSuffix(ph.Artifacts[0], "out/gate_up/*.csv") || !strings.HasSuffix(ph.Artifacts[1], "out/down/*.csv") {
		t.Errorf("artifacts %v", ph.Artifacts)
	}
	g := loadCampaign(t, strings.Replace(body, "%s", "grouped", 1)).Phases[0]
	for i, st := range g.Steps {
		if st.Unit.Point != i/2 || st.Unit.Repeat != 1+i%2 {
			t.Errorf("grouped unit %d = point %d repeat %d", i, st.Unit.Point, st.Unit.Repeat)
		}
	}
	if ph.Hash == g.Hash {
		t.Error("another order is the same work")
	}
	r := loadCampaign(t, "name: r\nphases:\n  - id: a\n    repeat: 3\n    steps:\n      - run: |\n          true\n").Phases[0]
	if len(r.Steps) != 3 || r.Steps[2].Unit.Repeat != 3 || !strings.HasSuffix(r.Steps[2].Label(), "repeat 3/3") {
		t.Errorf("repeat alone: %d steps, last %+v %q", len(r.Steps), r.Steps[2].Unit, r.Steps[2].Label())
	}
}

// TestSweepRefusesBadInput: each mistake is said with its place and a
// hint, and nothing runs.
func TestSweepRefusesBadInput(t *testing.T) {
	head := "name: bad\nenv: {batch: '4'}\nphases:\n  - id: a\n"
	run := "    steps:\n      - run: |\n          echo ${m}\n"
	for _, tt := range []struct{ body, want string }{
		{"    sweep: {m: [1, 2]}\n    steps:\n      - run: |\n          echo ${mm}\n", "${mm} names no axis"},
		{"    sweep:\n      s: [{name: x, n: 1}]\n    steps:\n      - run: |\n          echo ${s.k}\n", "${s.k} names no axis"},
		{"    sweep: {batch: [1, 2]}\n" + run, `axis "batch" has the name of a variable of env:`},
		{"    sweep: {m: []}\n" + run, `axis "m" has no values`},
		{"    sweep: {m: [1, 1]}\n" + run, `axis "m" has 1 twice`},
		{"    sweep: {a: [1,2,3,4,5,6,7,8,9,10], b: [1,2,3,4,5,6,7,8,9,10], c: [1,2,3,4,5,6,7,8,9,10], m: [1,2,3,4,5,6,7,8,9,10,11]}\n" + run, "more than 10000 points"},
		{"    sweep: {m: [1]}\n    repeat: 0\n" + run, "repeat: 0 runs nothing"},
		{"    sweep: {m: [1]}\n    until: failed\n" + run, "until: failed stops at the first point whose expectation fails, but the phase has no expect:"},
		{"    sweep: {m: [1]}\n    order: random\n" + run, `order: "random" is not interleaved or grouped`},
		{"    sweep: {m: [1]}\n    noise: five\n" + run, `noise: "five" is not a percentage`},
		{"    sweep: {m: [a,b]}\n    sweeep: 1\n" + run, `unknown key "sweeep"`},
	} {
		_, err := Parse("c.yaml", "/c/c.yaml", []byte(head+tt.body))
		fes := fileErrors(err)
		if fes == nil {
			t.Errorf("%q loaded: %v", tt.want, err)
			continue
		}
		fe := fes[0]
		if !strings.Contains(err.Error(), tt.want) || fe.Line == 0 {
			t.Errorf("error %v (line %d); want %q with a line", err, fe.Line, tt.want)
		}
	}
}

// TestAxisNameOfARecordValue: ${shape.name} is a record value's name, as
// ${shape} is; a unit's identity is unchanged by it.
func TestAxisNameOfARecordValue(t *testing.T) {
	p, err := Parse("c.yaml", "/c.yaml", []byte(`name: s
phases:
  - id: gemm
    sweep:
      shape: [{name: down, n: 10}, {name: up, n: 20}]
    steps:
      - run: |
          echo ${shape.name} ${shape} ${shape.n}
`))
	if err != nil {
		t.Fatal(err)
	}
	steps := p.Phase("gemm").AllSteps()
	if got := strings.TrimSpace(steps[1].Run); got != "echo up up 20" {
		t.Errorf("step 2 runs %q; want echo up up 20", got)
	}
	if id := p.Phase("gemm").Sweep.Identity(*steps[0].Unit); id != "shape=down,shape.n=10#1" {
		t.Errorf("identity %q changed", id)
	}
}
