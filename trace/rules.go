package trace

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// Category names. CatMemory takes memcpy and memset activity whatever
// the rules say; CatOther what no rule takes.
const (
	CatGEMM        = "GEMM"
	CatAttention   = "attention"
	CatMoE         = "MoE"
	CatComm        = "communication"
	CatGather      = "gather/scatter/index"
	CatElementwise = "elementwise/cast"
	CatMemory      = "memory"
	CatOther       = "other"
)

// Rule puts the kernels whose names match Pattern (case-insensitive) in
// Name. Rules are tried in order; the first match wins.
type Rule struct {
	Name    string
	Pattern string
	re      *regexp.Regexp
}

// Rules is an ordered list of rules.
type Rules struct {
	list []Rule
	mu   sync.Mutex // memo: ranks are summarised side by side with one Rules
	memo map[string]string
}

// DefaultPatterns are the rules greenlight starts from, in the order they
// are tried: communication and MoE before GEMM, since a grouped GEMM is
// MoE's and an all-reduce may be fused with a GEMM.
var DefaultPatterns = []Rule{
	{Name: CatComm, Pattern: `nccl|all_?reduce|allgather|all_gather|reduce_?scatter|all_?to_?all|cross_device_reduce|custom_?ar|one_?shot|two_?shot|multimem`},
	{Name: CatMoE, Pattern: `moe|topk|top_k|expert|grouped_?(gemm|mm)|groupproblemshape|ptrarray|router|gating|permute|align_block_size`},
	{Name: CatAttention, Pattern: `flash|fmha|sdpa|attention|attn|paged|flashinfer|xformers|mla|softmax`},
	{Name: CatGEMM, Pattern: `gemm|gemv|nvjet|cutlass|cublas|xmma|marlin|machete|matmul|wgmma|_mma|s16816|h16816|splitk|sm\d+_.*(tn|nt|nn|tt)`},
	{Name: CatMemory, Pattern: `memcpy|memset`},
	// Indexing is memory-bound work of its own (an embedding lookup, a
	// KV-cache gather, a scatter of expert outputs), not arithmetic.
	{Name: CatGather, Pattern: `gather|scatter|index`},
	{Name: CatElementwise, Pattern: `elementwise|copy|cast|convert|fill|vectorized|unrolled|act_and_mul|silu|gelu|norm|rotary|rope|catarray|arange|reduce|sort|where|neg|mul|add`},
}

// DefaultRules are DefaultPatterns compiled.
func DefaultRules() *Rules {
	r, err := NewRules(nil)
	if err != nil {
		panic(err) // the defaults compile
	}
	return r
}

// NewRules is the default rules with overrides: an override of a default
// category replaces its pattern in place; a new category is tried before
// the defaults, in the order given. A pattern that does not compile is an
// error naming it.
func NewRules(overrides []Rule) (*Rules, error) {
	list := append([]Rule(nil), DefaultPatterns...)
	var added []Rule
	for _, o := range overrides {
		found := false
		for i := range list {
			if strings.EqualFold(list[i].Name, o.Name) {
				list[i].Pattern, found = o.Pattern, true
			}
		}
		if !found {
			added = append(added, o)
		}
	}
	list = append(added, list...)
	for i := range list {
		re, err := regexp.Compile("(?i)" + list[i].Pattern)
		if err != nil {
			return nil, fmt.Errorf("category %q: %v", list[i].Name, err)
		}
		list[i].re = re
	}
	return &Rules{list: list, memo: map[string]string{}}, nil
}

// Of is the category of a kernel name.
func (r *Rules) Of(name string) string {
	r.mu.Lock()
	c, ok := r.memo[name]
	r.mu.Unlock()
	if ok {
		return c
	}
	c = CatOther
	for _, rule := range r.list {
		if rule.re.MatchString(name) {
			c = rule.Name
			break
		}
	}
	r.mu.Lock()
	r.memo[name] = c
	r.mu.Unlock()
	return c
}

// Names are the categories in the order a table lists them: the rules',
// then memory and other.
func (r *Rules) Names() []string {
	var out []string
	seen := map[string]bool{}
	for _, rule := range r.list {
		if !seen[rule.Name] {
			seen[rule.Name] = true
			out = append(out, rule.Name)
		}
	}
	for _, n := range []string{CatMemory, CatOther} {
		if !seen[n] {
			out = append(out, n)
		}
	}
	return out
}

// List is the rules as they are tried, for showing them.
func (r *Rules) List() []Rule { return r.list }

var rankRe = regexp.MustCompile(`(?i)rank[-_]?(\d+)`)

// RankOf names the rank a trace file is from: "rank 3" from a worker name
// like rank3 or ..._rank_3, else the file's name without its suffixes.
func RankOf(path string) string {
	base := filepath.Base(path)
	if m := rankRe.FindStringSubmatch(base); m != nil {
		return "rank " + m[1]
	}
	for _, suf := range []string{".gz", ".json", ".trace", ".pt"} {
		base = strings.TrimSuffix(base, suf)
	}
	return base
}
