//go:build unix

package pairing

import (
	"os"
	"syscall"
)

// lock takes an exclusive flock on path (created 0600 if missing) and
// returns its release. Every writer of the pairings file holds it across
// read-modify-write, so concurrent `pair add`s serialize.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
