package session

import "time"

// Clock is the time source of sessions: expiry, tombstones, the reaper and
// the handshake timeout all read it, so tests drive hours of session life
// with a fake clock instead of sleeping.
type Clock interface {
	Now() time.Time
	// TimerAt fires once on C at the time at, or at once if at has
	// passed: a deadline rather than a duration, so that one computed
	// from an earlier Now is never pushed later by the time it took to
	// arm it (the reaper's sweep, then its sleep).
	TimerAt(at time.Time) Timer
	// AfterFunc calls f in its own goroutine after d.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a stoppable timer from a Clock.
type Timer interface {
	// C is the channel TimerAt's timer fires on (nil for AfterFunc).
	C() <-chan time.Time
	// Stop prevents the timer from firing; false if it already fired or
	// was stopped.
	Stop() bool
}

// RealClock is the wall clock.
type RealClock struct{}

// Now is time.Now without the monotonic reading, so expiry compares wall
// time: a laptop that slept past expiresAt finds its sessions expired on
// waking (the monotonic clock stops during suspend).
func (RealClock) Now() time.Time { return time.Now().Round(0) }

// TimerAt wraps time.NewTimer, until at by the wall clock.
func (c RealClock) TimerAt(at time.Time) Timer {
	return realTimer{t: time.NewTimer(at.Sub(c.Now()))}
}

// AfterFunc wraps time.AfterFunc.
func (RealClock) AfterFunc(d time.Duration, f func()) Timer {
	return realTimer{t: time.AfterFunc(d, f)}
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }
