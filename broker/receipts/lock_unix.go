//go:build unix

package receipts

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f: every writer of the log holds it
// for one append.
func lockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }

func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
