package main

import (
	"os"
	"testing"
)

// TestShellQuote: a printed path is pasted into a shell as one word.
func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/airlock-demo-1/data/demo-token": "/tmp/airlock-demo-1/data/demo-token",
		"/home/a b/airlock":                   "'/home/a b/airlock'",
		"it's":                                `'it'\''s'`,
		"$(id)":                               "'$(id)'",
		"":                                    "''",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestSelfCommand: the printed commands run this program as it was
// started, or through go run when go run built it.
func TestSelfCommand(t *testing.T) {
	saved := os.Args[0]
	defer func() { os.Args[0] = saved }()
	for in, want := range map[string]string{
		"airlock":                           "airlock",
		"/usr/local/bin/airlock":            "/usr/local/bin/airlock",
		"/tmp/go-build123/b001/exe/airlock": "go run ./cmd/airlock",
	} {
		os.Args[0] = in
		if got := selfCommand(); got != want {
			t.Errorf("selfCommand() for %s = %s, want %s", in, got, want)
		}
	}
}
