//go:build unix

package receipts

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestLeaseIsLetGoWhenIdle: the lock a log keeps after a receipt is let
// go once no receipt follows, so another writer can take it.
func TestLeaseIsLetGoWhenIdle(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, Options{LockWait: time.Hour})
	appendN(t, l, 1)
	f := lockOnceIdle(t, dir)
	// Held by another writer now: the log waits for it.
	done := make(chan error, 1)
	go func() { done <- l.Append(Record{Kind: KindCall}) }()
	select {
	case err := <-done:
		t.Fatalf("appended under another writer's lock: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestLeaseLetsAnotherWriterIn: a log writing without pause still lets
// another writer on the folder in (the lease is cut at LeaseMax), and the
// chain holds across both.
func TestLeaseLetsAnotherWriterIn(t *testing.T) {
	dir := t.TempDir()
	busy := open(t, dir, Options{})
	other := open(t, dir, Options{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	busyN := 0
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := busy.Append(Record{Kind: KindCall, CallID: "busy"}); err != nil {
				t.Error(err)
				return
			}
			busyN++
		}
	}()
	done := make(chan error, 1)
	go func() {
		for range 20 {
			if err := other.Append(Record{Kind: KindCall, CallID: "other"}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the other writer was not let in")
	}
	close(stop)
	wg.Wait()
	busy.Close()
	other.Close()
	if rep := verifyDir(t, dir); rep.Records != busyN+20 {
		t.Fatalf("report %+v, want %d records", rep, busyN+20)
	}
}

// TestLockWaitIsBounded: a writer that holds the lock and does not let it
// go (a process stopped while it held it) costs one receipt LockWait and
// the next ones nothing: they fail at once, as unavailable, until the
// lock is free again, and the chain then goes on.
func TestLockWaitIsBounded(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir, Options{LockWait: 20 * time.Millisecond})
	appendN(t, l, 1)
	f := lockOnceIdle(t, dir)
	for i := range 3 {
		err := l.Append(Record{Kind: KindCall})
		if !errors.Is(err, ErrUnavailable) || !errors.Is(err, errLockBusy) {
			t.Fatalf("append %d under a lock never let go: %v, want unavailable (lock busy)", i, err)
		}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	// Once the lock is free, the next append takes it, waiting or not.
	deadline := time.Now().Add(10 * time.Second)
	for l.Append(Record{Kind: KindCall}) != nil {
		if time.Now().After(deadline) {
			t.Fatal("appends still fail with the lock free")
		}
		time.Sleep(time.Millisecond)
	}
	l.Close()
	if rep := verifyDir(t, dir); rep.Records != 2 || rep.Last != 2 {
		t.Fatalf("verify after the lock came back: %+v, want 2 records", rep)
	}
}

// lockOnceIdle takes the lock on dir's File as another writer would, once
// the log that wrote last lets its lease go; the file is closed at
// cleanup.
func lockOnceIdle(t *testing.T, dir string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, File))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the idle log still holds the lock")
		}
		time.Sleep(LeaseIdle)
	}
	return f
}
