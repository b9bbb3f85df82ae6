package plugins

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlock/airlock/plugins/signing"
)

// WriteFolder writes the plugin folder dir/<m.ID> holding m (with its
// sha256 set from module) and the module, the way a plugin should be dropped
// in: staged in a hidden folder beside it, then renamed into place, so a
// watching broker never sees half a plugin. An existing folder is replaced.
func WriteFolder(dir string, m Manifest, module []byte) error {
	return WriteSignedFolder(dir, m, module, nil)
}

// WriteSignedFolder is WriteFolder with the plugin's signature bundle
// (signing.BundleName) written in the same folder before it is renamed
// into place; nil writes none.
func WriteSignedFolder(dir string, m Manifest, module, bundle []byte) error {
	m.SHA256 = HashModule(module)
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("plugins: write folder: %w", err)
	}
	stage, err := os.MkdirTemp(dir, "."+m.ID+"-")
	if err != nil {
		return fmt.Errorf("plugins: write folder: %w", err)
	}
	defer os.RemoveAll(stage)
	if err := os.WriteFile(filepath.Join(stage, m.Module), module, 0o644); err != nil {
		return fmt.Errorf("plugins: write folder: %w", err)
	}
	if err := os.WriteFile(filepath.Join(stage, ManifestName), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("plugins: write folder: %w", err)
	}
	if bundle != nil {
		if err := os.WriteFile(filepath.Join(stage, signing.BundleName), bundle, 0o644); err != nil {
			return fmt.Errorf("plugins: write folder: %w", err)
		}
	}
	if err := os.Chmod(stage, 0o755); err != nil {
		return fmt.Errorf("plugins: write folder: %w", err)
	}
	final := filepath.Join(dir, m.ID)
	if err := os.RemoveAll(final); err != nil {
		return fmt.Errorf("plugins: write folder: %w", err)
	}
	if err := os.Rename(stage, final); err != nil {
		return fmt.Errorf("plugins: write folder: %w", err)
	}
	return nil
}
