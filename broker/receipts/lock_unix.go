//go:build unix

package receipts

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// lockFile takes an exclusive flock on f, which every writer of the log
// holds while it appends, waiting at most wait for another process to let
// it go (errLockBusy past that). A blocking flock cannot be given up, so
// it is tried without blocking, with pauses growing to half a lease's idle
// time: a writer cut at LeaseMax leaves the lock free for LeaseIdle, and a
// waiter polling at that pace gets in.
func lockFile(f *os.File, wait time.Duration) error {
	fd := int(f.Fd())
	deadline := time.Now().Add(wait)
	pause := 20 * time.Microsecond
	for {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return err
		case !time.Now().Before(deadline):
			return errLockBusy
		}
		time.Sleep(pause)
		pause = min(2*pause, LeaseIdle/2)
	}
}

func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
