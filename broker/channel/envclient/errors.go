package envclient

import "errors"

// Sentinel errors of the environment client.
var (
	// ErrReplaced ends Run when the broker closed the connection because
	// another environment authenticated with the same pairing. Reconnecting
	// would evict that one in turn, so the client stops instead.
	ErrReplaced = errors.New("envclient: replaced by another environment using the same pairing")
	// ErrBearerRefused ends Run when the broker closed the connection
	// 1008 bearer-refused and the bearer read again is the one it
	// refused: retrying cannot succeed. The broker does not say why (a
	// mistyped bearer, a pairing removed or made again), so neither does
	// the message. See
	// RATIONALE.md, "Why does `airlock env` stop when its bearer is
	// refused, unless the bearer changed?".
	ErrBearerRefused = errors.New("envclient: the broker refused the bearer (1008 bearer-refused)")
	// ErrOptions refuses incomplete Options.
	ErrOptions = errors.New("envclient: URL, Bearer, Executor and Catalog are required")
)
