package safe

import "strings"

// Markdown makes text safe inside a markdown table cell or list item: the
// table's own syntax escaped, lines joined with <br>, and no "<" that
// could open HTML in the rendered file. Run it on text safe.Text or
// safe.Line has made printable.
func Markdown(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\\", "\\\\")
	s = strings.ReplaceAll(s, "|", "\\|")
	s = noTags(s)
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\n", "<br>")
	s = strings.ReplaceAll(s, "\r", " ")
	return s
}

// noTags keeps step text from opening HTML in the rendered file: "<!--"
// in a value would hide everything after it. A "<" that cannot start a
// tag ("<= 5") is left as it is.
func noTags(s string) string {
	if !strings.Contains(s, "<") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '<' && i+1 < len(s) && isTagStart(s[i+1]) {
			b.WriteString("&lt;")
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isTagStart(c byte) bool {
	return c == '!' || c == '/' || c == '?' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
