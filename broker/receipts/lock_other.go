//go:build !unix

package receipts

import (
	"os"
	"time"
)

// lockFile takes no lock where flock is missing: one process writes the
// log there.
func lockFile(*os.File, time.Duration) error { return nil }

func unlockFile(*os.File) {}
