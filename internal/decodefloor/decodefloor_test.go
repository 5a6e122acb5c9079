package decodefloor

import (
	"math"
	"os"
	"strings"
	"testing"
)

func read(t *testing.T, name string) Config {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// termsOf is a step's bytes by term.
func termsOf(s Step) map[string]float64 {
	m := map[string]float64{}
	for _, x := range s.Terms {
		m[x.Name] = x.Bytes
	}
	return m
}

// TestDenseLlama: Llama-3-8B at batch 1, 1,000 tokens of context, by
// hand: attention (q, o 4096×4096; k, v 4096×1024) × 32 layers, the MLP
// 3×4096×14336 × 32, lm_head 4096×128256, all bf16; the KV cache 2×8×128
// ×2 bytes a token a layer.
func TestDenseLlama(t *testing.T) {
	s := read(t, "llama-3-8b.json").StepAt(1, 1000)
	want := map[string]float64{
		"attention weights": 2_684_354_560,
		"dense MLP weights": 11_274_289_152,
		"lm_head":           1_050_673_152,
		"KV cache":          131_072_000,
	}
	got := termsOf(s)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %.0f; want %.0f", k, got[k], v)
		}
	}
	if s.Total() != 15_140_388_864 {
		t.Errorf("total %.0f; want 15,140,388,864", s.Total())
	}
	// At 3,350 GB/s (an H100 SXM), 4.52 ms: the floor under its TPOT.
	if f := s.Floor(3350e9); math.Abs(f-0.0045195) > 1e-6 {
		t.Errorf("floor %.7f s; want 0.0045195", f)
	}
}

// TestDeepSeekV3: fp8 throughout; batch 1 touches 8 of 256 experts; the
// activated weights come to DeepSeek's 37 B parameters' bytes.
func TestDeepSeekV3(t *testing.T) {
	c := read(t, "deepseek-v3.json")
	s := c.StepAt(1, 1000)
	want := map[string]float64{
		"attention weights":      11_413_422_080, // (48,758,784 + 20,905,984 + 117,440,512) × 61, 1 byte
		"dense MLP weights":      1_189_085_184,  // 3×7168×18432 × 3 layers
		"routed experts touched": 20_434_649_088, // 8 × 3×7168×2048 × 58
		"shared experts":         2_554_331_136,
		"routers":                106_430_464,
		"lm_head":                926_679_040,
		"KV cache":               70_272_000, // (512+64)×2 × 61 × 1000
	}
	got := termsOf(s)
	for k, v := range want {
		if math.Abs(got[k]-v) > 0.5 {
			t.Errorf("%s = %.0f; want %.0f", k, got[k], v)
		}
	}
	if s.Touched != 8 {
		t.Errorf("batch 1 touches %v experts; want 8", s.Touched)
	}
}

// TestKimiK25: int4 experts (group 32: 0.5625 bytes a weight), the rest
// bf16; at batch 64 the batch touches about 74% of the 384 routed experts
// (the figure).
func TestKimiK25(t *testing.T) {
	c := read(t, "kimi-k2.5.json")
	if b, _ := c.ExpertBytesPerParam(); b != 0.5625 {
		t.Errorf("an expert weight takes %v bytes; want 0.5625 (int4, a bf16 scale per 32)", b)
	}
	if c.DenseBytesPerParam() != 2 {
		t.Errorf("a dense weight takes %v bytes; want 2", c.DenseBytesPerParam())
	}
	s := c.StepAt(64, 4096)
	if f := s.Touched / 384; math.Abs(f-0.7401) > 0.0005 {
		t.Errorf("batch 64 touches %.4f of the experts; want 0.7401", f)
	}
	one := 3.0 * 7168 * 2048
	if got := termsOf(s)["routed experts touched"]; math.Abs(got-one*s.Touched*60*0.5625) > 1 {
		t.Errorf("routed experts %.0f; want touched × one expert × 60 layers × 0.5625", got)
	}
	if got := termsOf(s)["KV cache"]; got != 1152*61*64*4096 {
		t.Errorf("KV cache %.0f; want 1152 × 61 × 64 × 4096", got)
	}
}

// TestNotADecoder: a config without its sizes is said, not guessed.
func TestNotADecoder(t *testing.T) {
	if _, err := Parse([]byte(`{"model_type": "clip"}`)); err == nil {
		t.Error("a config without hidden_size read as a decoder")
	}
}

// TestAllReduceInputs: a step's all-reduces (two a layer and the
// embedding's) and the activations' bytes, from the config: Llama-3-8B
// names bf16; Kimi-K2.5 names no torch_dtype, assumed bf16 and said so; a
// float32 model carries 4 bytes an element.
func TestAllReduceInputs(t *testing.T) {
	if n, how := read(t, "kimi-k2.5.json").AllReducesPerStep(); n != 123 || !strings.Contains(how, "61 layers") {
		t.Errorf("Kimi-K2.5: %d all-reduces a step (%s); want 123", n, how)
	}
	if b, how := read(t, "llama-3-8b.json").ActivationBytes(); b != 2 || how != "torch_dtype bfloat16" {
		t.Errorf("Llama-3-8B: %d bytes (%s)", b, how)
	}
	if b, how := read(t, "kimi-k2.5.json").ActivationBytes(); b != 2 || !strings.Contains(how, "assumed") {
		t.Errorf("Kimi-K2.5: %d bytes (%s); want bf16, said as assumed", b, how)
	}
	c, err := Parse([]byte(`{"hidden_size": 4096, "num_hidden_layers": 2, "torch_dtype": "float32"}`))
	if b, _ := c.ActivationBytes(); err != nil || b != 4 {
		t.Errorf("float32: %d bytes (%v)", b, err)
	}
}

// TestGEMMs: the shapes one GPU computes, by hand. Llama-3-8B at TP 8:
// q, k, v fused (32/8 heads + 2 × 1 KV head) × 128 = 768 by 4096; o
// 4096 by 512; gate and up 2 × 14336 / 8 by 4096; down 4096 by 1792;
// lm_head 128256 / 8 by 4096. Kimi-K2.5 at TP 8 (MLA, one dense layer,
// 60 MoE layers with a shared expert): MLA's down projections replicated,
// its up projections and o split; the routed experts left out, said.
func TestGEMMs(t *testing.T) {
	shapes := func(gs []GEMM) map[string][3]int {
		m := map[string][3]int{}
		for _, g := range gs {
			m[g.Name] = [3]int{g.N, g.K, g.Calls}
		}
		return m
	}
	llama, left := read(t, "llama-3-8b.json").GEMMs(8)
	want := map[string][3]int{"qkv_proj": {768, 4096, 32}, "o_proj": {4096, 512, 32}, "gate_up_proj": {3584, 4096, 32}, "down_proj": {4096, 1792, 32}, "lm_head": {16032, 4096, 1}}
	if got := shapes(llama); len(got) != len(want) {
		t.Errorf("Llama at TP 8: %v; want %v", got, want)
	} else {
		for k, v := range want {
			if got[k] != v {
				t.Errorf("Llama at TP 8, %s: %v; want %v", k, got[k], v)
			}
		}
	}
	if len(left) != 1 || !strings.Contains(left[0], "attention") {
		t.Errorf("Llama's parts left out: %v", left)
	}
	kimi, left := read(t, "kimi-k2.5.json").GEMMs(8)
	want = map[string][3]int{"q_a_proj": {1536, 7168, 61}, "q_b_proj": {64 * 192 / 8, 1536, 61}, "kv_a_proj": {576, 7168, 61}, "kv_b_proj": {64 * 256 / 8, 512, 61},
		"o_proj": {7168, 64 * 128 / 8, 61}, "gate_up_proj": {2 * 18432 / 8, 7168, 1}, "down_proj": {7168, 18432 / 8, 1},
		"shared_experts.gate_up_proj": {2 * 2048 / 8, 7168, 60}, "shared_experts.down_proj": {7168, 2048 / 8, 60}, "lm_head": {163840 / 8, 7168, 1}}
	got := shapes(kimi)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Kimi at TP 8, %s: %v; want %v", k, got[k], v)
		}
	}
	if len(got) != len(want) || len(left) != 2 || !strings.Contains(left[0], "routed experts (60 layers") {
		t.Errorf("Kimi: %d shapes (%v), left %v", len(got), got, left)
	}
}
