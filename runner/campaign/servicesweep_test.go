package campaign

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

const servedGrid = `
name: served
phases:
  - id: fetch
    steps:
      - run: |
          true
  - id: serve
    title: vLLM server
    needs: [fetch]
    sweep:
      seqs: [64, 256]
      tokens: [2048, 8192]
    service:
      run: |
        vllm serve m --max-num-seqs ${seqs} --max-num-batched-tokens ${tokens} -tp 8
      ready: {log: "startup complete at ${seqs}"}
  - id: decode
    needs: [serve]
    sweep: {c: [1, 8]}
    artifacts: ['out/${seqs}/${c}/*.json']
    steps:
      - run: |
          bench --concurrency ${c} --tag s${seqs}-t${tokens}
  - id: analyze
    needs: [decode]
    steps:
      - run: |
          true
`

// TestServiceSweepExpands: a swept service is one service phase per
// point, the first axis changing least, each followed by its own copy of
// the phases that use it; each point's service comes after the previous
// point's phases, a phase that needs a copied one needs every copy, and
// the copies carry their point.
func TestServiceSweepExpands(t *testing.T) {
	p := loadCampaign(t, servedGrid)
	var ids []string
	for _, ph := range p.Phases {
		ids = append(ids, ph.ID)
	}
	want := []string{"fetch", "serve.64.2048", "decode.64.2048", "serve.64.8192", "decode.64.8192",
		"serve.256.2048", "decode.256.2048", "serve.256.8192", "decode.256.8192", "analyze"}
	if !slices.Equal(ids, want) {
		t.Fatalf("phases %v\nwant %v", ids, want)
	}
	s2 := p.Phase("serve.64.8192")
	if !strings.Contains(s2.Service.Run, "--max-num-seqs 64 --max-num-batched-tokens 8192") {
		t.Errorf("serve.64.8192 runs %q", s2.Service.Run)
	}
	if s2.Service.ReadyLog.String() != "startup complete at 64" {
		t.Errorf("serve.64.8192 is ready at %q", s2.Service.ReadyLog)
	}
	if !slices.Equal(s2.After, []string{"serve.64.2048", "decode.64.2048"}) || !slices.Equal(s2.Needs, []string{"fetch"}) {
		t.Errorf("serve.64.8192 after %v, needs %v", s2.After, s2.Needs)
	}
	if len(p.Phase("serve.64.2048").After) != 0 {
		t.Errorf("the first point waits for %v", p.Phase("serve.64.2048").After)
	}
	if s2.Title != "vLLM server · seqs=64,tokens=8192" || s2.Point == nil || s2.Point.Title != "vLLM server" || s2.Point.Index != 2 || s2.Point.Count != 4 {
		t.Errorf("serve.64.8192: title %q, point %+v", s2.Title, s2.Point)
	}
	if p.Phase("serve.64.2048").Service.Key != s2.Service.Key || s2.Hash == p.Phase("serve.64.2048").Hash {
		t.Error("the points' loads should share a pace key and differ in work")
	}
	d := p.Phase("decode.256.2048")
	if !slices.Equal(d.Needs, []string{"serve.256.2048"}) || d.Sweep == nil || len(d.Steps) != 2 {
		t.Fatalf("decode.256.2048 needs %v, %d steps", d.Needs, len(d.Steps))
	}
	if !strings.Contains(d.Steps[1].Run, "bench --concurrency 8 --tag s256-t2048") {
		t.Errorf("decode.256.2048 step 2 runs %q", d.Steps[1].Run)
	}
	if !strings.HasSuffix(d.Artifacts[1], "out/256/8/*.json") {
		t.Errorf("decode.256.2048 artifacts %v", d.Artifacts)
	}
	if pt := d.Point; pt == nil || pt.Service != "serve" || pt.Phase != "decode" || pt.Title != "decode" || pt.Said() != "256,2048" || pt.Key != "seqs=256,tokens=2048" ||
		!slices.Equal(pt.Values, []Setting{{"seqs", "256"}, {"tokens", "2048"}}) {
		t.Errorf("decode.256.2048's point %+v", d.Point)
	}
	cols := d.PointColumns()
	for _, c := range []string{"seqs", "tokens", "c", "repeat"} {
		if !cols[c] {
			t.Errorf("%s is no point column of %v", c, cols)
		}
	}
	if a := p.Phase("analyze"); !slices.Equal(a.Needs, []string{"decode.64.2048", "decode.64.8192", "decode.256.2048", "decode.256.8192"}) {
		t.Errorf("analyze needs %v", a.Needs)
	}
	if c := p.Phase("decode.64.2048"); !p.After("serve.256.8192", c.ID) || p.After(c.ID, "serve.256.8192") {
		t.Error("a later point should come after an earlier point's phases, and not the other way")
	}
	if e := d.Steps[0].Env; e["GREENLIGHT_SERVICE_POINT"] != "seqs=256,tokens=2048" || e["GREENLIGHT_P_SEQS"] != "256" || e["GREENLIGHT_P_TOKENS"] != "2048" || e["GREENLIGHT_POINT"] != "c=1" || e["GREENLIGHT_P_C"] != "1" {
		t.Errorf("decode.256.2048's first step's point environment: %v", e)
	}
	if e := s2.Service.Env; e["GREENLIGHT_POINT"] != "seqs=64,tokens=8192" || e["GREENLIGHT_P_TOKENS"] != "8192" || e["GREENLIGHT_SERVICE_POINT"] != "seqs=64,tokens=8192" {
		t.Errorf("serve.64.8192's point environment: %v", e)
	}
	if p.Uses("decode.64.2048", "serve.64.8192") {
		t.Error("a point's phase uses only its own point's service")
	}
	if err := p.CheckPhaseID("decode"); err == nil || !strings.Contains(err.Error(), "as decode.64.2048, decode.64.8192, decode.256.2048, decode.256.8192: name one of them") {
		t.Errorf("the phase as written, named: %v", err)
	}
}

// TestServiceSweepThroughAProxy: a service on top of the swept one (a
// router in front of vLLM) is copied per point with the phases that use
// it.
func TestServiceSweepThroughAProxy(t *testing.T) {
	p := loadCampaign(t, `
name: proxied
phases:
  - id: serve
    sweep: {tp: [4, 8]}
    service:
      run: |
        vllm serve m -tp ${tp}
      ready: {log: up}
  - id: router
    needs: [serve]
    service:
      run: |
        router
      ready: {log: up}
  - id: bench
    needs: [router]
    capture: {stall: 5m}
    artifacts: [t/*.json]
    steps:
      - run: |
          bench
`)
	var ids []string
	for _, ph := range p.Phases {
		ids = append(ids, ph.ID)
	}
	if want := []string{"serve.4", "router.4", "bench.4", "serve.8", "router.8", "bench.8"}; !slices.Equal(ids, want) {
		t.Fatalf("phases %v; want %v", ids, want)
	}
	if b := p.Phase("bench.8"); !slices.Equal(b.Needs, []string{"router.8"}) || !p.Uses("bench.8", "serve.8") {
		t.Errorf("bench.8 needs %v", b.Needs)
	}
	if s := p.Phase("serve.8"); !slices.Equal(s.After, []string{"serve.4", "router.4", "bench.4"}) {
		t.Errorf("serve.8 after %v", s.After)
	}
	if c := p.Phase("bench.8").Capture; c == nil || c.Ranks != 8 {
		t.Errorf("bench.8's capture %+v; want the ranks of its own point's -tp 8", c)
	}
}

// TestServiceSweepRefusesBadInput: what cannot be a service sweep is
// said at its line, with what to do, once.
func TestServiceSweepRefusesBadInput(t *testing.T) {
	svc := "  - id: serve\n    sweep: {seqs: [64, 256]}\n    service:\n      run: |\n        vllm serve --max-num-seqs ${seqs}\n      ready: {log: up}\n"
	use := "  - id: use\n    needs: [serve]\n    steps:\n      - run: |\n          bench ${seqs}\n"
	for _, tt := range []struct{ body, want string }{
		{strings.Replace(svc, "${seqs}", "${sqes}", 1) + use, "${sqes} names no axis of the sweep"},
		{svc + strings.Replace(use, "${seqs}", "${seqz}", 1), "${seqz} names no axis of the sweep"},
		{strings.Replace(svc, "    service:", "    repeat: 3\n    service:", 1) + use, "repeat: on a service would load the server again"},
		{strings.Replace(svc, "    service:", "    until: failed\n    service:", 1) + use, "until: on a service"},
		{strings.Replace(svc, "    sweep: {seqs: [64, 256]}\n", "    repeat: 2\n", 1) + strings.Replace(use, "${seqs}", "x", 1), "repeat: on a service"},
		{strings.Replace(svc, "    service:", "    plot: {x: seqs, y: tok_s}\n    service:", 1) + use, "a service has none"},
		{strings.Replace(svc, "[64, 256]", "[]", 1) + use, `axis "seqs" has no values`},
		{svc + strings.Replace(use, "    steps:", "    sweep: {seqs: [1, 2]}\n    steps:", 1), `axis "seqs" is also an axis of the service serve`},
		{svc + strings.Replace(svc, "id: serve", "id: serve2", 1) + "  - id: use\n    needs: [serve, serve2]\n    steps:\n      - run: |\n          true\n",
			`phase "use" uses two swept services, serve and serve2`},
		{svc + "  - id: router\n    needs: [serve]\n    sweep: {n: [1, 2]}\n    service:\n      run: |\n        router\n      ready: {log: up}\n",
			`the service "router" uses the swept service "serve" and is swept too`},
		{"  - id: serve.64\n    steps:\n      - run: |\n          true\n" + svc + use, `phase id "serve.64" (serve at seqs=64) is already used`},
		{strings.Replace(svc, "[64, 256]", "[a.b, a_b]", 1) + use, "would both be named serve.a_b"},
		{strings.Replace(svc, "--max-num-seqs ${seqs}", "--max-num-seqs 64", 1) + strings.Replace(use, "${seqs}", "x", 1), `axis "seqs" is said nowhere in the service: each of its points would start the same server`},
		{strings.Replace(svc, "{seqs: [64, 256]}", "{seqs: [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17], t: [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}", 1) + use, "the service's grid has 272 points, each a start of the server: more than 256"},
	} {
		_, err := Parse("c.yaml", "/c/c.yaml", []byte("name: bad\nphases:\n"+tt.body))
		fes := fileErrors(err)
		if fes == nil {
			t.Errorf("%q loaded: %v", tt.want, err)
			continue
		}
		n := 0
		for _, e := range fes {
			if strings.Contains(e.Msg, tt.want) {
				n++
				if e.Line == 0 || e.Hint == "" {
					t.Errorf("%q: line %d, hint %q", tt.want, e.Line, e.Hint)
				}
			}
		}
		if n != 1 {
			t.Errorf("said %d times, want once: %q\n%v", n, tt.want, err)
		}
	}
}

// fileErrors is err's problems, one or many; nil when it is none of ours.
func fileErrors(err error) FileErrors {
	var fe *FileError
	var fes FileErrors
	switch {
	case errors.As(err, &fe):
		return FileErrors{fe}
	case errors.As(err, &fes):
		return fes
	}
	return nil
}
