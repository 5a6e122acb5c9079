// Package report renders a campaign's record from its plan and its state
// dir alone, the same code live (the runner's Writer, as events arrive) and
// in `greenlight report`: the markdown results file's blocks (through
// report/mdfile, which keeps the person's lines around them), the CSV
// table of each phase, NAME.json (the machine record), the charts and the
// summaries kept beside them.
//
// Promises: a result is in the CSV, fsynced, before the markdown that
// shows it; rows, warnings, conditions, stamps, trace summaries and the
// server's scrapes come from the state dir, so a record rebuilt after any
// restart reads as the live one did (but for the time it was written).
package report
