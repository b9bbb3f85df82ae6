//go:build unix

package pairing

import (
	"os"
	"syscall"

	"github.com/airlock/airlock/config/datadir"
)

// lock takes an exclusive flock on name in root (created 0600 if missing,
// never through a link) and returns its release. Every writer of the
// pairings file holds it across read-modify-write, so concurrent
// `pair add`s serialize.
func lock(root *os.Root, name string) (func(), error) {
	f, err := datadir.OpenOrCreate(root, name)
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
