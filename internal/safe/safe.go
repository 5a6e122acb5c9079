// Package safe makes untrusted text (what steps print and write: result
// values, summaries, log lines) harmless to put in a file, a terminal or
// a line of plain output: control bytes are shown as escapes, invalid
// UTF-8 is replaced, and long values are cut with their size said.
//
// It imports nothing of ours, so every package may use it: the runner for
// the warnings it writes, report for the results file, tui and the plain
// printer for the screen.
package safe

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits for the places step data goes.
const (
	Value   = 300      // a value in a table cell, a quoted line in a warning
	CSV     = 4 << 10  // a value in the full CSV table
	Summary = 64 << 10 // markdown a step appended to $GREENLIGHT_SUMMARY
)

// Text keeps newlines and tabs, shows every other control character as an
// escape (`\x1b`, `\u202e`), replaces invalid UTF-8 with U+FFFD, and cuts
// the result at about max bytes with "…(N bytes)", N the original size.
func Text(s string, max int) string { return clean(s, max, false) }

// Line is Text for one line: newlines and carriage returns are escaped too.
func Line(s string, max int) string { return clean(s, max, true) }

func clean(s string, max int, oneLine bool) string {
	if max > 0 && len(s) <= max && isPlain(s, oneLine) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if max > 0 && b.Len() >= max {
			b.WriteString("…(" + strconv.Itoa(len(s)) + " bytes)")
			return b.String()
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteRune(utf8.RuneError)
		case r == '\n' && !oneLine, r == '\t':
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case needsEscape(r):
			if r < 0x100 {
				b.WriteString(`\x` + hex2(byte(r)))
			} else {
				b.WriteString(`\u` + strconv.FormatInt(int64(r), 16))
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// isPlain reports whether s needs no change at all: the common case, kept
// free of allocation.
func isPlain(s string, oneLine bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && (c != '\t' && (c != '\n' || oneLine)) || c == 0x7f {
			return false
		}
		if c >= 0x80 {
			if !utf8.ValidString(s[i:]) {
				return false
			}
			for _, r := range s[i:] {
				if needsEscape(r) || oneLine && (r == '\n' || r == '\r') || r < 0x20 && r != '\t' && r != '\n' {
					return false
				}
			}
			return true
		}
	}
	return true
}

// needsEscape: C0 and C1 controls, DEL, and the invisible characters that
// reorder or hide text on a terminal (bidi overrides and isolates, BOM).
func needsEscape(r rune) bool {
	switch {
	case r < 0x20 && r != '\t' && r != '\n':
		return true
	case r == 0x7f || r >= 0x80 && r < 0xa0:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0xfeff, r == 0x200e, r == 0x200f:
		return true
	}
	return false
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&0xf]})
}

// Shell quotes s as one word for a POSIX shell: in single quotes, each
// single quote written as '\”. Whatever s holds reaches the command as
// it is.
func Shell(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
