//go:build unix

package datadir

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedByUs reports whether fi belongs to the broker's user.
func ownedByUs(fi fs.FileInfo) bool { return ownerOf(fi) == os.Getuid() }

// ownerOf is fi's owner's uid, or -1 when the platform does not say.
func ownerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
