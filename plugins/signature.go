package plugins

import (
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/airlock/airlock/config/filecheck"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins/signing"
)

// signature checks the signature of the plugin folder id against the
// trust policy and returns its signer. Bundled plugins are exempt: they
// ship inside the binary that runs them. Without a policy nothing is
// required, and a signed plugin's signer is the key its bundle names,
// unverified.
func (c *Catalog) signature(src source, id string, m Manifest) (*wire.Signer, error) {
	if src.origin == OriginBuiltin {
		return nil, nil
	}
	bundle, err := filecheck.Read(src.fsys, path.Join(id, signing.BundleName), signing.MaxBundleBytes)
	if errors.Is(err, fs.ErrNotExist) {
		bundle, err = nil, nil
	}
	if err != nil {
		return nil, refusal(ReasonSignatureInvalid, fmt.Errorf("%s: %w", signing.BundleName, err))
	}
	if c.trust == nil {
		if bundle == nil {
			return nil, nil
		}
		if key, err := signing.Claimed(bundle); err == nil && key != "" {
			return &wire.Signer{Key: key}, nil
		}
		return nil, nil
	}
	payload, err := m.Payload()
	if err != nil {
		return nil, refusal(ReasonSignatureInvalid, fmt.Errorf("%s: no payload: %w", ManifestName, err))
	}
	key, err := c.trust.Verify(id, payload, bundle)
	switch {
	case errors.Is(err, signing.ErrMissing):
		return nil, refusal(ReasonSignatureMissing, err)
	case errors.Is(err, signing.ErrNotTrusted):
		return nil, refusal(ReasonSignerNotTrusted, err)
	case err != nil:
		return nil, refusal(ReasonSignatureInvalid, err)
	}
	return &wire.Signer{Key: key, Verified: true}, nil
}
