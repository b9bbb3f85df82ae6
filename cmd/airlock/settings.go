package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/airlock/airlock/config"
)

// settingsFlags are the flags shared by serve, env and demo. Each maps onto
// a config key; only flags given on the command line override the lower
// layers.
type settingsFlags struct {
	fs        *flag.FlagSet
	file      string
	tokenFile string
	roots     rootsFlag
	keys      map[string]string // flag name -> config key
}

func addSettingsFlags(fs *flag.FlagSet, names ...string) *settingsFlags {
	s := &settingsFlags{fs: fs, roots: rootsFlag{}, keys: map[string]string{}}
	fs.StringVar(&s.file, "config", "", "YAML config `FILE`")
	str := func(name, key, usage string) {
		fs.String(name, "", usage)
		s.keys[name] = key
	}
	for _, n := range names {
		switch n {
		case "listen":
			str("listen", "listen", "`ADDR` to listen on (default 127.0.0.1:7420; port 0 picks one)")
		case "metrics-listen":
			str("metrics-listen", "metrics_listen", "serve /metrics on its own `ADDR`")
		case "data":
			str("data", "data", "data `DIR`: pairings and compilation cache (default "+config.DefaultDataDir()+")")
		case "plugins":
			str("plugins", "plugins", "drop-in plugins `DIR`")
		case "root":
			fs.Var(s.roots, "root", "map a root: `NAME=DIR` (repeatable), mounted read-only")
		case "no-builtin":
			fs.Bool("no-builtin", false, "leave the bundled plugins out")
			s.keys["no-builtin"] = "no_builtin"
		case "log-level":
			str("log-level", "log_level", "debug, info, warn or error (default info)")
		case "token-file":
			fs.StringVar(&s.tokenFile, "token-file", "", "read the launch token from `FILE` (mode 0600)")
		case "broker":
			str("broker", "env.broker", "the broker's channel `URL` (ws://HOST:PORT/channel)")
		}
	}
	return s
}

// load layers defaults, the config file, the environment and the flags
// that were given.
func (s *settingsFlags) load() (*config.Config, error) {
	set := map[string]any{}
	s.fs.Visit(func(f *flag.Flag) {
		if key, ok := s.keys[f.Name]; ok {
			set[key] = f.Value.String()
		}
	})
	return config.Load(config.Sources{File: s.file, Environ: environ(), Flags: set, Roots: s.roots})
}

// flagSet returns the value of a flag given on the command line, or "".
func (s *settingsFlags) flagSet(name string) string {
	v := ""
	s.fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			v = f.Value.String()
		}
	})
	return v
}

// settingsUsage prints the flags, then every setting with its key,
// environment variable and default.
func settingsUsage(fs *flag.FlagSet, w io.Writer, synopsis string) func() {
	return func() {
		fmt.Fprintf(w, "usage: %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
		fmt.Fprintln(w, "\nsettings (config-file key, environment variable, default):")
		for _, st := range config.Settings {
			env := st.Env()
			if st.Key == "roots" {
				env = "no environment variable"
			}
			if len(st.Aliases) > 0 {
				env += " (or " + strings.Join(st.Aliases, ", ") + ")"
			}
			fmt.Fprintf(w, "  %s\n      %s, default %v: %s\n", st.Key, env, st.Default, st.Help)
		}
		fmt.Fprintln(w, "\nthe launch token: TENSORVIZ_LOCAL_TOKEN or AIRLOCK_LOCAL_TOKEN, or --token-file; never a flag value")
	}
}

// Errors of reading the launch token.
var (
	errTokenTwice     = errors.New("give the launch token once: environment or --token-file, not both")
	errTokenFileOpen  = errors.New("the token file is readable by group or others; chmod 600 it")
	errTokenFileOwner = errors.New("the token file belongs to another user")
	errTokenEmpty     = errors.New("the token file is empty")
)

// launchToken reads the token from TENSORVIZ_LOCAL_TOKEN /
// AIRLOCK_LOCAL_TOKEN or from a file that only its owner can read. It is
// never taken from a flag value, where `ps` would show it.
func launchToken(tokenFile string) (string, error) {
	fromEnv := ""
	for _, kv := range environ() {
		name, v, _ := strings.Cut(kv, "=")
		if (name == "AIRLOCK_LOCAL_TOKEN" || (name == "TENSORVIZ_LOCAL_TOKEN" && fromEnv == "")) && v != "" {
			fromEnv = v
		}
	}
	if tokenFile == "" {
		return fromEnv, nil
	}
	if fromEnv != "" {
		return "", errTokenTwice
	}
	return readSecretFile(tokenFile)
}

// readSecretFile reads a one-line secret from a file with no group or
// other permissions.
func readSecretFile(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if info.Mode().Perm()&0o077 != 0 {
		return "", errTokenFileOpen
	}
	if st, ok := info.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return "", errTokenFileOwner // another user could rewrite it between starts
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", errTokenEmpty
	}
	return tok, nil
}
