package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/airlock/airlock/broker/v1client"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/config/secret"
	"github.com/airlock/airlock/plugins"
)

// settingsFlags are the flags shared by serve, env and demo. Each maps onto
// a config key; only flags given on the command line override the lower
// layers.
type settingsFlags struct {
	fs    *flag.FlagSet
	file  string
	token *secretFlag // --token-file, when asked for
	roots rootsFlag
	keys  map[string]string // flag name -> config key
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
			s.token = addSecretFlag(fs, secret.LaunchToken)
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
			if st.Key == "roots" || st.Key == "plugin_config" {
				env = "no environment variable"
			}
			if len(st.Aliases) > 0 {
				env += " (or " + strings.Join(st.Aliases, ", ") + ")"
			}
			fmt.Fprintf(w, "  %s\n      %s, default %v: %s\n", st.Key, env, st.Default, st.Help)
		}
		fmt.Fprintln(w, "\nthe launch token: TENSORVIZ_LOCAL_TOKEN or AIRLOCK_LOCAL_TOKEN, or --token-file (mode 0600); never a flag value")
	}
}

// checkData is every command's start-up check of --data (and, when the
// command compiles modules, of the compilation cache): a folder that is
// not the user's, that others may write, or that is reached through a
// link is refused with one line and exit 2, a configuration error. The
// exit code is -1 to go on.
func checkData(name string, cfg *config.Config, cache bool, stderr io.Writer) int {
	if err := plugins.CheckData(cfg, cache, newLogger(stderr, cfg.LogLevel)); err != nil {
		fmt.Fprintf(stderr, "airlock %s: %v\n", name, err)
		return exitUsage
	}
	return -1
}

// secretFlag is the file flag of a secret (--token-file, --bearer-file);
// the secret itself comes from that file or the environment, never from
// a flag value, where `ps` would show it.
type secretFlag struct {
	src  secret.Source
	file string
}

func addSecretFlag(fs *flag.FlagSet, src secret.Source) *secretFlag {
	s := &secretFlag{src: src}
	fs.StringVar(&s.file, src.Flag, "", src.FlagUsage())
	return s
}

// lookup is how to read the secret; see secret.Source.Lookup.
func (s *secretFlag) lookup() (func() (string, error), error) { return s.src.Lookup(environ(), s.file) }

// read reads the secret once; its errors are usage errors (exit 2).
func (s *secretFlag) read() (string, error) { return s.src.Read(environ(), s.file) }

// defaultBroker is where the CLI looks for a broker when --broker is not
// given: the default listen address of `airlock serve`.
const defaultBroker = "http://127.0.0.1:7420"

// newV1Client is a /v1 client of the broker at --broker with the launch
// token of --token-file or the environment; its errors are usage errors.
func newV1Client(base string, token *secretFlag) (*v1client.Client, error) {
	tok, err := token.read()
	if err != nil {
		return nil, err
	}
	base = strings.TrimSuffix(base, "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("--broker must be an http(s) URL such as %s", defaultBroker)
	}
	return &v1client.Client{Base: base, Token: tok, HTTP: &http.Client{Timeout: 15 * time.Minute}}, nil
}
