package campaign

import (
	"fmt"
	"strings"
)

// FileError is a problem in a campaign file, at a place a person can find.
type FileError struct {
	File   string
	Line   int // 1-based; 0 when the problem is the whole file
	Col    int
	Msg    string // what is wrong
	Hint   string // what to do; may be empty
	Source string // the offending line, when known
	Fix    *Fix   // the edit Hint proposes, when it proposes one
}

// Fix is the one edit a hint proposes: lines Line..Line+N-1 (1-based)
// replaced by With. A hint with a Fix says that edit in words; the
// mutation test applies it and loads the result.
type Fix struct {
	Line, N int
	With    []string
}

// Apply returns lines with the fix made.
func (f *Fix) Apply(lines []string) []string {
	out := append([]string{}, lines[:f.Line-1]...)
	out = append(out, f.With...)
	return append(out, lines[min(f.Line-1+f.N, len(lines)):]...)
}

func (e *FileError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	} else {
		fmt.Fprintf(&b, "%s: %s", e.File, e.Msg)
	}
	if e.Source != "" {
		num := fmt.Sprintf("%d", e.Line)
		fmt.Fprintf(&b, "\n  %s | %s", num, strings.TrimRight(e.Source, "\r"))
		if e.Col > 0 {
			pad := strings.Repeat(" ", len(num)+3+visualCol(e.Source, e.Col))
			fmt.Fprintf(&b, "\n  %s^", pad)
		}
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, "\n  hint: %s", e.Hint)
	}
	return b.String()
}

// visualCol converts a 1-based rune column into a count of cells before it,
// keeping tabs as tabs would be too clever: the caret line uses spaces.
func visualCol(line string, col int) int {
	n := 0
	for i := range []rune(line) {
		if i >= col-1 {
			break
		}
		n++
	}
	return n
}

// FileErrors is every problem found in one file, in file order.
type FileErrors []*FileError

func (es FileErrors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}
