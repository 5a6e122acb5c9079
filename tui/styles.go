package tui

import (
	"image/color"
	"os"
	"strings"

	"charm.land/lipgloss/v2"
)

// styles holds every style by role; no colour literal lives elsewhere.
type styles struct {
	title, dim, bold, selected, ok, warn, bad, running, tab, tabActive, key lipgloss.Style
	barFull, barEmpty                                                       lipgloss.Style
}

func newStyles(dark bool) styles {
	ld := lipgloss.LightDark(dark)
	c := func(light, darkc string) color.Color { return ld(lipgloss.Color(light), lipgloss.Color(darkc)) }
	return styles{
		title:     lipgloss.NewStyle().Bold(true).Foreground(c("#005f87", "#5fd7ff")),
		dim:       lipgloss.NewStyle().Foreground(c("#6c6c6c", "#8a8a8a")),
		bold:      lipgloss.NewStyle().Bold(true),
		selected:  lipgloss.NewStyle().Reverse(true),
		ok:        lipgloss.NewStyle().Foreground(c("#008700", "#5fd75f")),
		warn:      lipgloss.NewStyle().Foreground(c("#af5f00", "#ffaf00")),
		bad:       lipgloss.NewStyle().Foreground(c("#d70000", "#ff5f5f")).Bold(true),
		running:   lipgloss.NewStyle().Foreground(c("#0055d4", "#87afff")),
		tab:       lipgloss.NewStyle().Foreground(c("#6c6c6c", "#8a8a8a")),
		tabActive: lipgloss.NewStyle().Bold(true).Underline(true),
		key:       lipgloss.NewStyle().Bold(true).Foreground(c("#005f87", "#5fd7ff")),
		barFull:   lipgloss.NewStyle().Foreground(c("#0087af", "#5fafff")),
		barEmpty:  lipgloss.NewStyle().Foreground(c("#bcbcbc", "#444444")),
	}
}

// glyphs are the symbols drawn; ASCII when the locale is not UTF-8.
type glyphs struct {
	done, failed, running, pending, waiting, skipped, blocked, stopped, ready string
	full, empty, sel, degC                                                    string
	spark                                                                     []string
}

var utf8Glyphs = glyphs{done: "✓", failed: "✗", running: "▶", pending: "·", waiting: "⏸", skipped: "↷", blocked: "⊘", stopped: "■", ready: "●",
	full: "█", empty: "░", sel: "›", degC: "°C", spark: []string{" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"}}

var asciiGlyphs = glyphs{done: "+", failed: "x", running: ">", pending: ".", waiting: "=", skipped: "~", blocked: "!", stopped: "#", ready: "*",
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
