package campaign

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
)

// go-yaml's errors turned into FileErrors a person can act on.

var quoted = regexp.MustCompile(`"([^"]+)"`)

// fromYAML turns a go-yaml error into a FileError with a hint.
func (l *loader) fromYAML(err error) error {
	var ye yaml.Error
	if !errors.As(err, &ye) || ye.GetToken() == nil || ye.GetToken().Position == nil {
		return &FileError{File: l.name, Msg: err.Error()}
	}
	pos := ye.GetToken().Position
	msg := ye.GetMessage()
	hint := ""
	var unknown *yaml.UnknownFieldError
	var dup *yaml.DuplicateKeyError
	if got, want, ok := typeMismatch(err); ok {
		return l.mismatch(pos.Line, pos.Column, got, want)
	}
	switch {
	case errors.As(err, &unknown):
		if m := quoted.FindStringSubmatch(msg); m != nil {
			msg = fmt.Sprintf("unknown key %q", m[1])
			if near := closestKey(m[1]); near != "" {
				hint = fmt.Sprintf("did you mean %q?", near)
			} else {
				hint = "remove it, or check the keys in the README's campaign file reference"
			}
		}
	case errors.As(err, &dup) || strings.Contains(msg, "already defined"):
		if m := quoted.FindStringSubmatch(msg); m != nil {
			msg = fmt.Sprintf("duplicate key %q", m[1])
			if i := strings.Index(ye.GetMessage(), "defined at ["); i >= 0 {
				msg += " (first at " + strings.TrimSuffix(strings.TrimPrefix(ye.GetMessage()[i:], "defined at ["), "]") + ")"
			}
		}
		hint = "each key may appear once in a mapping; remove one of them"
	default:
		if e := l.repairNear(pos.Line); e != nil {
			return e
		}
		hint = "this is not valid YAML here; check indentation and quoting"
	}
	return l.mk(pos.Line, pos.Column, msg, hint)
}

// plainWithColon is `key: value` where the unquoted value holds ": ", as a
// shell command easily does (curl -H "Content-Type: application/json"). A
// flow mapping or list ({x: a}, [a: b]) holds ": " by right: not this.
var plainWithColon = regexp.MustCompile(`^(\s*(?:-\s+)?)([A-Za-z_][A-Za-z0-9_]*):[ 	]+([^'"|>\s#{\[][^#]*?: .*)$`)

// keyLine is a line that starts a mapping key, after any list dash:
// its indentation, the dash, the key.
var keyLine = regexp.MustCompile(`^( *)(- +)?([A-Za-z_][A-Za-z0-9_]*):(?:\s|$)`)

// asErr is errors.As, named for the switch it sits in.
func asErr[T any](err error, target *T) bool { return errors.As(err, target) }
