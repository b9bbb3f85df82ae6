package session

import "errors"

// Sentinel errors of sessions. Each maps onto one contract code (see
// codeOf); none carries request content.
var (
	ErrBadOrigin       = errors.New("session: launch origin is not an http(s) origin")
	ErrTooManySessions = errors.New("session: the live session limit is reached")
	ErrDraining        = errors.New("session: the broker is draining")
	ErrUnknownSession  = errors.New("session: unknown session")
	ErrOriginMismatch  = errors.New("session: origin is not the launch origin")
	ErrExpired         = errors.New("session: the session has expired")
	ErrBadCredential   = errors.New("session: credential wrong or already used")
	ErrNoRole          = errors.New("session: no cookie names a live session role")
	ErrNoViewKey       = errors.New("session: the view key is missing or wrong")
)
