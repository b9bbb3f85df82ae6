package httpx

import "errors"

// Sentinel errors of reading request bodies.
var (
	ErrBodyTooLarge   = errors.New("httpx: request body over its limit")
	ErrBodyUnreadable = errors.New("httpx: request body could not be read")
)
