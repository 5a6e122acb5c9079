package runner

// The parts of a stepRun, one job each.

import (
	"os"
	"time"
)

// stepProc is a step's process: its group, its supervisor, how it ends.
type stepProc struct {
	pgid        int
	sup         int  // supervisor pid
	pausesClock bool // the supervisor stops its timeout clock on SIGUSR1, starts it on SIGUSR2
	reaped      bool // its supervisor exited: look now
	waitCode    int  // its supervisor's exit code once reaped, -1 if killed
	statusSeen  statKey
	exitedSeen  bool
	stopFor     Status // why we are stopping it: Skipped, Stopped, Done (a service no longer needed), Failed
	stopWhy     string
	pointOnly   bool // stopped to skip its sweep point: the phase goes on
	lastAlive   time.Time
}

// outputRead is how far a step's log, results and summary were read.
type outputRead struct {
	logOff, resOff, sumOff int64
	logRest, resRest       []byte
	resSkipping            bool // in a results line too long to keep
	skipPartial            bool
	buf                    []byte // read buffer, kept: the log is read often
	lastRead               time.Time
	logFile                *os.File
}

// healthCheck is a service's probe and how it has been failing.
type healthCheck struct {
	probe     *probe
	fails     int
	failSince time.Time
	warned    bool
}

// shownMark is what the last Progress event of a step showed, so the next
// is published only when it moved enough.
type shownMark struct {
	at    time.Time
	frac  float64
	stage string
}

// quietWatch waits for a step's artifacts to stop growing.
type quietWatch struct {
	since   time.Time
	size    int64
	waiting bool
	// A guarded capture's flush (capture:): how fast the traces grow.
	at        time.Time // the last look
	rate      float64   // bytes/s, smoothed
	ranks     int       // rank traces written, as last said
	stallSaid bool
}
