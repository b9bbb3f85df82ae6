// Package modbuild builds the bundled plugins' modules from source the one
// way both the rebuild command and the bundled tests use, so "the
// committed module is what the source builds to" can be checked.
package modbuild

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/airlock/airlock/plugins"
	"github.com/airlock/airlock/plugins/devkit"
)

// Plugins are the bundled plugin folders; each holds main.go, plugin.json
// and <name>.wasm.
var Plugins = []string{"notes", "web"}

// Args are the go build arguments after "go": a reactor module
// (-buildmode=c-shared, see plugins/sdk/ABI.md), reproducible (-trimpath,
// no VCS stamping), as `airlock build` makes one.
func Args(out string) []string { return devkit.GoArgs(devkit.Reactor, out) }

// Build compiles the Go package in srcDir to a wasip1 reactor module at
// out.
func Build(srcDir, out string) error {
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	cmd := exec.Command("go", Args(abs)...)
	cmd.Dir = srcDir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build in %s: %v\n%s", srcDir, err, stderr.Bytes())
	}
	return nil
}

// SHA256 is the hex digest plugin.json's sha256 must equal.
func SHA256(module []byte) string { return plugins.HashModule(module) }

// SetSHA256 rewrites the sha256 value in the manifest at path, leaving the
// rest of the file as written (plugins.SetSHA256).
func SetSHA256(path, sum string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if data, err = plugins.SetSHA256(data, sum); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
