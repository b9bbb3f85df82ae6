package signing

import "errors"

// Sentinel errors; Verify's errors wrap one of the first three, which the
// plugin catalog maps onto its refusal reasons.
var (
	// ErrMissing: the plugin carries no signature.
	ErrMissing = errors.New("signature missing")
	// ErrInvalid: the signature is malformed, or no key the policy holds
	// signed this plugin's payload with it.
	ErrInvalid = errors.New("signature invalid")
	// ErrNotTrusted: the signature is good but its key is not trusted for
	// this plugin id, or the policy does not hold its key at all.
	ErrNotTrusted = errors.New("signer not trusted")
	// ErrKey: a signing key that cannot be used.
	ErrKey = errors.New("signing key refused")
	// ErrPolicy: a trust policy file that cannot be used.
	ErrPolicy = errors.New("trust policy refused")
)
