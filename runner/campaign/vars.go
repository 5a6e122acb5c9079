package campaign

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// ${NAME} in the fields that are not shell commands (URLs, paths).

var braced = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expand replaces ${NAME} from the campaign's env, then the environment,
// in the fields that are not shell commands (URLs, paths). An unset name
// is an error: a silent empty string would make a wrong URL or path.
func (l *loader) expand(path, s string, env map[string]string) string {
	return braced.ReplaceAllStringFunc(s, func(m string) string {
		name := m[2 : len(m)-1]
		if v, ok := lookupVar(name, env); ok {
			return v
		}
		if ax, ok := l.sweptAxes[name]; ok {
			if i, in := phaseOf(path); in && i != ax.svc {
				l.unneeded(i, ax.svc, ax.id, fmt.Sprintf("%s is not set: it is an axis of the swept service %s, which this phase does not need", m, ax.id),
					fmt.Sprintf("a phase that needs a swept service runs once per point, its axes set; or set %s under env:", name))
				return ""
			}
		}
		l.add(path, fmt.Sprintf("%s is not set", m), l.unsetHint(name, env))
		return ""
	})
}

// lookupVar is NAME's value from the campaign's env, then the environment.
func lookupVar(name string, env map[string]string) (string, bool) {
	if v, ok := env[name]; ok {
		return v, true
	}
	return os.LookupEnv(name)
}

// expandSet is s with ${NAME} from env, then the environment; ok is
// false when a name is set in neither.
func expandSet(s string, env map[string]string) (string, bool) {
	ok := true
	out := braced.ReplaceAllStringFunc(s, func(m string) string {
		v, set := lookupVar(m[2:len(m)-1], env)
		ok = ok && set
		return v
	})
	return out, ok
}

// slippedVars says each ${NAME} of s that is set nowhere but is one slip
// from a name env: sets (${MODEL_DRI} beside MODEL_DIR): a typo, where an
// unset name alone may be set later, in the environment of the run.
func (l *loader) slippedVars(path, s string, env map[string]string) {
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, m := range braced.FindAllString(s, -1) {
		name := m[2 : len(m)-1]
		if _, set := lookupVar(name, env); set {
			continue
		}
		if near := nearestExact(name, names); near != "" {
			l.add(path, fmt.Sprintf("%s is not set", m), l.unsetHint(name, env))
			continue
		}
		var envNames []string
		for _, kv := range os.Environ() {
			if k, _, ok := strings.Cut(kv, "="); ok {
				envNames = append(envNames, k)
			}
		}
		if near := nearestExact(name, envNames); near != "" && len(near) > 3 {
			l.add(path, fmt.Sprintf("%s is not set", m), fmt.Sprintf("the environment sets %s, one slip from %s: one of the two names is misspelled", near, name))
		}
	}
}

// unsetHint says where a ${NAME} could be set: env: and its line, or a
// name env: sets that is one slip from it.
func (l *loader) unsetHint(name string, env map[string]string) string {
	line, _ := l.pos("$.env")
	if line == 0 || !l.exists("$.env") {
		return "set it in the environment or under env: in the campaign file"
	}
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	if near := nearestExact(name, names); near != "" {
		at, _ := l.pos("$.env." + near)
		return fmt.Sprintf("env: sets %s on line %d, one slip from %s: one of the two names is misspelled", near, at, name)
	}
	return fmt.Sprintf("set it under env: (line %d), or in the environment", line)
}
