package state

import (
	"time"
)

// EventKind says what happened.
type EventKind int

const (
	CampaignStarted EventKind = iota
	PhaseStarted
	StepStarted
	Progress // progress or stage of a running step changed
	ResultRecorded
	SummaryAppended
	StepFinished
	PhaseFinished
	ServiceReady
	ServiceStopped
	GateWaiting
	Paused
	Resumed
	Frozen
	Thawed
	Warning
	CampaignFinished
	Detached // the runner let go; steps keep running
	NoteAdded
)

var kindNames = [...]string{"campaign-started", "phase-started", "step-started", "progress", "result",
	"summary", "step-finished", "phase-finished", "service-ready", "service-stopped", "gate-waiting",
	"paused", "resumed", "frozen", "thawed", "warning", "campaign-finished", "detached", "note"}

func (k EventKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Event is one thing that happened, with the whole campaign's state just
// after it, so a consumer that only draws the latest state needs nothing else.
type Event struct {
	Kind    EventKind
	Time    time.Time
	Phase   string // phase id, when the event concerns one
	Step    int    // step index, when it concerns one
	Message string // a line a person can read
	State   *State
}
