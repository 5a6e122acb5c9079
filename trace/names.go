package trace

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Short is a kernel's name as a person reads it in a table: the return
// type, template arguments and parameters cut ("void at::native::
// vectorized_elementwise_kernel<4, ...>(int, ...)" is
// "at::native::vectorized_elementwise_kernel"), a mangled C++ name
// decoded to its qualified name, at most 60 characters. The full name
// stays in the CSV.
func Short(name string) string {
	s := name
	if strings.HasPrefix(s, "_Z") {
		if d := demangleName(s); d != "" {
			s = d
		}
	}
	s = strings.ReplaceAll(s, "(anonymous namespace)::", "")
	// Cut template arguments and parameters: keep the text outside <> and ().
	var b strings.Builder
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '<', '(':
			if depth == 0 && c == '(' && b.Len() > 0 {
				// The parameter list: the name is whole.
				i = len(s)
				continue
			}
			depth++
		case '>', ')':
			if depth > 0 {
				depth--
			}
		default:
			if depth == 0 {
				b.WriteByte(c)
			}
		}
	}
	out := strings.TrimSpace(b.String())
	for _, p := range []string{"void ", "__global__ ", "at::native::", "at::cuda::"} {
		out = strings.TrimPrefix(out, p)
	}
	if out == "" {
		out = name
	}
	h := hint(s)
	if strings.HasPrefix(name, "_Z") {
		h = ""
		if strings.Contains(name, "GroupProblemShape") {
			h = "grouped GEMM"
		} else if strings.Contains(name, "Gemm") {
			h = "GEMM"
		}
	}
	if h != "" && !strings.Contains(out, h) {
		out += "<" + h + ">"
	}
	if len(out) > 60 {
		out = out[:57] + "…"
	}
	return out
}

// demangleName reads the qualified name at the start of an Itanium
// mangled name (_ZN7cutlass13device_kernelI... is cutlass::device_kernel);
// "" when it is not of that simple form.
func demangleName(s string) string {
	s = strings.TrimPrefix(s, "_Z")
	nested := strings.HasPrefix(s, "N")
	if nested {
		s = s[1:]
	}
	var parts []string
	for len(s) > 0 && s[0] >= '0' && s[0] <= '9' {
		j := 0
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(s[:j])
		if err != nil || j+n > len(s) {
			return ""
		}
		parts = append(parts, s[j:j+n])
		s = s[j+n:]
		if !nested {
			break
		}
	}
	return strings.Join(parts, "::")
}

var ident = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
var hintEnd = regexp.MustCompile(`(?i)(functor|ops?|kernel_cuda|kernel|impl|_t)$|functor_`)

// generic are template arguments that say nothing of what a kernel does.
var generic = map[string]bool{"gpu_kernel_impl_nocast": true, "gpu_kernel_impl": true, "BinaryFunctor": true, "AUnaryFunctor": true,
	"BUnaryFunctor": true, "ReduceOp": true, "func_wrapper_t": true, "OffsetCalculator": true, "TrivialOffsetCalculator": true,
	"enable_3x_kernel_for_sm9x": true, "enable_3x_kernel_for_sm90": true, "ComposedLayout": true, "bfloat16_t": true, "half_t": true}

// hint is what tells apart kernels of one template (elementwise_kernel
// with MulFunctor from one with masked_fill_kernel): the first telling
// name among its template arguments.
func hint(s string) string {
	i := strings.IndexByte(s, '<')
	if i < 0 {
		return ""
	}
	for _, id := range ident.FindAllString(s[i:], -1) {
		if hintEnd.MatchString(id) && !generic[id] && len(id) > 3 {
			return id
		}
	}
	return ""
}

// tellApart gives kernels whose short names are alike a short name each
// of their own, never a bare template argument in place of what they
// run: first the telling names of their full names (the functor or op:
// MulFunctor, direct_copy_kernel_cuda) where those differ; else the short
// name kept, with the first template argument in which they differ beside
// it, named by its place where it is a bare number
// (elementwise_kernel<direct_copy_kernel_cuda> · arg 2 = 4); else a
// number. Two kernels never share a short name after it.
func tellApart(ks []Kernel) {
	groups := map[string][]int{}
	for i, k := range ks {
		groups[k.Short] = append(groups[k.Short], i)
	}
	for short, idx := range groups {
		if len(idx) < 2 {
			continue
		}
		base := strings.SplitN(short, "<", 2)[0]
		tells := make([][]string, len(idx))
		for j, i := range idx {
			tells[j] = tellingNames(ks[i].Name)
		}
		if at := firstDiffering(tells); at >= 0 {
			for j, i := range idx {
				if at < len(tells[j]) {
					ks[i].Short = cutShort(fmt.Sprintf("%s<%s>", base, tells[j][at]))
				}
			}
		}
		args := make([][]string, len(idx))
		for j, i := range idx {
			args[j] = templateArgs(ks[i].Name)
		}
		at := firstDiffering(args)
		if at < 0 {
			continue
		}
		// Within the argument they differ in, the first word that differs
		// (BFloat16 against float in BinaryFunctor<…>).
		words := make([][]string, len(idx))
		for j := range idx {
			if at < len(args[j]) {
				words[j] = argWord.FindAllString(args[j][at], -1)
			}
		}
		w := firstDiffering(words)
		for j, i := range idx {
			if ks[i].Short != short || at >= len(args[j]) {
				continue // told apart by what it runs
			}
			arg := strings.TrimSpace(args[j][at])
			switch _, err := strconv.ParseFloat(arg, 64); {
			case err == nil:
				arg = fmt.Sprintf("arg %d = %s", at+1, arg)
			case w >= 0 && w < len(words[j]):
				arg = words[j][w][strings.LastIndex(words[j][w], ":")+1:] // c10::BFloat16 is BFloat16
			default:
				arg = Short(arg)
			}
			ks[i].Short = withSuffix(short, " · "+arg)
		}
	}
	// Whatever still shares a name (the same text up to the cut, or no
	// difference found) is numbered.
	seen := map[string][]int{}
	for i, k := range ks {
		seen[k.Short] = append(seen[k.Short], i)
	}
	for short, idx := range seen {
		if len(idx) < 2 {
			continue
		}
		for j, i := range idx {
			ks[i].Short = fmt.Sprintf("%s #%d", short, j+1)
		}
	}
}

// tellingNames are the names in a kernel's full name that say what it
// runs (functors, ops, kernels, impls, lambdas' enclosing functions), in
// order, the generic ones left out.
func tellingNames(name string) []string {
	var out []string
	for _, id := range ident.FindAllString(name, -1) {
		if hintEnd.MatchString(id) && !generic[id] && len(id) > 3 {
			out = append(out, id)
		}
	}
	return out
}

// firstDiffering is the first place at which the lists differ, -1 when
// they agree everywhere the shortest reaches.
func firstDiffering(lists [][]string) int {
	for p := 0; p < len(lists[0]); p++ {
		for j := 1; j < len(lists); j++ {
			if p >= len(lists[j]) || lists[j][p] != lists[0][p] {
				return p
			}
		}
	}
	for j := 1; j < len(lists); j++ {
		if len(lists[j]) != len(lists[0]) {
			return len(lists[0])
		}
	}
	return -1
}

var argWord = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*|[0-9]+`)

// withSuffix is a short name with what tells it apart after it, the
// name cut to make room, so the part that tells it apart is never cut.
func withSuffix(short, suffix string) string {
	if room := 80 - len(suffix); len(short) > room {
		short = short[:max(room-1, 8)] + "…"
	}
	return short + suffix
}

// cutShort bounds a short name to 60 characters.
func cutShort(s string) string {
	if len(s) > 60 {
		return s[:57] + "…"
	}
	return s
}

// templateArgs are the top-level arguments of a name's first template
// argument list.
func templateArgs(name string) []string {
	i := strings.IndexByte(name, '<')
	if i < 0 {
		return nil
	}
	var out []string
	depth, start := 0, i+1
	for j := i; j < len(name); j++ {
		switch name[j] {
		case '<', '(':
			depth++
		case '>', ')':
			depth--
			if depth == 0 {
				return append(out, name[start:j])
			}
		case ',':
			if depth == 1 {
				out = append(out, name[start:j])
				start = j + 1
			}
		}
	}
	return out
}
