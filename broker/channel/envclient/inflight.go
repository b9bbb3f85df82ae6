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
	done     chan struct{} // closed once draining and idle
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
	if f.n == 0 && f.draining {
		close(f.done)
	}
}

// drain refuses every later call and returns a channel closed once no
// call is running. Calling it again returns the same channel.
func (f *inflight) drain() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.draining {
		f.draining = true
		f.done = make(chan struct{})
		if f.n == 0 {
			close(f.done)
		}
	}
	return f.done
}
