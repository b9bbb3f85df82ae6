//go:build !wasip1

package sdk

import (
	"fmt"
	"os"
)

// Main reports that the tool only runs inside the sandbox and exits 2.
func Main() {
	fmt.Fprintln(os.Stderr, ErrNotInSandbox)
	os.Exit(2)
}

// Fetch fails outside the sandbox.
func Fetch(Request) (Response, error) { return Response{}, ErrNotInSandbox }

// Log does nothing outside the sandbox.
func Log(string) {}

// Config finds nothing outside the sandbox.
func Config(string) (string, bool) { return "", false }
