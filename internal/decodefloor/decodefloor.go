// Package decodefloor is the bytes a decode step must read, from a model's
// config.json, term by term: the floor under a decode step's time at a
// memory bandwidth. A decode step is memory-bound: every weight a token
// of the batch touches is read once a step (the dense weights always, the
// routed experts the batch touches, whose expected number grows with the
// batch), and every token in flight reads its KV cache.
package decodefloor

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// Config is what the byte model reads of a Hugging Face config.json
// (a multimodal model's text_config when it has one).
type Config struct {
	Hidden       int `json:"hidden_size"`
	Layers       int `json:"num_hidden_layers"`
	Intermediate int `json:"intermediate_size"` // a dense MLP's
	Vocab        int `json:"vocab_size"`
	Heads        int `json:"num_attention_heads"`
	KVHeads      int `json:"num_key_value_heads"`
	HeadDim      int `json:"head_dim"`
	// MoE (DeepSeek-V3 and Kimi names; Mixtral's num_local_experts and
	// Qwen's num_experts read as routed experts too).
	MoEIntermediate int `json:"moe_intermediate_size"`
	Routed          int `json:"n_routed_experts"`
	LocalExperts    int `json:"num_local_experts"`
	Experts         int `json:"num_experts"`
	Shared          int `json:"n_shared_experts"`
	PerToken        int `json:"num_experts_per_tok"`
	FirstDense      int `json:"first_k_dense_replace"`
	// MLA (DeepSeek-V3, Kimi): the KV cache holds kv_lora_rank +
	// qk_rope_head_dim a token a layer.
	QLoRA     int  `json:"q_lora_rank"`
	KVLoRA    int  `json:"kv_lora_rank"`
	RopeDim   int  `json:"qk_rope_head_dim"`
	NopeDim   int  `json:"qk_nope_head_dim"`
	VHeadDim  int  `json:"v_head_dim"`
	TieEmbeds bool `json:"tie_word_embeddings"`
	// The activations' type: torch_dtype (dtype in newer configs).
	TorchDType string `json:"torch_dtype"`
	DType      string `json:"dtype"`

	Quant *Quant `json:"quantization_config"`
}

// Quant is a config's quantization_config, as far as the bytes a weight
// takes go.
type Quant struct {
	Method    string `json:"quant_method"`
	Bits      int    `json:"bits"`
	GroupSize int    `json:"group_size"`
	// compressed-tensors: config_groups.group_0.weights.num_bits
	ConfigGroups map[string]struct {
		Weights struct {
			NumBits   int `json:"num_bits"`
			GroupSize int `json:"group_size"`
		} `json:"weights"`
	} `json:"config_groups"`
}

// Read reads a model folder's config.json.
func Read(dir string) (Config, error) {
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return Config{}, err
	}
	return Parse(b)
}

// Parse reads a config.json's bytes: a multimodal config's text_config
// when it has one.
func Parse(b []byte) (Config, error) {
	var outer struct {
		Text  json.RawMessage `json:"text_config"`
		Quant *Quant          `json:"quantization_config"`
	}
	if err := json.Unmarshal(b, &outer); err != nil {
		return Config{}, fmt.Errorf("config.json: %v", err)
	}
	var c Config
	src := b
	if len(outer.Text) > 0 {
		src = outer.Text
	}
	if err := json.Unmarshal(src, &c); err != nil {
		return Config{}, fmt.Errorf("config.json: %v", err)
	}
	if c.Quant == nil {
		c.Quant = outer.Quant // a multimodal model quantizes at the top
	}
	if c.TorchDType == "" && c.DType == "" && len(outer.Text) > 0 {
		var top struct {
			TorchDType string `json:"torch_dtype"`
			DType      string `json:"dtype"`
		}
		json.Unmarshal(b, &top)
		c.TorchDType, c.DType = top.TorchDType, top.DType
	}
	if c.Hidden <= 0 || c.Layers <= 0 {
		return Config{}, errors.New("config.json has no hidden_size or num_hidden_layers: not a decoder's config")
	}
	return c, nil
}

func (c Config) routed() int { return max(c.Routed, c.LocalExperts, c.Experts) }

// ExpertBytesPerParam is what one expert weight takes: its quantization's
// bits (with a 16-bit scale per group), else 2 (bf16); fp8 is 1.
func (c Config) ExpertBytesPerParam() (float64, string) {
	q := c.Quant
	if q == nil {
		return 2, "bf16"
	}
	bits, group := q.Bits, q.GroupSize
	for _, g := range q.ConfigGroups {
		if g.Weights.NumBits > 0 {
			bits, group = g.Weights.NumBits, g.Weights.GroupSize
		}
	}
	method := strings.ToLower(q.Method)
	switch {
	case method == "fp8":
		return 1, "fp8"
	case bits > 0 && bits < 16:
		b := float64(bits) / 8
		if group > 0 {
			b += 2.0 / float64(group) // a bf16 scale a group
		}
		return b, fmt.Sprintf("int%d, group %d (%s)", bits, group, q.Method)
	}
	return 2, "bf16"
}

// DenseBytesPerParam is what a dense (attention, embedding, dense MLP)
// weight takes: fp8 where the whole model is (DeepSeek-V3's block-wise
// fp8), else bf16 (int4 recipes quantize the experts and leave these).
func (c Config) DenseBytesPerParam() float64 {
	if c.Quant != nil && strings.ToLower(c.Quant.Method) == "fp8" {
		return 1
	}
	return 2
}

// Term is one part of a decode step's reads.
type Term struct {
	Name  string  `json:"name"`
	Bytes float64 `json:"bytes"`
	How   string  `json:"how"` // the arithmetic, in words
}

// Step is the reads of one decode step of batch sequences at context
// tokens each (the KV cache in bf16), over all GPUs together.
type Step struct {
	Batch, Context int
	Terms          []Term
	Touched        float64 // routed experts a MoE layer's batch touches, expected
}

// Total is the step's bytes.
func (s Step) Total() float64 {
	t := 0.0
	for _, x := range s.Terms {
		t += x.Bytes
	}
	return t
}

// Floor is the step's time at a bandwidth (bytes a second, all GPUs
// together), seconds.
func (s Step) Floor(bandwidth float64) float64 { return s.Total() / bandwidth }

// StepAt is the byte model of one decode step: term by term.
func (c Config) StepAt(batch, context int) Step {
	s := Step{Batch: batch, Context: context}
	h := float64(c.Hidden)
	dense := c.DenseBytesPerParam()
	expert, expertWord := c.ExpertBytesPerParam()
	add := func(name string, params, perParam float64, how string) {
		s.Terms = append(s.Terms, Term{Name: name, Bytes: params * perParam, How: how})
	}
	// Attention weights, every layer.
	var attn float64
	var attnHow string
	if c.KVLoRA > 0 { // MLA
		qk := float64(c.NopeDim + c.RopeDim)
		q := h * float64(c.Heads) * qk
		if c.QLoRA > 0 {
			q = h*float64(c.QLoRA) + float64(c.QLoRA)*float64(c.Heads)*qk
		}
		kv := h*float64(c.KVLoRA+c.RopeDim) + float64(c.KVLoRA)*float64(c.Heads)*float64(c.NopeDim+c.VHeadDim)
		o := float64(c.Heads*c.VHeadDim) * h
		attn = q + kv + o
		attnHow = "MLA: q, kv down and up projections and o"
	} else {
		hd, kvh := c.heads()
		attn = h*float64(c.Heads*hd)*2 + h*float64(kvh*hd)*2 // q, o; k, v
		attnHow = fmt.Sprintf("q and o (%d heads), k and v (%d KV heads) of %d", c.Heads, kvh, hd)
	}
	add("attention weights", attn*float64(c.Layers), dense, fmt.Sprintf("%s, %d layers", attnHow, c.Layers))
	// MLPs: dense layers, then MoE layers.
	routed := c.routed()
	moeLayers := 0
	if routed > 0 {
		moeLayers = c.Layers - c.FirstDense
	}
	denseLayers := c.Layers - moeLayers
	if denseLayers > 0 && c.Intermediate > 0 {
		add("dense MLP weights", 3*h*float64(c.Intermediate)*float64(denseLayers), dense,
			fmt.Sprintf("gate, up and down of %d, %d layers", c.Intermediate, denseLayers))
	}
	if moeLayers > 0 {
		inter := c.MoEIntermediate
		if inter == 0 {
			inter = c.Intermediate
		}
		one := 3 * h * float64(inter) // one expert's gate, up, down
		k := float64(max(c.PerToken, 1))
		e := float64(routed)
		// Each token picks k of e; taken as uniform, the batch touches
		// e × (1 − (1 − k/e)^batch) of them.
		s.Touched = e * (1 - math.Pow(1-k/e, float64(batch)))
		add("routed experts touched", one*s.Touched*float64(moeLayers), expert,
			fmt.Sprintf("%.1f of %d experts (%d a token, batch %d: e·(1−(1−k/e)^batch)) × 3 × %d × %d, %d layers, %s", s.Touched, routed, c.PerToken, batch, c.Hidden, inter, moeLayers, expertWord))
		if c.Shared > 0 {
			add("shared experts", one*float64(c.Shared*moeLayers), expert, fmt.Sprintf("%d a layer, %d layers, %s", c.Shared, moeLayers, expertWord))
		}
		add("routers", h*e*float64(moeLayers), dense, fmt.Sprintf("%d × %d, %d layers", c.Hidden, routed, moeLayers))
	}
	add("lm_head", h*float64(c.Vocab), dense, fmt.Sprintf("%d × %d", c.Hidden, c.Vocab))
	// The KV cache, in bf16: every token in flight reads its context.
	var perToken float64
	var kvHow string
	if c.KVLoRA > 0 {
		perToken = float64(c.KVLoRA+c.RopeDim) * 2
		kvHow = fmt.Sprintf("MLA: %d + %d a token a layer", c.KVLoRA, c.RopeDim)
	} else {
		hd, kvh := c.heads()
		perToken = float64(2*kvh*hd) * 2
		kvHow = fmt.Sprintf("k and v, %d KV heads of %d, a token a layer", kvh, hd)
	}
	s.Terms = append(s.Terms, Term{Name: "KV cache", Bytes: perToken * float64(c.Layers) * float64(batch) * float64(context),
		How: fmt.Sprintf("%s, bf16, %d layers × %d sequences × %d tokens", kvHow, c.Layers, batch, context)})
	return s
}

// heads is a config's head size and KV heads, their defaults filled in:
// hidden ÷ heads, and as many KV heads as heads (no grouped-query
// attention) where the config leaves them out.
func (c Config) heads() (headDim, kvHeads int) {
	headDim, kvHeads = c.HeadDim, c.KVHeads
	if headDim == 0 && c.Heads > 0 {
		headDim = c.Hidden / c.Heads
	}
	if kvHeads == 0 {
		kvHeads = c.Heads
	}
	return headDim, kvHeads
}

// ActivationBytes is the bytes an activation element takes (the hidden
// state an all-reduce carries), from the config's torch_dtype (or
// dtype), and what says so. Unnamed: 2 (bf16), said as assumed.
func (c Config) ActivationBytes() (int, string) {
	t := c.TorchDType
	if t == "" {
		t = c.DType
	}
	switch strings.TrimPrefix(t, "torch.") {
	case "bfloat16", "float16", "half":
		return 2, "torch_dtype " + t
	case "float32", "float":
		return 4, "torch_dtype " + t
	case "":
		return 2, "bf16 assumed: config.json names no torch_dtype"
	}
	return 2, "bf16 assumed: torch_dtype " + t + " is not an activation type"
}

// AllReducesPerStep is how many all-reduces a tensor-parallel decode
// step makes, and how that is counted: vLLM's row-parallel layers reduce
// twice a layer (after attention's output projection, after the MLP's or
// the experts' down projection) and its vocab-parallel embedding once.
func (c Config) AllReducesPerStep() (int, string) {
	return 2*c.Layers + 1, fmt.Sprintf("2 a layer × %d layers (after attention's output projection and the MLP's or experts' down projection) + 1 for the vocab-parallel embedding", c.Layers)
}

// GEMM is one of a decode step's linear layers as one GPU of tensor
// parallelism tp computes it: an M×K activation (M the batch's tokens)
// times its K×N shard of the weight, Calls times a step.
type GEMM struct {
	Name  string
	N, K  int
	Calls int
	How   string // the layer and how it is sharded
}

// GEMMs are a decode step's plain GEMMs on one GPU of tensor parallelism
// tp, as vLLM shards them (column-parallel layers split N, row-parallel
// ones K; MLA's down projections are replicated), and the parts of the
// step that are no plain GEMM and are not counted (the routed experts:
// a fused MoE kernel; attention itself).
func (c Config) GEMMs(tp int) (out []GEMM, left []string) {
	tp = max(tp, 1)
	h := c.Hidden
	add := func(name string, n, k, calls int, how string) {
		if n > 0 && k > 0 && calls > 0 {
			out = append(out, GEMM{Name: name, N: n, K: k, Calls: calls, How: how})
		}
	}
	col := fmt.Sprintf("column-parallel: N ÷ %d", tp)
	row := fmt.Sprintf("row-parallel: K ÷ %d", tp)
	if c.KVLoRA > 0 { // MLA
		qk := c.NopeDim + c.RopeDim
		if c.QLoRA > 0 {
			add("q_a_proj", c.QLoRA, h, c.Layers, "MLA's q down projection, replicated")
			add("q_b_proj", c.Heads*qk/tp, c.QLoRA, c.Layers, "MLA's q up projection, "+col)
		} else {
			add("q_proj", c.Heads*qk/tp, h, c.Layers, col)
		}
		add("kv_a_proj", c.KVLoRA+c.RopeDim, h, c.Layers, "MLA's kv down projection, replicated")
		add("kv_b_proj", c.Heads*(c.NopeDim+c.VHeadDim)/tp, c.KVLoRA, c.Layers, "MLA's kv up projection, "+col)
		add("o_proj", h, c.Heads*c.VHeadDim/tp, c.Layers, row)
	} else {
		hd, kvh := c.heads()
		kvShard := max(kvh/tp, 1) // fewer KV heads than GPUs: each holds one, replicated
		add("qkv_proj", (c.Heads/tp+2*kvShard)*hd, h, c.Layers, fmt.Sprintf("q, k and v fused, %s (KV heads %d a GPU)", col, kvShard))
		add("o_proj", h, c.Heads*hd/tp, c.Layers, row)
	}
	routed := c.routed()
	moeLayers := 0
	if routed > 0 {
		moeLayers = c.Layers - c.FirstDense
	}
	if dense := c.Layers - moeLayers; dense > 0 && c.Intermediate > 0 {
		add("gate_up_proj", 2*c.Intermediate/tp, h, dense, "the dense MLP's gate and up fused, "+col)
		add("down_proj", h, c.Intermediate/tp, dense, "the dense MLP's down, "+row)
	}
	if moeLayers > 0 {
		inter := c.MoEIntermediate
		if inter == 0 {
			inter = c.Intermediate
		}
		if c.Shared > 0 {
			add("shared_experts.gate_up_proj", 2*inter*c.Shared/tp, h, moeLayers, "the shared experts' gate and up fused, "+col)
			add("shared_experts.down_proj", h, inter*c.Shared/tp, moeLayers, "the shared experts' down, "+row)
		}
		left = append(left, fmt.Sprintf("the routed experts (%d layers: a fused MoE kernel, not a plain GEMM)", moeLayers))
	}
	add("lm_head", c.Vocab/tp, h, 1, "the vocabulary, "+col)
	left = append(left, "attention over the KV cache")
	return out, left
}
