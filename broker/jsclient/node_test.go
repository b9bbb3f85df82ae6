package jsclient_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The package's goleak TestMain is in schemas_test.go.

// nodeOrSkip returns the node binary, after checking that `npm ci` has run in
// this folder (the build and the door's tests need node_modules). Without
// either the test skips, unless AIRLOCK_REQUIRE_NODE is set (CI sets it),
// as cmd/airlock's TestMCPTypeScriptClient does.
func nodeOrSkip(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("node")
	_, modErr := os.Stat(filepath.Join("node_modules", "typescript", "bin", "tsc"))
	if err != nil || modErr != nil {
		if os.Getenv("AIRLOCK_REQUIRE_NODE") != "" {
			t.Fatalf("node or node_modules is missing (npm ci in broker/jsclient): %v %v", err, modErr)
		}
		t.Skip("node or node_modules is missing (npm ci in broker/jsclient)")
	}
	return path
}

// tail is the end of s, for failure messages.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
