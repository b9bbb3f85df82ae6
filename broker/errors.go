package broker

import (
	"errors"
	"fmt"
)

// Sentinel errors of the broker.
var (
	// ErrPublicBindNeedsToken refuses a non-loopback listen address when no
	// launch token is set: such a broker would serve anyone who can reach it.
	ErrPublicBindNeedsToken = errors.New("broker: a non-loopback listen address needs a launch token (TENSORVIZ_LOCAL_TOKEN or --token-file)")
	// ErrStandaloneNeedsToken refuses the standalone profile without a
	// launch token: the standalone service is never inert.
	ErrStandaloneNeedsToken = errors.New("broker: the standalone profile needs a launch token (TENSORVIZ_LOCAL_TOKEN or --token-file)")
	// ErrShortToken refuses a launch token under MinTokenChars characters.
	ErrShortToken = fmt.Errorf("broker: the launch token is shorter than %d characters; use at least %[1]d random characters (e.g. openssl rand -base64 32)", MinTokenChars)
)
