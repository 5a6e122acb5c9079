package tui

import (
	"image/color"
	"os"
	"strings"

	"charm.land/lipgloss/v2"
)

// styles holds every style by role; no colour literal lives elsewhere.
type styles struct {
	title, dim, bold, selected, ok, warn, bad, running, tab, tabActive, key ink
	barFull, barEmpty                                                       ink
	series                                                                  []ink // a chart's lines, in turn
}

func newStyles(dark bool) styles {
	ld := lipgloss.LightDark(dark)
	c := func(light, darkc string) color.Color { return ld(lipgloss.Color(light), lipgloss.Color(darkc)) }
	return styles{
		title:     inkOf(lipgloss.NewStyle().Bold(true).Foreground(c("#005f87", "#5fd7ff"))),
		dim:       inkOf(lipgloss.NewStyle().Foreground(c("#6c6c6c", "#8a8a8a"))),
		bold:      inkOf(lipgloss.NewStyle().Bold(true)),
		selected:  inkOf(lipgloss.NewStyle().Reverse(true)),
		ok:        inkOf(lipgloss.NewStyle().Foreground(c("#008700", "#5fd75f"))),
		warn:      inkOf(lipgloss.NewStyle().Foreground(c("#af5f00", "#ffaf00"))),
		bad:       inkOf(lipgloss.NewStyle().Foreground(c("#d70000", "#ff5f5f")).Bold(true)),
		running:   inkOf(lipgloss.NewStyle().Foreground(c("#0055d4", "#87afff"))),
		tab:       inkOf(lipgloss.NewStyle().Foreground(c("#6c6c6c", "#8a8a8a"))),
		tabActive: inkOf(lipgloss.NewStyle().Bold(true).Underline(true)),
		key:       inkOf(lipgloss.NewStyle().Bold(true).Foreground(c("#005f87", "#5fd7ff"))),
		barFull:   inkOf(lipgloss.NewStyle().Foreground(c("#0087af", "#5fafff"))),
		barEmpty:  inkOf(lipgloss.NewStyle().Foreground(c("#bcbcbc", "#444444"))),
		series: []ink{
			inkOf(lipgloss.NewStyle().Foreground(c("#0055d4", "#5fafff"))),
			inkOf(lipgloss.NewStyle().Foreground(c("#d75f00", "#ffaf5f"))),
			inkOf(lipgloss.NewStyle().Foreground(c("#008700", "#87d75f"))),
			inkOf(lipgloss.NewStyle().Foreground(c("#af0087", "#ff87d7"))),
			inkOf(lipgloss.NewStyle().Foreground(c("#5f5f00", "#d7d75f"))),
			inkOf(lipgloss.NewStyle().Foreground(c("#008787", "#5fd7d7"))),
			inkOf(lipgloss.NewStyle().Foreground(c("#870000", "#ff5f5f"))),
			inkOf(lipgloss.NewStyle().Foreground(c("#5f00af", "#af87ff"))),
		},
	}
}

// ink is a style of colours and attributes reduced to the escape codes
// around its text. lipgloss's Render measures, splits and pads its text on
// every call, which was a third of a frame's cost for the few cells of a
// bar; these styles have no width, padding or border, so the codes are all
// there is to them.
type ink struct{ pre, post string }

func inkOf(st lipgloss.Style) ink {
	r := st.Render("x")
	i := strings.Index(r, "x")
	return ink{r[:i], r[i+1:]}
}

// Render styles each line of s, as lipgloss does: the screen parses a
// frame line by line, so a style must not run across a newline.
func (k ink) Render(s string) string {
	s = strings.ReplaceAll(s, "\t", "    ")
	if s == "" || k.pre == "" {
		return s
	}
	if !strings.Contains(s, "\n") {
		return k.pre + s + k.post
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = k.pre + l + k.post
		}
	}
	return strings.Join(lines, "\n")
}

// glyphs are the symbols drawn; ASCII when the locale is not UTF-8.
type glyphs struct {
	done, doubtful, failed, running, pending, waiting, skipped, blocked, stopped, ready string
	full, empty, sel, degC                                                              string
	spark                                                                               []string
}

var utf8Glyphs = glyphs{done: "✓", doubtful: "⚠", failed: "✗", running: "▶", pending: "·", waiting: "⏸", skipped: "↷", blocked: "⊘", stopped: "■", ready: "●",
	full: "█", empty: "░", sel: "›", degC: "°C", spark: []string{" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"}}

var asciiGlyphs = glyphs{done: "+", doubtful: "?", failed: "x", running: ">", pending: ".", waiting: "=", skipped: "~", blocked: "!", stopped: "#", ready: "*",
	full: "#", empty: "-", sel: ">", degC: "C", spark: []string{" ", ".", ".", ":", ":", "|", "|", "#", "#"}}

// localeIsUTF8 reads the locale as the C library would: LC_ALL, then
// LC_CTYPE, then LANG.
func localeIsUTF8(getenv func(string) string) bool {
	for _, k := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		if v := getenv(k); v != "" {
			v = strings.ToLower(v)
			return strings.Contains(v, "utf-8") || strings.Contains(v, "utf8")
		}
	}
	return false
}

func pickGlyphs() glyphs {
	if localeIsUTF8(os.Getenv) {
		return utf8Glyphs
	}
	return asciiGlyphs
}

// asciiFallback stands in for the symbols drawn outside the glyph set
// (separators, ellipses, arrows) when the terminal is not UTF-8; any other
// non-ASCII character, from a log or a name, becomes '?'.
var asciiFallback = map[rune]rune{'·': '-', '…': '~', '│': '|', '↑': '^', '↓': 'v', '≥': '>', '±': '~', '°': ' ', '✓': '+', '✗': 'x', '─': '-'}

func toASCII(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 {
			return r
		}
		if a, ok := asciiFallback[r]; ok {
			return a
		}
		return '?'
	}, s)
}
