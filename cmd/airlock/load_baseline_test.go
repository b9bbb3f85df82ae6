package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
)

func TestBrokerCacheDir(t *testing.T) {
	defer func(e func() []string) { environ = e }(environ)
	environ = func() []string { return nil }
	data := t.TempDir()
	fs := pflag.NewFlagSet("load calls", pflag.ContinueOnError)
	sf := addSettingsFlags(fs, "data")
	if err := fs.Parse([]string{"--data", data}); err != nil {
		t.Fatal(err)
	}
	if dir, err := brokerCacheDir(sf); err != nil || dir != "" {
		t.Fatalf("no cache yet: %q %v", dir, err)
	}
	want := filepath.Join(data, "compile-cache")
	if err := os.Mkdir(want, 0o700); err != nil {
		t.Fatal(err)
	}
	if dir, err := brokerCacheDir(sf); err != nil || dir != want {
		t.Fatalf("the broker's cache: %q %v", dir, err)
	}
	environ = func() []string { return []string{"AIRLOCK_EXEC_CACHE_DIR=" + data} }
	if dir, err := brokerCacheDir(sf); err != nil || dir != data {
		t.Fatalf("exec.cache_dir: %q %v", dir, err)
	}
}
