package link

// A client's outgoing queue: bounded, GPU rounds coalesced, one writer
// goroutine, so a slow client never slows the runner.

import (
	"net"
	"sync"
	"time"
)

// peer is one client's outgoing queue and its writer.
type peer struct {
	conn *net.UnixConn

	mu       sync.Mutex
	queue    [][]byte
	latest   []byte // a pending GPU round or tick, replaced by the next
	ending   bool
	wake     chan struct{}
	gone     chan struct{}
	sentAt   time.Time
	overflow bool
}

func newPeer(c *net.UnixConn) *peer {
	return &peer{conn: c, wake: make(chan struct{}, 1), gone: make(chan struct{}), sentAt: time.Now()}
}

func (p *peer) lastSent() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sentAt
}

func (p *peer) send(line []byte, latestOnly bool) {
	p.mu.Lock()
	switch {
	case p.ending:
	case latestOnly:
		p.latest = line
	case len(p.queue) >= maxQueued:
		p.overflow = true
	default:
		p.queue = append(p.queue, line)
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// finish ends the writer once what is queued is written.
func (p *peer) finish() {
	p.mu.Lock()
	p.ending = true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *peer) write() {
	defer close(p.gone)
	for {
		p.mu.Lock()
		q, latest, ending, overflow := p.queue, p.latest, p.ending, p.overflow
		p.queue, p.latest = nil, nil
		p.mu.Unlock()
		if overflow {
			// Too far behind to be told the truth event by event: it is let
			// go, and a client that attaches again gets a fresh snapshot.
			line, _ := encode(&Msg{Kind: KindBye, Text: "this client fell too far behind the runner's events; attach again"})
			p.conn.SetWriteDeadline(time.Now().Add(time.Second))
			p.conn.Write(line)
			p.conn.Close()
			return
		}
		if latest != nil {
			q = append(q, latest)
		}
		for _, line := range q {
			p.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
			if _, err := p.conn.Write(line); err != nil {
				p.conn.Close()
				return
			}
		}
		if len(q) > 0 {
			p.mu.Lock()
			p.sentAt = time.Now()
			p.mu.Unlock()
		}
		if ending && len(q) == 0 {
			return
		}
		if len(q) == 0 {
			<-p.wake
		}
	}
}
