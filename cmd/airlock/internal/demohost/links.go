package demohost

import (
	"context"
	"sync"
)

// Links hands out view links to the demo, one per request. A view
// credential works once and no route issues another for a session
// (PROTOCOL sections 2 and 3), so each link is a new session with a host
// of its own; past Keep live hosts the oldest is closed, so that holding
// Enter down cannot grow the demo without bound.
type Links struct {
	o    Options
	keep int

	mu     sync.Mutex
	hosts  []*Host
	closed bool
}

// NewLinks returns Links that start hosts with o and keep at most keep of
// them (at least one).
func NewLinks(o Options, keep int) *Links { return &Links{o: o, keep: max(keep, 1)} }

// New mints a session, starts its host and returns its view URL.
func (l *Links) New(ctx context.Context) (string, error) {
	h, err := Start(ctx, l.o)
	if err != nil {
		return "", err
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		h.Close()
		return "", ErrClosed
	}
	l.hosts = append(l.hosts, h)
	var old []*Host
	if n := len(l.hosts) - l.keep; n > 0 {
		old = append(old, l.hosts[:n]...)
		l.hosts = append([]*Host(nil), l.hosts[n:]...)
	}
	l.mu.Unlock()
	for _, o := range old {
		o.Close()
	}
	return h.ViewURL(), nil
}

// Live is how many hosts are running.
func (l *Links) Live() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, h := range l.hosts {
		select {
		case <-h.Done():
		default:
			n++
		}
	}
	return n
}

// Close stops every host; New fails afterwards.
func (l *Links) Close() {
	l.mu.Lock()
	hosts := l.hosts
	l.hosts, l.closed = nil, true
	l.mu.Unlock()
	for _, h := range hosts {
		h.Close()
	}
}
