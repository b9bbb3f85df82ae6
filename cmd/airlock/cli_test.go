package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock/airlock/broker/calls"
	"github.com/airlock/airlock/broker/localclient"
)

// TestExitCodesDocumented holds the "Exit codes" table of the command's
// reference, cmd/airlock/README.md, to the one in exit.go.
func TestExitCodesDocumented(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Exit codes\n")
	if !ok {
		t.Fatal(`cmd/airlock/README.md has no "## Exit codes" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, c := range exitCodes {
		word, _, _ := strings.Cut(c.meaning, ":")
		if !regexp.MustCompile(`(?m)^\| ` + string(rune('0'+c.code)) + ` \| ` + regexp.QuoteMeta(word) + ` \|`).MatchString(section) {
			t.Errorf("cmd/airlock/README.md's exit codes lack the row | %d | %s |", c.code, word)
		}
	}
}

// TestReadArgs: --args is the object itself, @FILE or - (stdin), each
// bound by the broker's limit on a call; every refusal is a usage error.
func TestReadArgs(t *testing.T) {
	file := filepath.Join(t.TempDir(), "args.json")
	if err := os.WriteFile(file, []byte(" {\"a\": [1, 2]} \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		v, stdin, want, err string
	}{
		{v: `{"a":1}`, want: `{"a":1}`},
		{v: "@" + file, want: `{"a":[1,2]}`},
		{v: "-", stdin: `{"b": true}`, want: `{"b":true}`},
		{v: "-", stdin: "", err: "--args must be one JSON object (from stdin)"},
		{v: "-", stdin: "{" + strings.Repeat(" ", calls.MaxCallBytes) + "}", err: "larger than 16 MiB"},
		{v: "[1]", err: "--args must be one JSON object"},
		{v: `{"a":1,"a":2}`, err: "--args must be one JSON object"},
		{v: "@/nonexistent/args.json", err: "--args @/nonexistent/args.json: no such file"},
		{v: "@", err: "--args @:"},
	} {
		got, err := readArgs(c.v, strings.NewReader(c.stdin))
		var e *exitError
		switch {
		case c.err == "" && (err != nil || string(got) != c.want):
			t.Errorf("readArgs(%.20q) = %s, %v; want %s", c.v, got, err, c.want)
		case c.err != "" && (!errors.As(err, &e) || e.code != exitUsage || !strings.Contains(e.msg, c.err)):
			t.Errorf("readArgs(%.20q): %v; want a usage error naming %q", c.v, err, c.err)
		}
	}
}

// FuzzReadArgs: whatever --args holds, the result is a usage error or one
// compact JSON object.
func FuzzReadArgs(f *testing.F) {
	for _, seed := range []string{`{}`, `{"a":1}`, `[1]`, `-`, `@`, `{"a":{"b":[1,{"c":null}]}}`, "{\"\\ud800\":1}", `{"a":1,"a":2}`} {
		f.Add(seed, `{"x":1}`)
	}
	f.Fuzz(func(t *testing.T, v, stdin string) {
		if strings.HasPrefix(v, "@") {
			return // a path: not the parser's input
		}
		got, err := readArgs(v, strings.NewReader(stdin))
		var e *exitError
		if err != nil {
			if !errors.As(err, &e) || e.code != exitUsage || strings.Contains(e.msg, "\n") {
				t.Fatalf("readArgs(%q): %v is not a one-line usage error", v, err)
			}
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(got, &obj) != nil {
			t.Fatalf("readArgs(%q) = %s, not one JSON object", v, got)
		}
	})
}

// TestMintErrSaysOnce: a mint the broker refuses is one plain sentence,
// with no package prefix, exit 3 for a refused token and 1 otherwise.
func TestMintErrSaysOnce(t *testing.T) {
	for _, c := range []struct {
		err  *localclient.HTTPError
		code int
		msg  string
	}{
		{&localclient.HTTPError{Status: 400, Code: "INVALID_MESSAGE"}, exitFailed, "the broker refused the session: 400 INVALID_MESSAGE"},
		{&localclient.HTTPError{Status: 401, Code: "INVALID_CREDENTIALS"}, exitRefused, "the broker refused the session: 401 INVALID_CREDENTIALS (check the launch token: AIRLOCK_LOCAL_TOKEN or --token-file)"},
	} {
		var out strings.Builder
		code := report(nil, mintErr(fmt.Errorf("localclient: mint: %w", c.err)), &out)
		if code != c.code || out.String() != "airlock: "+c.msg+"\n" {
			t.Errorf("%v: exit %d %q, want %d %q", c.err, code, out.String(), c.code, c.msg)
		}
	}
}
