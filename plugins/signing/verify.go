package signing

import (
	"bytes"
	"crypto"
	"fmt"
	"path"
	"time"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"
)

// MaxBundleBytes bounds a signature file; a key-signed bundle is under
// 1 KiB.
const MaxBundleBytes = 64 << 10

// Claimed is the fingerprint of the key a bundle names (its hint), not
// checked: what is shown for a signed plugin when no trust policy holds
// keys to check it with. It is "" when the bundle names no key by a
// SHA-256 hint.
func Claimed(bundleJSON []byte) (string, error) {
	b, err := parse(bundleJSON)
	if err != nil {
		return "", err
	}
	return claimedHint(b), nil
}

func claimedHint(b *bundle.Bundle) string {
	if pk := b.GetVerificationMaterial().GetPublicKey(); pk != nil {
		return hintFingerprint(pk.GetHint())
	}
	return ""
}

func parse(bundleJSON []byte) (*bundle.Bundle, error) {
	if len(bundleJSON) > MaxBundleBytes {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrInvalid, BundleName, MaxBundleBytes)
	}
	var b bundle.Bundle
	if err := b.UnmarshalJSON(bundleJSON); err != nil {
		return nil, fmt.Errorf("%w: %s is not a Sigstore bundle: %w", ErrInvalid, BundleName, err)
	}
	if b.GetMessageSignature() == nil {
		return nil, fmt.Errorf("%w: %s holds no message signature (sign the payload of `airlock plugin digest` as a blob)", ErrInvalid, BundleName)
	}
	return &b, nil
}

// Verify checks that bundleJSON (nil when the plugin has no BundleName)
// signs payload with a key of p trusted for the plugin id, and returns
// that key's fingerprint. Each key of the policy is tried, offline; its
// errors wrap ErrMissing, ErrInvalid or ErrNotTrusted and say what to do.
func (p *Policy) Verify(id string, payload, bundleJSON []byte) (string, error) {
	if bundleJSON == nil {
		return "", fmt.Errorf("%w: no %s beside plugin.json, and the trust policy %s requires one (sign it with `airlock plugin sign`)", ErrMissing, BundleName, p.file)
	}
	b, err := parse(bundleJSON)
	if err != nil {
		return "", err
	}
	for _, k := range p.keys {
		if verifyWith(k.verifier, b, payload) != nil {
			continue
		}
		for _, g := range k.plugins {
			if ok, _ := path.Match(g, id); ok {
				return k.fingerprint, nil
			}
		}
		return k.fingerprint, fmt.Errorf("%w: signed by %s, which the trust policy %s does not trust for plugin %q (it trusts it for %v)",
			ErrNotTrusted, k.fingerprint, p.file, id, k.plugins)
	}
	claimed := claimedHint(b)
	for _, k := range p.keys {
		if claimed != "" && claimed == k.fingerprint {
			return "", fmt.Errorf("%w: the signature by %s does not match this plugin.json (changed since it was signed, or signed for another plugin); sign it again", ErrInvalid, claimed)
		}
	}
	if claimed != "" {
		return "", fmt.Errorf("%w: signed by %s, a key the trust policy %s does not hold", ErrNotTrusted, claimed, p.file)
	}
	return "", fmt.Errorf("%w: no key of the trust policy %s verifies the signature", ErrInvalid, p.file)
}

// verifyWith checks b over payload with one public key only: no
// certificate, no timestamp and no transparency log are asked for.
func verifyWith(v signature.Verifier, b *bundle.Bundle, payload []byte) error {
	tm := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) {
		return root.NewExpiringKey(v, time.Time{}, time.Time{}), nil
	})
	sev, err := verify.NewVerifier(tm, verify.WithNoObserverTimestamps())
	if err != nil {
		return err
	}
	_, err = sev.Verify(b, verify.NewPolicy(verify.WithArtifact(bytes.NewReader(payload)), verify.WithKey()))
	return err
}

// loadVerifier is the verifier of one trusted public key.
func loadVerifier(pub crypto.PublicKey) (signature.Verifier, error) {
	if _, err := checkKey(pub); err != nil {
		return nil, err
	}
	return signature.LoadVerifier(pub, crypto.SHA256)
}
