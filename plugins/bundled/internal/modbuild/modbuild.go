// Package modbuild builds the bundled plugins' modules from source the one
// way both the rebuild command and the bundled tests use, so "the
// committed module is what the source builds to" can be checked.
package modbuild

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
)

// Plugins are the bundled plugin folders; each holds main.go, plugin.json
// and <name>.wasm.
var Plugins = []string{"notes", "web"}

// Args are the go build arguments after "go": a reactor module
// (-buildmode=c-shared, see plugins/sdk/ABI.md), reproducible (-trimpath,
// no VCS stamping).
func Args(out string) []string {
	return []string{"build", "-trimpath", "-buildvcs=false", "-buildmode=c-shared", "-o", out, "."}
}

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
func SHA256(module []byte) string {
	sum := sha256.Sum256(module)
	return hex.EncodeToString(sum[:])
}

var shaField = regexp.MustCompile(`("sha256"\s*:\s*")[0-9a-f]*(")`)

// SetSHA256 rewrites the sha256 value in the manifest at path, leaving the
// rest of the file as written.
func SetSHA256(path, sum string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(shaField.FindAllIndex(data, -1)) != 1 {
		return fmt.Errorf("%s: expected exactly one sha256 field", path)
	}
	data = shaField.ReplaceAll(data, []byte("${1}"+sum+"${2}"))
	return os.WriteFile(path, data, 0o644)
}
