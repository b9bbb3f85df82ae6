package demohost

import "errors"

// ErrClosed is returned by Links.New after Close.
var ErrClosed = errors.New("demo host: closed")
