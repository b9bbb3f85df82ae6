package broker

import "errors"

// Sentinel errors of the broker.
var (
	// ErrPublicBindNeedsToken refuses a non-loopback listen address when no
	// launch token is set: such a broker would serve anyone who can reach it.
	ErrPublicBindNeedsToken = errors.New("broker: a non-loopback listen address needs a launch token (TENSORVIZ_LOCAL_TOKEN or --token-file)")
)
