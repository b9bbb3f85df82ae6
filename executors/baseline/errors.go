package baseline

import "errors"

// Errors of running a module.
var (
	// ErrNoStyle: the module exports neither _start nor the reactor ABI.
	ErrNoStyle = errors.New("the module exports neither _start nor _initialize, airlock_alloc and airlock_call")
	// ErrNotReactor: a reused instance needs a reactor.
	ErrNotReactor = errors.New("only a reactor module can reuse an instance")
	// ErrABI: the reactor's allocation or result was unusable.
	ErrABI = errors.New("the reactor broke the ABI")
	// ErrToolFailed: the reactor answered with an error status (for the
	// operator or, a tool error, for the caller).
	ErrToolFailed = errors.New("the tool failed")
	// ErrNoFetch: the module fetched, which the baseline cannot do.
	ErrNoFetch = errors.New("fetch is not available in the plain-wazero baseline")
)

// errFloorClosed: the HTTP floor was closed while serving.
var errFloorClosed = errors.New("baseline: the HTTP floor is closed")

// errNotEnvelope: what the floor was sent is not a call envelope.
var errNotEnvelope = errors.New("the body is not a call envelope")
