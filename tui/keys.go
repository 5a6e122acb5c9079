package tui

import "charm.land/bubbles/v2/key"

// keyMap is every key the program answers to.
type keyMap struct {
	Up, Down, Pause, Freeze, Skip, Retry, Greenlight, Tab, PgUp, PgDown, Top, Bottom, Help, Quit key.Binding
	Yes, No, Leave, StopAll, Chart, SkipPoint, Note, Warnings                                    key.Binding
}

func newKeyMap() keyMap {
	return keyMap{
		Up:         key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:       key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		Pause:      key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause/resume queue")),
		Freeze:     key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "freeze/thaw step")),
		Skip:       key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "skip phase")),
		Retry:      key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "retry phase")),
		Greenlight: key.NewBinding(key.WithKeys("g", "enter"), key.WithHelp("g", "greenlight")),
		Tab:        key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "log/report/procs")),
		PgUp:       key.NewBinding(key.WithKeys("pgup"), key.WithHelp("pgup", "scroll up")),
		PgDown:     key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("pgdn", "scroll down")),
		Top:        key.NewBinding(key.WithKeys("home"), key.WithHelp("home", "scroll to top")),
		Bottom:     key.NewBinding(key.WithKeys("end"), key.WithHelp("end", "scroll to end")),
		Help:       key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:       key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Yes:        key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "yes")),
		No:         key.NewBinding(key.WithKeys("n", "esc"), key.WithHelp("n/esc", "no")),
		Leave:      key.NewBinding(key.WithKeys("d", "l"), key.WithHelp("d", "detach: the campaign goes on")),
		StopAll:    key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "stop the campaign")),
		Chart:      key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "chart")),
		SkipPoint:  key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "skip point")),
		Note:       key.NewBinding(key.WithKeys("N"), key.WithHelp("N", "add a note")),
		Warnings:   key.NewBinding(key.WithKeys("W"), key.WithHelp("W", "warnings")),
	}
}

// ShortHelp is the footer's keys.
func (k keyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Up, k.Pause, k.Freeze, k.Skip, k.Retry, k.Greenlight, k.Tab, k.Chart, k.Help, k.Quit}
}

// FullHelp is the ? screen.
func (k keyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Up, k.Down, k.Tab, k.PgUp, k.PgDown, k.Top, k.Bottom}, {k.Pause, k.Freeze, k.Skip, k.SkipPoint, k.Retry, k.Greenlight}, {k.Chart, k.Note, k.Warnings, k.Help, k.Quit}}
}
