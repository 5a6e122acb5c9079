package campaign

// A phase that uses what only a service it does not need gives (a swept
// service's axis, the ranks or the model folder a service's command
// names): what deleting its needs: line leaves, said at the phase.

import (
	"fmt"
	"strconv"
	"strings"
)

// phaseOf is the index, in the file's phases, of the phase a YAML path is
// in; false outside every phase.
func phaseOf(path string) (int, bool) {
	m := phasePath.FindStringSubmatch(path)
	if m == nil {
		return 0, false
	}
	i, err := strconv.Atoi(m[1])
	return i, err == nil
}

// sweptAxis is an axis of a swept service: the service's index in the
// file's phases, and its id.
type sweptAxis struct {
	svc int
	id  string
}

// unneeded says, at the line of the file's phase i, what it uses that only
// the service id (the file's phase svc) gives, which it does not need:
// what deleting its needs: line leaves. The hint's edit puts a needs:
// line back where it loads.
func (l *loader) unneeded(i, svc int, id, msg, also string) {
	at, _ := l.pos(fmt.Sprintf("$.phases[%d].id", svc))
	e := l.errAt(fmt.Sprintf("$.phases[%d]", i), msg, fmt.Sprintf("add needs: [%s] (line %d) to this phase; %s", id, at, also))
	for _, o := range l.errs {
		if o.Line == e.Line && o.Msg == e.Msg {
			return
		}
	}
	if e.Line > 0 && e.Line <= len(l.lines) && !l.probe {
		if m := keyLine.FindStringSubmatch(l.lines[e.Line-1]); m != nil {
			fix := &Fix{Line: e.Line + 1, N: 0, With: []string{strings.Repeat(" ", len(m[1])+len(m[2])) + "needs: [" + id + "]"}}
			if l.loadsWith(fix) {
				e.Fix = fix
				e.Hint = fmt.Sprintf("add needs: [%s] (line %d) under this line; %s", id, at, also)
			}
		}
	}
	l.errs = append(l.errs, e)
}

// serviceNotNeeded says, for phase ph that needs no service at all, the
// first service of the campaign that gives what it lacks (gives: what it
// says of the service, "" when it gives nothing), at the phase's line:
// its needs: line went missing, most likely. False when the phase needs
// a service (which one gives it is not this slip) or none gives it.
func (l *loader) serviceNotNeeded(plan *Plan, ph *Phase, ids map[string]int, lacks, also string, gives func(*Service) string) bool {
	for _, n := range plan.UsedPhases(ph.ID) {
		if u := plan.Phase(n); u != nil && u.Service != nil {
			return false
		}
	}
	for _, svc := range plan.Phases {
		if svc.Service == nil {
			continue
		}
		i, ok := ids[svc.ID]
		if said := gives(svc.Service); said != "" && ok {
			l.unneeded(ids[ph.ID], i, svc.ID, fmt.Sprintf("%s, and this phase needs no service; the service %s says %s", lacks, svc.ID, said), also)
			return true
		}
	}
	return false
}
