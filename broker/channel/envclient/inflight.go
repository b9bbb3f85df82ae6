package envclient

import (
	"sync"

	"github.com/airlock/airlock/executors/wire"
)

// inflight counts the calls an environment is running, refuses new ones
// past its bound or once draining, and tells the drainer when the last one
// is done. A mutex (not a WaitGroup) because admission and draining race.
type inflight struct {
	mu       sync.Mutex
	max      int
	n        int
	draining bool
	idle     chan struct{}
}

// enter admits one call, or names the refusal.
func (f *inflight) enter() wire.Rule {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.draining:
		return wire.ShuttingDown
	case f.n >= f.max:
		return wire.Overloaded
	}
	f.n++
	return ""
}

func (f *inflight) leave() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.n == 0 && f.idle != nil {
		close(f.idle)
		f.idle = nil
	}
}

// drain refuses every later call and returns a channel closed once no
// call is running.
func (f *inflight) drain() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.draining = true
	idle := make(chan struct{})
	if f.n == 0 {
		close(idle)
	} else {
		f.idle = idle
	}
	return idle
}
