package runner

// What the runner says and what a person notes are facts of the journal:
// said once, journaled first, read back by a runner started again and by
// Replay, so the record rebuilt says them too.

// warn says msg: journaled first (the record rebuilt from the journal
// has it too), then kept for the snapshot and sent.
func (r *Runner) warn(msg string) {
	if r.resuming {
		// Said while the journal is read back (a step that ended while no
		// runner ran claims now): the loop's start journals and sends
		// what resuming said, once.
		r.warnings = append(r.warnings, msg)
		return
	}
	r.journal(record{Kind: recWarning, Reason: msg})
	r.warnings = lastWarnings(append(r.warnings, msg))
	r.emit(Event{Kind: Warning, Message: msg})
}

// lastWarnings keeps the last maxWarnings: the record's and the window's.
func lastWarnings(ws []string) []string {
	if len(ws) > maxWarnings {
		return ws[len(ws)-maxWarnings:]
	}
	return ws
}

const maxWarnings = 50

// notesOf are the person's notes the journal holds, in order.
func notesOf(recs []record) []Note {
	var out []Note
	for _, rec := range recs {
		if rec.Kind == recNote {
			out = append(out, Note{T: rec.T, Text: rec.Reason})
		}
	}
	return out
}

// warningsOf are the warnings the journal holds, the last maxWarnings.
func warningsOf(recs []record) []string {
	var out []string
	for _, rec := range recs {
		if rec.Kind == recWarning {
			out = append(out, rec.Reason)
		}
	}
	return lastWarnings(out)
}
