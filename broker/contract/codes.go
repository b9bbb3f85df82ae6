package contract

// Code is an error code of the local browser contract. HTTP error bodies
// (PROTOCOL sections 1 and 3) and /local/ws error frames and closes
// (section 4) share the vocabulary, so it is declared here once; the HTTP
// status of a code is HTTP plumbing and lives in httpx.
type Code string

// The codes. The first eight each pair with one close code (see
// Code.CloseCode).
const (
	InvalidCredentials      Code = "INVALID_CREDENTIALS"
	CredentialExpired       Code = "CREDENTIAL_EXPIRED"
	InvalidOrigin           Code = "INVALID_ORIGIN"
	ProtocolVersionMismatch Code = "PROTOCOL_VERSION_MISMATCH"
	SessionMismatch         Code = "SESSION_MISMATCH"
	InvalidMessage          Code = "INVALID_MESSAGE"
	UnknownMessage          Code = "UNKNOWN_MESSAGE"
	HostAlreadyConnected    Code = "HOST_ALREADY_CONNECTED"
	// NotFound and Unavailable are HTTP only (an inert route; a broker
	// that cannot take the request now): no socket is closed with them.
	NotFound    Code = "NOT_FOUND"
	Unavailable Code = "UNAVAILABLE"
)

// CloseCode is a WebSocket close code, as coder/websocket's StatusCode: an
// int of the same range, so converting one hands it to the library.
type CloseCode int

// Close codes a /local/ws socket is closed with. The 44xx codes are the
// contract's own (PROTOCOL section 4), 1:1 with error codes; the others
// are RFC 6455's.
const (
	CloseNormal        CloseCode = 1000
	CloseGoingAway     CloseCode = 1001 // broker shutdown
	CloseTryAgainLater CloseCode = 1013 // slow consumer, too many views, host busy

	CloseInvalidCredentials      CloseCode = 4401
	CloseCredentialExpired       CloseCode = 4402
	CloseInvalidOrigin           CloseCode = 4403
	CloseProtocolVersionMismatch CloseCode = 4404
	CloseSessionMismatch         CloseCode = 4405
	CloseInvalidMessage          CloseCode = 4406
	CloseUnknownMessage          CloseCode = 4407
	CloseHostAlreadyConnected    CloseCode = 4408
)

// closePairs is the one table pairing an error code with its close code;
// Code.CloseCode and CloseCode.Code both read it, so the pairing cannot drift.
var closePairs = [...]struct {
	code  Code
	close CloseCode
}{
	{InvalidCredentials, CloseInvalidCredentials},
	{CredentialExpired, CloseCredentialExpired},
	{InvalidOrigin, CloseInvalidOrigin},
	{ProtocolVersionMismatch, CloseProtocolVersionMismatch},
	{SessionMismatch, CloseSessionMismatch},
	{InvalidMessage, CloseInvalidMessage},
	{UnknownMessage, CloseUnknownMessage},
	{HostAlreadyConnected, CloseHostAlreadyConnected},
}

// CloseCode is the close code paired with c, or 0 for an HTTP-only code.
// A socket refused with c is closed with it, c itself as the reason.
func (c Code) CloseCode() CloseCode {
	for _, p := range closePairs {
		if p.code == c {
			return p.close
		}
	}
	return 0
}

// Code is the error code paired with cc; ok is false for a close code
// that pairs with none (1000, 1001, 1013, or one the contract lacks).
func (cc CloseCode) Code() (c Code, ok bool) {
	for _, p := range closePairs {
		if p.close == cc {
			return p.code, true
		}
	}
	return "", false
}
