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

// Close codes the broker closes a /local socket with (PROTOCOL section
// 4.4; a page on /local/channel is closed 4402 too). The 44xx codes are
// the contract's own, 1:1 with error codes, the code's name being the
// reason; the others are RFC 6455's, each with a reason below.
const (
	CloseNormal        CloseCode = 1000 // the client's own close
	CloseGoingAway     CloseCode = 1001 // broker shutdown: ReasonGoingAway
	CloseTryAgainLater CloseCode = 1013 // ReasonSlowConsumer, ReasonHostBusy or ReasonTooManyViews; reconnecting may succeed

	CloseInvalidCredentials      CloseCode = 4401 // no cookie opens a live role, or a view key is missing or wrong
	CloseCredentialExpired       CloseCode = 4402 // the session expired: at upgrade, or every socket of it at expiry
	CloseInvalidOrigin           CloseCode = 4403 // Origin is not the launch origin
	CloseProtocolVersionMismatch CloseCode = 4404 // handshake: protocolVersion is not 1
	CloseSessionMismatch         CloseCode = 4405 // handshake: workspaceSessionId is not the socket's
	CloseInvalidMessage          CloseCode = 4406 // handshake: no hello in time, another type first, or a malformed frame
	CloseUnknownMessage          CloseCode = 4407 // handshake: a type outside the contract
	CloseHostAlreadyConnected    CloseCode = 4408 // a second host while one is connected
)

// Close reasons of the RFC 6455 closes the broker makes (a 44xx close
// gives its error code as the reason instead).
const (
	// ReasonGoingAway closes (CloseGoingAway) every socket at shutdown.
	ReasonGoingAway = "going away"
	// ReasonSlowConsumer closes (CloseTryAgainLater) a socket whose
	// outbound queue was full; the client may reconnect with its cookie
	// and ask for a snapshot.
	ReasonSlowConsumer = "slow-consumer"
	// ReasonHostBusy closes (CloseTryAgainLater) a view refused at join
	// because the host's queue is past the views' share.
	ReasonHostBusy = "host-busy"
	// ReasonTooManyViews closes (CloseTryAgainLater) a view past the
	// session's maximum of views.
	ReasonTooManyViews = "too-many-views"
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
