package signing

import (
	"crypto"
	"fmt"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/sign"
)

// Sign signs payload with key and returns the Sigstore bundle (v0.3
// JSON) to write as BundleName: a message signature naming its key by
// hint, with no certificate, timestamp or transparency log entry.
func Sign(payload []byte, key crypto.Signer) ([]byte, error) {
	kp, err := newKeypair(key)
	if err != nil {
		return nil, err
	}
	pb, err := sign.Bundle(&sign.PlainData{Data: payload}, kp, sign.BundleOptions{})
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	b := bundle.Bundle{Bundle: pb}
	out, err := b.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	return append(out, '\n'), nil
}
