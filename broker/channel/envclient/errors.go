package envclient

import "errors"

// Sentinel errors of the environment client.
var (
	// ErrReplaced ends Run when the broker closed the connection because
	// another environment authenticated with the same pairing. Reconnecting
	// would evict that one in turn, so the client stops instead.
	ErrReplaced = errors.New("envclient: replaced by another environment using the same pairing")
	// ErrOptions refuses incomplete Options.
	ErrOptions = errors.New("envclient: URL, Bearer, Executor and Catalog are required")
)
