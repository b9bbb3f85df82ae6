package secret

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func writeSecret(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return path
}

func TestReadFromEnvironment(t *testing.T) {
	for name, c := range map[string]struct {
		env  []string
		want string
	}{
		"seed name":            {[]string{"TENSORVIZ_LOCAL_TOKEN=seed"}, "seed"},
		"airlock name":         {[]string{"AIRLOCK_LOCAL_TOKEN=own"}, "own"},
		"both: airlock wins":   {[]string{"AIRLOCK_LOCAL_TOKEN=own", "TENSORVIZ_LOCAL_TOKEN=seed"}, "own"},
		"empty is unset":       {[]string{"AIRLOCK_LOCAL_TOKEN=", "TENSORVIZ_LOCAL_TOKEN=seed"}, "seed"},
		"last occurrence wins": {[]string{"TENSORVIZ_LOCAL_TOKEN=a", "TENSORVIZ_LOCAL_TOKEN=b"}, "b"},
		"a longer name is not": {[]string{"TENSORVIZ_LOCAL_TOKENX=x", "TENSORVIZ_LOCAL_TOKEN=t"}, "t"},
	} {
		got, err := LaunchToken.Read(c.env, "")
		if err != nil || got != c.want {
			t.Errorf("%s: %q %v, want %q", name, got, err, c.want)
		}
	}
}

func TestReadFromFile(t *testing.T) {
	path := writeSecret(t, "vbx_secret\n", 0o600)
	read, err := Bearer.Lookup(nil, path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := read(); err != nil || got != "vbx_secret" {
		t.Fatalf("%q %v", got, err)
	}
	// The file is read again on every call: a replaced bearer is seen.
	if err := os.WriteFile(path, []byte("vbx_new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := read(); got != "vbx_new" {
		t.Fatalf("not re-read: %q", got)
	}
}

func TestRefusals(t *testing.T) {
	open := writeSecret(t, "tok", 0o640)
	empty := writeSecret(t, " \n", 0o600)
	closed := writeSecret(t, "tok", 0o600)
	for name, c := range map[string]struct {
		src  Source
		env  []string
		file string
		kind error
		want string
	}{
		"neither token": {LaunchToken, nil, "", ErrMissing, "set TENSORVIZ_LOCAL_TOKEN (or AIRLOCK_LOCAL_TOKEN) or give --token-file"},
		"neither bearer": {Bearer, []string{"AIRLOCK_BEARER="}, "", ErrMissing,
			"set AIRLOCK_BEARER or give --bearer-file (the bearer `airlock pair add` printed)"},
		"both":       {Bearer, []string{"AIRLOCK_BEARER=x"}, closed, ErrTwice, "give the bearer once: AIRLOCK_BEARER or --bearer-file, not both"},
		"open file":  {LaunchToken, nil, open, ErrFile, "chmod 600"},
		"empty file": {LaunchToken, nil, empty, ErrFile, "the launch token file is empty"},
		"no file":    {LaunchToken, nil, filepath.Join(t.TempDir(), "nope"), os.ErrNotExist, "no such file"},
	} {
		v, err := c.src.Read(c.env, c.file)
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.want) || v != "" {
			t.Errorf("%s: %q %v; want %v saying %q", name, v, err, c.kind, c.want)
		}
	}
}

func TestFlagUsage(t *testing.T) {
	if got := LaunchToken.FlagUsage(); got != "read the launch token from `FILE` (else TENSORVIZ_LOCAL_TOKEN)" {
		t.Error(got)
	}
}

// TestReadFile: a plugin's secret file is held to the token file's rules,
// and every refusal names the path, never the content.
func TestReadFile(t *testing.T) {
	const content = "s3cret-value"
	ok := writeSecret(t, content+"\n", 0o600)
	if v, err := ReadFile(ok, 64); err != nil || v != content {
		t.Fatalf("ReadFile: %q %v", v, err)
	}
	big := writeSecret(t, strings.Repeat("x", 65), 0o600)
	for name, c := range map[string]struct {
		path string
		kind error
		want string
	}{
		"group-readable": {writeSecret(t, content, 0o640), ErrFile, "is readable by group or others; chmod 600 it"},
		"world-readable": {writeSecret(t, content, 0o604), ErrFile, "is readable by group or others"},
		"empty":          {writeSecret(t, "\n", 0o600), ErrFile, "is empty"},
		"over the limit": {big, ErrFile, "is over 64 bytes"},
		"a directory":    {t.TempDir(), ErrFile, "is not a regular file"},
		"missing":        {filepath.Join(t.TempDir(), "nope"), os.ErrNotExist, "no such file"},
	} {
		v, err := ReadFile(c.path, 64)
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.want) || v != "" {
			t.Errorf("%s: %q %v; want %v saying %q", name, v, err, c.kind, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.path) || strings.Contains(err.Error(), content) {
			t.Errorf("%s: %q must name the path and not the content", name, err)
		}
	}
}

// TestTokenFileOfAnotherUserIsRefused: a 0600 token file (or a plugin's
// secret file) that belongs to another user, who could rewrite it between
// starts, is refused, naming the file and never its content. Changing a file's owner needs root;
// elsewhere the test is skipped.
func TestTokenFileOfAnotherUserIsRefused(t *testing.T) {
	const content = "e2e-launch-token-of-someone-else-0123456789"
	path := writeSecret(t, content, 0o600)
	if err := os.Chown(path, os.Getuid()+1, os.Getgid()); err != nil {
		t.Skipf("cannot give the file to another user here: %v", err)
	}
	v, err := LaunchToken.Read(nil, path)
	if !errors.Is(err, ErrFile) || !strings.Contains(err.Error(), "belongs to another user") || v != "" {
		t.Fatalf("%q %v; want ErrFile saying the file belongs to another user", v, err)
	}
	if strings.Contains(err.Error(), content) {
		t.Errorf("%q quotes the content", err)
	}
	v, err = ReadFile(path, 64)
	if !errors.Is(err, ErrFile) || !strings.Contains(err.Error(), path+" belongs to another user") || v != "" {
		t.Errorf("ReadFile: %q %v; want the same refusal, naming the path", v, err)
	}
}
