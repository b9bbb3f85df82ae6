package plugins

import (
	"crypto"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlock/airlock/config/filecheck"
	"github.com/airlock/airlock/plugins/signing"
)

// FolderPayload reads the plugin folder dir as the catalog would (any id)
// and checks its module against sha256, so that what is signed is a
// plugin a broker can admit; it returns the manifest and its payload
// (Manifest.Payload), what `airlock plugin digest` prints.
func FolderPayload(dir string) (Manifest, []byte, error) {
	m, module, err := ReadFolder(filecheck.Dir(dir), ".", "")
	if err != nil {
		return m, nil, err
	}
	if HashModule(module) != m.SHA256 {
		return m, nil, refusal(ReasonHashMismatch, errors.New("the module's SHA-256 does not match plugin.json (run `airlock build` first)"))
	}
	payload, err := m.Payload()
	if err != nil {
		return m, nil, refusal(ReasonDescriptorInvalid, err)
	}
	return m, payload, nil
}

// SignFolder signs the payload of the plugin folder dir with key and
// writes the bundle as signing.BundleName beside plugin.json, renamed
// into place so that a watching broker never reads half of it. It
// returns the bundle.
func SignFolder(dir string, key crypto.Signer) ([]byte, error) {
	_, payload, err := FolderPayload(dir)
	if err != nil {
		return nil, err
	}
	bundle, err := signing.Sign(payload, key)
	if err != nil {
		return nil, err
	}
	return bundle, writeAtomic(filepath.Join(dir, signing.BundleName), bundle)
}

// writeAtomic writes data to name through a hidden file beside it.
func writeAtomic(name string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+"-")
	if err != nil {
		return fmt.Errorf("plugins: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("plugins: %w", err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return fmt.Errorf("plugins: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("plugins: %w", err)
	}
	if err := os.Rename(f.Name(), name); err != nil {
		return fmt.Errorf("plugins: %w", err)
	}
	return nil
}
