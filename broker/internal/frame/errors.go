package link

import (
	"errors"
	"fmt"
)

// ErrFrameDiscarded marks a message that was binary or over its bound: it
// was dropped unread (ReadFrame reads it to its end first, so the
// connection goes on). ErrFrameBinary and ErrFrameTooLarge say which, for
// a reader that answers the two differently (/local/ws does).
var (
	ErrFrameDiscarded = errors.New("link: frame discarded")
	ErrFrameBinary    = fmt.Errorf("%w: binary", ErrFrameDiscarded)
	ErrFrameTooLarge  = fmt.Errorf("%w: over its bound", ErrFrameDiscarded)
)
