package frame

import (
	"errors"
	"fmt"
)

// ErrDiscarded marks a message that was binary or over its bound: it was
// dropped unread (Read reads it to its end first, so the connection goes
// on). ErrBinary and ErrTooLarge say which, for a reader that answers the
// two differently (/local/ws does).
var (
	ErrDiscarded = errors.New("frame: discarded")
	ErrBinary    = fmt.Errorf("%w: binary", ErrDiscarded)
	ErrTooLarge  = fmt.Errorf("%w: over its bound", ErrDiscarded)
)

// ErrWriteCut is a write refused because the connection's writes were
// cut: an earlier write overran its deadline, or Watchdog.Cut or
// Watchdog.Stop was called.
var ErrWriteCut = errors.New("frame: connection writes cut")
