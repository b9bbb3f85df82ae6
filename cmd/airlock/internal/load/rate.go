package load

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// RateWindow is how many messages a host sending at a fixed rate may be
// ahead of its slowest view: half the broker's (and the forwarder's)
// 256-frame view queue, so a run that cannot keep up holds the host back
// (and reports fewer messages sent than the rate asked) instead of having
// the broker drop views as slow consumers.
const RateWindow = 128

// MaxRate bounds --rate: past it the schedule's interval is below what a
// timer can tell apart anyway.
const MaxRate = 1_000_000

// errRate refuses a rate the schedule cannot keep.
var errRate = errors.New("load: the rate must be between 0 (as fast as the views keep up) and 1000000 messages/s")

func checkRate(rate int) error {
	if rate < 0 || rate > MaxRate {
		return errRate
	}
	return nil
}

// window is how far a host may run ahead of its slowest view: RateWindow
// with a rate, RelayWindow without.
func window(rate int) int {
	if rate > 0 {
		return RateWindow
	}
	return RelayWindow
}

// due is when the k-th message of a turn begun at start is to be sent at
// rate messages a second: a schedule, not a sleep per message, so time
// lost to the scheduler (Go's timers wake no sooner than the next
// scheduling point, often a millisecond on an idle machine) is made up by
// sending what has fallen due at once, and the mean rate holds.
func due(start time.Time, k int64, rate int) time.Time {
	return start.Add(time.Duration(k * int64(time.Second) / int64(rate)))
}

// sendPaced sends ordered states on the schedule of t.rate messages a
// second, those due before until (or until stop), each stamped when it is
// actually sent (latency is host send to view receive, as without a
// rate). A host more than RateWindow ahead of its slowest view waits for
// it, then goes on with what has fallen due.
func (s *relaySession) sendPaced(ctx context.Context, t *topology, until time.Time, stop <-chan struct{}, measure bool) {
	start := time.Now()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for k := int64(0); s.sendErr == nil; k++ {
		at := due(start, k, t.rate)
		if !at.Before(until) {
			return
		}
		if wait := time.Until(at); wait > 0 {
			timer.Reset(wait)
			select {
			case <-stop:
				return
			case <-timer.C:
			}
		} else {
			select {
			case <-stop:
				return
			default:
			}
		}
		if !s.waitViews(s.seq+1-RateWindow, stop) {
			return
		}
		s.sendNext(ctx, t, measure)
	}
}

// startSenders starts every host's sender for a turn that ends at until:
// on t.rate's schedule, or as fast as its views keep up within
// RelayWindow.
func (t *topology) startSenders(ctx context.Context, senders *sync.WaitGroup, until time.Time, stop <-chan struct{}, measure bool) {
	for _, s := range t.sessions {
		if t.rate > 0 {
			senders.Go(func() { s.sendPaced(ctx, t, until, stop, measure) })
		} else {
			senders.Go(func() { s.send(ctx, t, stop, measure) })
		}
	}
}

// rateWords is the header's words on the rate ("" without one).
func (r *RelayReport) rateWords() string {
	if r.Rate == 0 {
		return ""
	}
	return fmt.Sprintf("each host at %d msg/s, ", r.Rate)
}
