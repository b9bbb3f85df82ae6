package testkit

import (
	"testing"
	"time"
)

// patience bounds every wait. It is long on purpose: it only ends a test
// that is already failing, and it keeps the longest bound the copies it
// replaced had chosen (an environment process starting and serving its
// catalog, under -race, on a 2-core machine shared with other suites). A
// variable so the kit's own tests can shorten it.
var patience = 2 * time.Minute

// Eventually polls cond until it holds and fails t, naming what, if it
// never does. It asserts no timing: use it for what a background
// goroutine (a reaper, a watcher, a reconnecting client) makes true at
// some point. Polls start 1 ms apart and back off to 20 ms.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened within %v: %s", patience, what)
			return // a fake testing.TB's Fatalf returns
		}
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// Receive is the next value on ch, and fails t, naming what, if none
// comes within the kit's patience: a test that waits on a channel its
// goroutine fills must not hang its package when the value never comes.
func Receive[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(patience)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("never happened within %v: %s", patience, what)
		var zero T
		return zero // a fake testing.TB's Fatalf returns
	}
}
