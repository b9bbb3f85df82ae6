package localclient

import (
	"errors"
	"fmt"

	"github.com/airlock/airlock/broker/contract"
)

// Sentinel errors of the client.
var (
	// ErrClosed: the socket closed; CloseStatus tells how.
	ErrClosed = errors.New("localclient: connection closed")
	// ErrNoCookie: bootstrap succeeded but set no view cookie.
	ErrNoCookie = errors.New("localclient: bootstrap set no view cookie")
	// ErrUnexpected: the broker sent something other than what the
	// exchange expects (for example no connected after hello).
	ErrUnexpected = errors.New("localclient: unexpected message")
)

// HTTPError is a refused HTTP request: the status and the contract code
// of the JSON error body.
type HTTPError struct {
	Status int
	Code   contract.Code
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("localclient: refused %d %s", e.Status, e.Code)
}

// ProtocolError is a typed error message the broker sent on the socket.
type ProtocolError struct {
	Code      contract.Code
	Detail    string
	RequestID string
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("localclient: broker error %s (%s)", e.Code, e.Detail)
}
