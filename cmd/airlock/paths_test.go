package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestCheckPathOneLineNamingHowItWasGiven: a path that is missing or of
// the wrong kind is a usage error naming how it was given and the path.
func TestCheckPathOneLineNamingHowItWasGiven(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	must(t, os.WriteFile(f, nil, 0o600))
	for _, c := range []struct {
		given, path string
		want        pathKind
		msg         string
	}{
		{"--plugins ", filepath.Join(dir, "nosuch"), folder, "--plugins " + filepath.Join(dir, "nosuch") + ": no such folder"},
		{"--root notes=", f, folder, "--root notes=" + f + ": not a folder"},
		{"--config ", dir, file, "--config " + dir + ": not a file"},
		{"--config ", filepath.Join(dir, "nosuch"), file, "--config " + filepath.Join(dir, "nosuch") + ": no such file"},
	} {
		err := checkPath(c.given, c.path, c.want)
		if code := report(nil, err, &strings.Builder{}); code != exitUsage || err.Error() != c.msg {
			t.Errorf("checkPath(%q, %q): exit %d %v, want %q", c.given, c.path, code, err, c.msg)
		}
	}
	if err := checkPath("--plugins ", dir, folder); err != nil {
		t.Errorf("a folder: %v", err)
	}
	if err := checkPath("--config ", f, file); err != nil {
		t.Errorf("a file: %v", err)
	}
}

// TestSettingPathsNamedAsGiven: a path setting is named by the flag that
// was given, else the environment variable that is set, else the config
// file's key; a missing data folder is left to be created.
func TestSettingPathsNamedAsGiven(t *testing.T) {
	defer func(e func() []string) { environ = e }(environ)
	missing := filepath.Join(t.TempDir(), "nosuch")
	yaml := filepath.Join(t.TempDir(), "airlock.yaml")
	must(t, os.WriteFile(yaml, []byte("plugins: "+missing+"\nroots:\n  notes: "+missing+"\n"), 0o600))
	for _, c := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--plugins", missing}, "--plugins " + missing + ": no such folder"},
		{[]string{"AIRLOCK_PLUGINS=" + missing}, nil, "AIRLOCK_PLUGINS " + missing + ": no such folder"},
		{nil, []string{"--config", yaml}, "config " + yaml + ": plugins " + missing + ": no such folder"},
		{nil, []string{"--config", yaml, "--plugins", t.TempDir()}, "config " + yaml + ": roots.notes " + missing + ": no such folder"},
		{nil, []string{"--config", yaml, "--plugins", t.TempDir(), "--root", "notes=" + missing + "2"}, "--root notes=" + missing + "2: no such folder"},
	} {
		environ = func() []string { return c.env }
		fs := pflag.NewFlagSet("settings", pflag.ContinueOnError)
		sf := addSettingsFlags(fs, "data", "plugins", "root")
		must(t, fs.Parse(append(c.args, "--data", filepath.Join(t.TempDir(), "data"))))
		_, err := sf.load()
		if err == nil || err.Error() != c.want {
			t.Errorf("%v %v: %v, want %q", c.env, c.args, err, c.want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCheckTargetMayBeAbsent: a folder a command makes may be missing,
// but a file where it, or a folder on its way, belongs is refused by name.
func TestCheckTargetMayBeAbsent(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	must(t, os.WriteFile(f, nil, 0o600))
	for path, want := range map[string]string{
		dir:                                    "",
		filepath.Join(dir, "new", "deeper"):    "",
		f:                                      "--dir " + f + ": not a folder",
		filepath.Join(f, "sub"):                "--dir " + filepath.Join(f, "sub") + ": " + f + " is not a folder",
		filepath.Join(f, "sub", "deeper", "x"): "--dir " + filepath.Join(f, "sub", "deeper", "x") + ": " + f + " is not a folder",
	} {
		err := checkTarget("--dir ", path)
		if (want == "" && err != nil) || (want != "" && (err == nil || err.Error() != want)) {
			t.Errorf("checkTarget(%s) = %v, want %q", path, err, want)
		}
	}
}
