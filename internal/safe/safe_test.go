package safe

import (
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"tok_s 57.3", "tok_s 57.3"},
		{"a\x00b\x01c", `a\x00b\x01c`},
		{"\x1b[2Jcleared", `\x1b[2Jcleared`},
		{"bad \xff\xfe utf8", "bad \uFFFD\uFFFD utf8"},
		{"two\nlines\tand tab", "two\nlines\tand tab"},
		{"del\x7f", `del\x7f`},
		{"c1 \u009b", `c1 \x9b`},
		{"rtl \u202etxt", `rtl \u202etxt`},
		{"ünïcode ✓", "ünïcode ✓"},
	}
	for _, tt := range tests {
		if got := Text(tt.in, 100); got != tt.want {
			t.Errorf("Text(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
	if got := Line("a\nb\rc", 100); got != `a\nb\rc` {
		t.Errorf("Line = %q", got)
	}
}

func TestTextCutsWithSize(t *testing.T) {
	big := strings.Repeat("é", 5<<20) // 10 MB
	got := Text(big, Value)
	if len(got) > Value+40 {
		t.Fatalf("cut to %d bytes; want about %d", len(got), Value)
	}
	if !strings.HasSuffix(got, "…(10485760 bytes)") {
		t.Errorf("cut value ends %q; want the size", got[len(got)-30:])
	}
	if !utf8.ValidString(got) {
		t.Error("cut in the middle of a rune")
	}
}

func FuzzText(f *testing.F) {
	f.Add("\x1b]0;title\x07", 20)
	f.Add("\xc3", 1)
	f.Fuzz(func(t *testing.T, s string, max int) {
		max = max%500 + 1
		if max < 1 {
			max = -max + 1
		}
		for _, got := range []string{Text(s, max), Line(s, max)} {
			if !utf8.ValidString(got) {
				t.Fatalf("invalid UTF-8 out of %q", s)
			}
			for _, r := range got {
				if needsEscape(r) {
					t.Fatalf("control %U left in %q", r, got)
				}
			}
		}
		if strings.ContainsAny(Line(s, max), "\n\r") {
			t.Fatalf("Line left a line break")
		}
	})
}

// TestShellQuotesOneWord: what Shell quotes reaches a command as one
// argument, as it was, whatever quotes, spaces or $ it holds.
func TestShellQuotesOneWord(t *testing.T) {
	for _, s := range []string{"plain", "two words", "it's", `$HOME "x" \n`, "'", "", "a\nb", "--status=/tmp/my runs/s.json"} {
		out, err := exec.Command("sh", "-c", "printf '%s|' "+Shell(s)+" end").Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := string(out); got != s+"|end|" {
			t.Errorf("Shell(%q) reached the command as %q", s, got)
		}
	}
}

// TestMarkdown: a table's own syntax and HTML that would hide the rest
// of the file are escaped; a "<" that opens no tag is left alone.
func TestMarkdown(t *testing.T) {
	for in, want := range map[string]string{
		"a|b":        `a\|b`,
		"<!-- hide":  "&lt;!-- hide",
		"p99 <= 50":  "p99 <= 50",
		"two\nlines": "two<br>lines",
		`back\slash`: `back\\slash`,
		"  padded  ": "padded",
	} {
		if got := Markdown(in); got != want {
			t.Errorf("Markdown(%q) = %q; want %q", in, got, want)
		}
	}
}
