package link

import "errors"

// ErrFrameDiscarded marks a message that was binary or over its bound: it
// was dropped unread (ReadFrame reads it to its end first, so the
// connection goes on).
var ErrFrameDiscarded = errors.New("link: frame discarded")
