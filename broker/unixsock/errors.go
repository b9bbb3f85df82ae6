package unixsock

import "errors"

// Errors of Listen; each names what to change.
var (
	// ErrPath refuses a socket path that is relative or too long.
	ErrPath = errors.New("unixsock: bad socket path")
	// ErrFolder refuses a folder that others can enter or that is not the
	// user's.
	ErrFolder = errors.New("unixsock: unsafe folder")
	// ErrInUse refuses a path where a live socket or another file is.
	ErrInUse = errors.New("unixsock: path in use")
	// ErrListen is any other failure to bind.
	ErrListen = errors.New("unixsock: listen")
)

// PathError is a socket path CheckPath refused: Kind is ErrPath or
// ErrFolder, Reason says what to change.
type PathError struct {
	Kind   error
	Reason string
}

func (e *PathError) Error() string { return e.Kind.Error() + ": " + e.Reason }
func (e *PathError) Unwrap() error { return e.Kind }
