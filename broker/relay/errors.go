package relay

import (
	"errors"

	"github.com/airlock/airlock/broker/contract"
)

// Sentinel errors of the relay hub.
var (
	// ErrClosed: the session's hub was closed (expiry or shutdown); no
	// connection can join it any more.
	ErrClosed = errors.New("relay: the session is closed")
	// ErrTooManyViews: the session already has its maximum of views.
	ErrTooManyViews = errors.New("relay: too many views in this session")
	// ErrHostBusy: the host's queue has no room in the share open to
	// views for a new view's viewState; the view is closed
	// CodeSlowConsumer ReasonHostBusy and may try again.
	ErrHostBusy = errors.New("relay: the host is not keeping up")
	// ErrGone: the member was dropped or has left; its relay loop must
	// stop.
	ErrGone = errors.New("relay: the connection is no longer registered")
)

// Detail tokens of refusals raised by routing, beside the contract's own.
const (
	DetailSequence          = "sequence"
	DetailNoPendingSnapshot = "no-pending-snapshot"
	DetailNoHost            = "no-host"
	DetailDuplicateRequest  = "duplicate-request"
	DetailNotOwner          = "not-owner"
	DetailKindMismatch      = "kind-mismatch"
	DetailUnknownRequest    = "unknown-request"
	DetailTargetMismatch    = "target-mismatch"
	DetailViewMismatch      = "view-mismatch"
	DetailTooManyRequests   = "too-many-requests"
	DetailHostConnected     = "host-already-connected"
	// DetailBusy refuses a view's frame for the host when the view has
	// its maximum of requests in flight, or when the frame would take the
	// host's queue past the share open to view traffic. The view may try
	// again later; the host is never dropped for view traffic.
	DetailBusy = "busy"
)

// Close reasons the hub gives sockets it closes itself.
const (
	// ReasonSlowConsumer closes (code CodeSlowConsumer) a connection whose
	// outbound queue was full.
	ReasonSlowConsumer = "slow-consumer"
	// CodeSlowConsumer is 1013 Try Again Later: the client may reconnect
	// with its cookie and ask for a snapshot.
	CodeSlowConsumer = contract.CloseTryAgainLater
	// ReasonHostBusy closes (code CodeSlowConsumer) a view refused at
	// join because the host's queue is past the views' share.
	ReasonHostBusy = "host-busy"
)
