package relay

import "errors"

// Sentinel errors of the relay hub.
var (
	// ErrClosed: the session's hub was closed (expiry or shutdown); no
	// connection can join it any more.
	ErrClosed = errors.New("relay: the session is closed")
	// ErrTooManyViews: the session already has its maximum of views.
	ErrTooManyViews = errors.New("relay: too many views in this session")
	// ErrHostBusy: the host's queue has no room in the share open to
	// views for a new view's viewState; the view is closed
	// contract.CloseTryAgainLater contract.ReasonHostBusy and may try
	// again.
	ErrHostBusy = errors.New("relay: the host is not keeping up")
	// ErrGone: the member was dropped or has left; its relay loop must
	// stop.
	ErrGone = errors.New("relay: the connection is no longer registered")
)
