// Package secret reads Airlock's two secrets, the launch token and an
// environment's bearer, the one way every command reads them: from an
// environment variable or from a file named by a flag, never from a flag
// value (where `ps` would show it) and never from the config file (where
// a dump would). A file must be the user's own and readable by nobody
// else (mode 0600). ReadFile holds any other secret file (a plugin's,
// package config/plugincfg) to the same rule.
package secret

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
)

// Source is where one secret may come from.
type Source struct {
	// What names the secret in messages: "launch token", "bearer".
	What string
	// Env are the environment variables that may hold it, in the order
	// messages name them; when several are set, the last of them wins.
	Env []string
	// Flag is the name of the flag that gives its file, without dashes.
	Flag string
	// Hint ends the message for a secret given neither way: where to get
	// it.
	Hint string
}

// The two secrets.
var (
	// LaunchToken is what an extension launches `airlock serve` with and
	// what every client of a broker presents. TENSORVIZ_LOCAL_TOKEN is the
	// seed's name; AIRLOCK_LOCAL_TOKEN wins when both are set.
	LaunchToken = Source{What: "launch token", Env: []string{"TENSORVIZ_LOCAL_TOKEN", "AIRLOCK_LOCAL_TOKEN"},
		Flag: "token-file", Hint: "the broker's launch token"}
	// Bearer is what `airlock env` presents to a broker: the one `airlock
	// pair add` printed.
	Bearer = Source{What: "bearer", Env: []string{"AIRLOCK_BEARER"},
		Flag: "bearer-file", Hint: "the bearer `airlock pair add` printed"}
)

// Sentinel errors; each error of Lookup and Read wraps one of them.
var (
	// ErrTwice: the secret was given both in the environment and as a file.
	ErrTwice = errors.New("secret given twice")
	// ErrMissing: the secret was given neither way. A command that can
	// run without it (serve, inert) tests for this one.
	ErrMissing = errors.New("secret missing")
	// ErrFile: the file cannot be trusted or holds nothing.
	ErrFile = errors.New("secret file refused")
)

// FlagUsage is the help text of the file flag.
func (s Source) FlagUsage() string {
	return fmt.Sprintf("read the %s from `FILE` (else %s)", s.What, s.Env[0])
}

// Lookup returns how to read the secret from environ or from file (""
// when the flag was not given): giving both is an error wrapping
// ErrTwice, neither one wrapping ErrMissing. A file is read, and checked,
// on every call of read, so a bearer replaced on disk is picked up by the
// next connection.
func (s Source) Lookup(environ []string, file string) (read func() (string, error), err error) {
	fromEnv := s.fromEnv(environ)
	switch {
	case file != "" && fromEnv != "":
		return nil, errorf(ErrTwice, "give the %s once: %s or --%s, not both", s.What, s.envNames(), s.Flag)
	case file != "":
		return func() (string, error) { return s.readFile(file) }, nil
	case fromEnv != "":
		return func() (string, error) { return fromEnv, nil }, nil
	}
	return nil, errorf(ErrMissing, "set %s or give --%s (%s)", s.envNames(), s.Flag, s.Hint)
}

// Read reads the secret once; see Lookup.
func (s Source) Read(environ []string, file string) (string, error) {
	read, err := s.Lookup(environ, file)
	if err != nil {
		return "", err
	}
	return read()
}

// fromEnv is the value of the last of s.Env set to something; an empty
// value counts as unset.
func (s Source) fromEnv(environ []string) string {
	for i := len(s.Env) - 1; i >= 0; i-- {
		v := ""
		for _, kv := range environ {
			if name, val, _ := strings.Cut(kv, "="); name == s.Env[i] && val != "" {
				v = val
			}
		}
		if v != "" {
			return v
		}
	}
	return ""
}

// envNames are the variables as messages name them.
func (s Source) envNames() string {
	if len(s.Env) == 1 {
		return s.Env[0]
	}
	return s.Env[0] + " (or " + strings.Join(s.Env[1:], ", ") + ")"
}

// readFile reads a one-line secret from a file of the user's that no one
// else may read or write.
func (s Source) readFile(path string) (string, error) {
	return readPrivate("the "+s.What+" file", path, maxSecretBytes)
}

// maxSecretBytes bounds a secret file read into memory.
const maxSecretBytes = 64 << 10

// ReadFile reads a secret other than the two above (a plugin's API key,
// say) with the same checks: a regular file of the user's, readable by
// nobody else (mode 0600), not empty, at most limit bytes. Surrounding
// white space (a trailing newline) is dropped. Errors wrap ErrFile, or
// the file system's error, and name the path, never the content.
func ReadFile(path string, limit int64) (string, error) {
	return readPrivate("file "+path, path, limit)
}

// readPrivate is ReadFile, with subject naming the file in messages.
func readPrivate(subject, path string, limit int64) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !info.Mode().IsRegular() {
		// A pipe or a device would block or never end.
		return "", errorf(ErrFile, "%s is not a regular file", subject)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return "", errorf(ErrFile, "%s is readable by group or others; chmod 600 it", subject)
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		// Another user could rewrite it between starts.
		return "", errorf(ErrFile, "%s belongs to another user", subject)
	}
	if info.Size() > limit {
		return "", errorf(ErrFile, "%s is over %d bytes", subject, limit)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", err
	}
	if int64(len(data)) > limit {
		return "", errorf(ErrFile, "%s is over %d bytes", subject, limit)
	}
	v := strings.TrimSpace(string(data))
	if v == "" {
		return "", errorf(ErrFile, "%s is empty", subject)
	}
	return v, nil
}

// kindError is a message for a person that errors.Is matches to one of
// the sentinels, without the sentinel's words in it.
type kindError struct {
	msg  string
	kind error
}

func errorf(kind error, format string, a ...any) error {
	return &kindError{msg: fmt.Sprintf(format, a...), kind: kind}
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }
