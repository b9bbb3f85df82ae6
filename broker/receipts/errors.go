package receipts

import "errors"

// Sentinel errors of the receipt log; each error returned wraps one.
var (
	// ErrUnavailable: a receipt could not be written (the file removed or
	// replaced, the disk full, a write refused). The log retries at the
	// next receipt.
	ErrUnavailable = errors.New("receipts: the receipt log cannot be written")
	// ErrKey: the HMAC key file is unusable (readable by others, the wrong
	// size, a link).
	ErrKey = errors.New("receipts: the receipt key file is unusable")
	// ErrBroken: Verify found a record that does not continue the chain
	// (tampered, missing or reordered).
	ErrBroken = errors.New("receipts: the chain is broken")
	// ErrClosed: the log was closed (the broker stopping); a receipt
	// offered then is neither logged nor counted as a failure.
	ErrClosed = errors.New("receipts: the receipt log is closed")
	// errLockBusy: another process held the log's lock past LockWait
	// (one stopped while it held it, for instance); wrapped in
	// ErrUnavailable.
	errLockBusy = errors.New("another process holds the lock on " + File)
	// ErrSetting: an audit setting has a value outside its set.
	ErrSetting = errors.New("receipts: unknown setting value")
)
