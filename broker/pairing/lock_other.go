//go:build !unix

package pairing

import (
	"os"
	"sync"
)

// processLock stands in for flock where there is none: it serializes
// writers inside one process only. Airlock targets unix systems.
var processLock sync.Mutex

func lock(*os.Root, string) (func(), error) {
	processLock.Lock()
	return processLock.Unlock, nil
}
