package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/airlock/airlock/broker/unixsock"
	"github.com/airlock/airlock/config"
)

// pathKind is what a path must name: a folder or a file.
type pathKind int

const (
	folder pathKind = iota
	file
)

func (k pathKind) String() string {
	if k == folder {
		return "folder"
	}
	return "file"
}

// checkPath is the one rule for every path the operator gives a command
// (a flag, a setting from the config file or the environment, a DIR
// argument): a path that does not exist or is not the kind wanted is a
// usage error (exit 2), one line naming how it was given and the path,
// "--plugins /x/nosuch: no such folder". given is the flag ("--plugins"),
// variable or config key as the operator wrote it; a --root's "NAME=" is
// joined to the path without a space. Every command calls it before
// anything starts (see RATIONALE.md, "Why is a missing path refused at
// start, by every command alike?").
func checkPath(given, path string, want pathKind) error {
	fi, err := os.Stat(path)
	if err == nil && fi.IsDir() != (want == folder) {
		err = errors.New("not a " + want.String())
	}
	if err == nil && want == folder {
		// Mounting a root and scanning a folder both open it: a folder
		// that cannot be opened is refused here, not as a dropped tool.
		var root *os.Root
		if root, err = os.OpenRoot(path); err == nil {
			root.Close()
		}
	}
	if err == nil {
		return nil
	}
	return usageErr("%s%s: %s", given, path, pathReason(err, want))
}

// checkTarget is checkPath for a folder the command makes when it is
// missing (--data, new's --dir, build --install): it may be absent, but
// what exists of it must be folders, so that making it cannot fail half
// way: "--dir /x/f/sub: /x/f is not a folder".
func checkTarget(given, path string) error {
	for p := path; ; {
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			return nil
		case err == nil && p == path:
			return usageErr("%s%s: not a folder", given, path)
		case err == nil:
			return usageErr("%s%s: %s is not a folder", given, path, p)
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR): // a file on the way is found above
			return usageErr("%s%s: %s", given, path, pathReason(err, folder))
		}
		parent := filepath.Dir(p)
		if parent == p {
			return nil
		}
		p = parent
	}
}

// pathReason is err in a few words, without the path the message already
// names.
func pathReason(err error, want pathKind) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such " + want.String()
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// settingPaths are the settings that name a folder that must exist, and
// the data folder, which is created when missing but must be a folder
// when it is there.
var settingPaths = []string{"plugins", "data"}

// checkSettingPaths holds the folders of cfg (plugins, every root, data)
// to checkPath, and the Unix socket's path to its own rule, each named by
// given(key) as the operator set it.
func checkSettingPaths(cfg *config.Config, given func(key string) string) error {
	for _, key := range settingPaths {
		path := settingPath(cfg, key)
		if path == "" {
			continue
		}
		check := func(given, path string) error { return checkPath(given, path, folder) }
		if key == "data" {
			check = checkTarget // created 0700 by the data check when missing
		}
		if err := check(given(key)+" ", path); err != nil {
			return err
		}
	}
	if path := cfg.ListenUnix; path != "" {
		var pe *unixsock.PathError
		if err := unixsock.CheckPath(path); errors.As(err, &pe) {
			return usageErr("%s %s: %s", given("listen_unix"), path, pe.Reason)
		}
	}
	names := make([]string, 0, len(cfg.Roots))
	for name := range cfg.Roots {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := checkPath(given("roots."+name), cfg.Roots[name], folder); err != nil {
			return err
		}
	}
	return nil
}

// settingPath is the value of a path setting of settingPaths.
func settingPath(cfg *config.Config, key string) string {
	if key == "plugins" {
		return cfg.Plugins
	}
	return cfg.Data
}

// settingGiven names a setting as the operator gave it: the flag when
// flag(key) is one given on the command line, else the environment
// variable when it is set, else the config file's key. A root is
// "--root NAME=" (or the file's "roots.NAME "), ready for its path.
func settingGiven(key, file string, env []string, flag func(key string) string) string {
	if f := flag(key); f != "" {
		return f
	}
	if name, ok := strings.CutPrefix(key, "roots."); ok {
		return "config " + file + ": roots." + name + " "
	}
	for _, st := range config.Settings {
		if st.Key != key {
			continue
		}
		for _, v := range append([]string{st.Env()}, st.Aliases...) {
			for _, kv := range env {
				if strings.HasPrefix(kv, v+"=") {
					return v
				}
			}
		}
	}
	if file == "" {
		return key
	}
	return "config " + file + ": " + key
}
