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
var hintEnd = regexp.MustCompile(`(?i)(functor|ops?|kernel_cuda|kernel|impl|_t)$`)

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
// of their own: the first template argument in which their full names
// differ (Marlin<…, 256, …> and Marlin<…, 128, …>).
func tellApart(ks []Kernel) {
	groups := map[string][]int{}
	for i, k := range ks {
		groups[k.Short] = append(groups[k.Short], i)
	}
	for short, idx := range groups {
		if len(idx) < 2 {
			continue
		}
		args := make([][]string, len(idx))
		for j, i := range idx {
			args[j] = templateArgs(ks[i].Name)
		}
		at := -1
		for p := 0; at < 0 && p < len(args[0]); p++ {
			for j := 1; j < len(args); j++ {
				if p >= len(args[j]) || args[j][p] != args[0][p] {
					at = p
					break
				}
			}
		}
		for j, i := range idx {
			if at >= 0 && at < len(args[j]) {
				ks[i].Short = fmt.Sprintf("%s<…%s…>", strings.SplitN(short, "<", 2)[0], strings.TrimSpace(args[j][at]))
			} else {
				ks[i].Short = fmt.Sprintf("%s #%d", short, j+1)
			}
		}
	}
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
