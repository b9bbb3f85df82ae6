package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/knadh/koanf/providers/posflag"
	"github.com/spf13/pflag"

	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/config/secret"
	"github.com/airlock/airlock/plugins"
	"github.com/airlock/airlock/plugins/signing"
)

// settingsFlags are the flags shared by serve, env, mcp, tools, pair and
// demo. Each is bound to a config key (bindSetting); only flags given on
// the command line override the lower layers.
type settingsFlags struct {
	fs    *pflag.FlagSet
	file  string
	token *secretFlag // --token-file, when asked for
	roots rootsFlag
}

func addSettingsFlags(fs *pflag.FlagSet, names ...string) *settingsFlags {
	s := &settingsFlags{fs: fs, roots: rootsFlag{}}
	fs.StringVar(&s.file, "config", "", "YAML config `FILE`")
	str := func(name, key, usage string) {
		fs.String(name, "", usage)
		bindSetting(fs, name, key)
	}
	for _, n := range names {
		switch n {
		case "listen":
			str("listen", "listen", "`ADDR` to listen on (default 127.0.0.1:7420; port 0 picks one)")
		case "metrics-listen":
			str("metrics-listen", "metrics_listen", "serve /metrics on its own `ADDR`")
		case "listen-unix":
			str("listen-unix", "listen_unix", "also listen on the Unix socket `PATH`, for programs on this machine (its folder must be yours alone, such as $XDG_RUNTIME_DIR)")
		case "data":
			str("data", "data", "data `DIR`: pairings and compilation cache (default "+config.DefaultDataDir()+")")
		case "plugins":
			str("plugins", "plugins", "drop-in plugins `DIR`")
		case "trust-policy":
			str("trust-policy", "plugin_trust_policy", "trust policy `FILE`: the keys the plugins folder's plugins must be signed by (default DATA/"+signing.PolicyName+" when it exists)")
		case "root":
			fs.Var(s.roots, "root", "map a root: `NAME=DIR` (repeatable), mounted read-only")
		case "no-builtin":
			fs.Bool("no-builtin", false, "leave the bundled plugins out")
			bindSetting(fs, "no-builtin", "no_builtin")
		case "standalone":
			fs.Bool("standalone", false, "the standalone plugin service: 127.0.0.1 only, a launch token required, no source proposals")
			bindSetting(fs, "standalone", "standalone")
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

// settingAnnotation is the pflag annotation that names the config key a
// flag sets. The key travels with the flag, not by its name: `--broker`
// is env.broker for `airlock env` but the broker's HTTP URL, no setting,
// for the commands that talk to one (brokerFlags).
const settingAnnotation = "airlock-setting-key"

// bindSetting makes the flag name, already in fs, set the config key.
func bindSetting(fs *pflag.FlagSet, name, key string) {
	if err := fs.SetAnnotation(name, settingAnnotation, []string{key}); err != nil {
		panic(err) // no such flag: a mistake in the command's wiring
	}
}

// flagSettings is the flag layer: koanf's posflag provider reads every
// flag of fs bound to a key (bindSetting), typed as the flag is, and
// leaves out the others. Given no koanf instance to consult, posflag
// also leaves out every flag not on the command line, so a flag's default
// never hides the config file, the environment or the setting's default.
func flagSettings(fs *pflag.FlagSet) (map[string]any, error) {
	return posflag.ProviderWithFlag(fs, ".", nil, func(f *pflag.Flag) (string, any) {
		key := f.Annotations[settingAnnotation]
		if len(key) != 1 {
			return "", nil
		}
		return key[0], posflag.FlagVal(fs, f)
	}).Read()
}

// load layers defaults, the config file, the environment and the flags
// that were given; its errors are configuration errors (exit 2).
func (s *settingsFlags) load() (*config.Config, error) {
	set, err := flagSettings(s.fs)
	if err != nil {
		return nil, configErr(err)
	}
	if s.file != "" {
		if err := checkPath("--config ", s.file, file); err != nil {
			return nil, err
		}
	}
	env := environ()
	cfg, err := config.Load(config.Sources{File: s.file, Environ: env, Flags: set, Roots: s.roots})
	if err != nil {
		return nil, configErr(err)
	}
	if err := checkSettingPaths(cfg, func(key string) string { return settingGiven(key, s.file, env, s.flagOf) }); err != nil {
		return nil, err
	}
	return cfg, nil
}

// flagOf is the flag that set key on this command line, as the operator
// typed it ("--plugins", "--root notes="), or "" when none did.
func (s *settingsFlags) flagOf(key string) string {
	if name, ok := strings.CutPrefix(key, "roots."); ok {
		if _, given := s.roots[name]; given {
			return "--root " + name + "="
		}
		return ""
	}
	flag := ""
	s.fs.Visit(func(f *pflag.Flag) {
		if k := f.Annotations[settingAnnotation]; len(k) == 1 && k[0] == key {
			flag = "--" + f.Name
		}
	})
	return flag
}

// given reports whether the flag name was on the command line.
func (s *settingsFlags) given(name string) bool { return s.fs.Changed(name) }

// The settings each command that runs a broker or an environment uses,
// for its help: a key, or a section ending in "." (every key under it).
var (
	// serveSettings are all but airlock env's own.
	serveSettings = []string{"listen", "metrics_listen", "listen_unix", "data", "plugins", "plugin_trust_policy", "roots", "plugin_config", "no_builtin", "log_level",
		"shutdown_grace_ms", "standalone", "http.", "local.", "channel.", "exec.", "mcp.", "audit."}
	// mcpSettings are an embedded broker's that never listens: its tools
	// and their executors.
	mcpSettings = []string{"data", "plugins", "plugin_trust_policy", "roots", "plugin_config", "no_builtin", "log_level", "shutdown_grace_ms", "exec.", "audit."}
	// envSettings are an environment's: its tools, its executors and its
	// connection to the broker (it never admits the bundled plugins).
	envSettings = []string{"data", "plugins", "plugin_trust_policy", "roots", "plugin_config", "log_level", "shutdown_grace_ms",
		"channel.max_inflight", "exec.", "env."}
)

// usesSetting reports whether key is one of keys, or under a section of
// them.
func usesSetting(keys []string, key string) bool {
	for _, k := range keys {
		if k == key || (strings.HasSuffix(k, ".") && strings.HasPrefix(key, k)) {
			return true
		}
	}
	return false
}

// settingsHelp lists the settings of keys (a command's: serveSettings,
// mcpSettings, envSettings) with their key, environment variable and
// default, then where each of the command's secrets comes from.
func settingsHelp(keys []string, secrets ...secret.Source) string {
	var b strings.Builder
	b.WriteString("Settings (config-file key, environment variable, default):\n")
	for _, st := range config.Settings {
		if !usesSetting(keys, st.Key) {
			continue
		}
		env := st.Env()
		if st.Key == "roots" || st.Key == "plugin_config" {
			env = "no environment variable"
		}
		if len(st.Aliases) > 0 {
			env += " (or " + strings.Join(st.Aliases, ", ") + ")"
		}
		fmt.Fprintf(&b, "  %s\n      %s, default %v: %s\n", st.Key, env, st.Default, st.Help)
	}
	for _, src := range secrets {
		s := secretFlag{src: src}
		fmt.Fprintf(&b, "\nThe %s: %s, or --%s FILE (mode 0600); never a flag value.\n", src.What, s.envNames(true), src.Flag)
	}
	return b.String()
}

// checkData is every command's start-up check of --data (and, when the
// command compiles modules, of the compilation cache): a folder that is
// not the user's, that others may write, or that is reached through a
// link is refused with one line and exit 2, a configuration error.
func checkData(cfg *config.Config, cache bool, stderr io.Writer) error {
	if err := plugins.CheckData(cfg, cache, newLogger(stderr, cfg.LogLevel)); err != nil {
		return configErr(err)
	}
	return nil
}

// rootsFlag collects repeatable --root NAME=DIR.
type rootsFlag map[string]string

func (r rootsFlag) String() string {
	var parts []string
	for k, v := range r {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func (r rootsFlag) Set(v string) error {
	name, dir, ok := strings.Cut(v, "=")
	if !ok || name == "" || dir == "" {
		return errors.New("want NAME=DIR")
	}
	r[name] = dir
	return nil
}

func (r rootsFlag) Type() string { return "NAME=DIR" }

// secretFlag is the file flag of a secret (--token-file, --bearer-file);
// the secret itself comes from that file or the environment, never from
// a flag value, where `ps` would show it.
type secretFlag struct {
	src  secret.Source
	file string
}

func addSecretFlag(fs *pflag.FlagSet, src secret.Source) *secretFlag {
	s := &secretFlag{src: src}
	fs.StringVar(&s.file, src.Flag, "", fmt.Sprintf("read the %s from `FILE`, mode 0600 (else from %s)", src.What, s.envNames(false)))
	return s
}

// envNames names the variables, the Airlock name first: it is the last
// of src.Env, the one that wins when several are set. The seed names
// follow in parentheses, or after "or".
func (s *secretFlag) envNames(parens bool) string {
	env := s.src.Env
	names, seeds := env[len(env)-1], strings.Join(env[:len(env)-1], ", ")
	switch {
	case seeds == "":
	case parens:
		names += " (or " + seeds + ")"
	default:
		names += " or " + seeds
	}
	return names
}

// lookup is how to read the secret; see secret.Source.Lookup. Its errors
// are configuration errors (exit 2).
func (s *secretFlag) lookup() (func() (string, error), error) {
	read, err := s.src.Lookup(environ(), s.file)
	if err != nil {
		return nil, s.err(err)
	}
	return read, nil
}

// read reads the secret once; its errors are configuration errors (exit
// 2), from every command alike.
func (s *secretFlag) read() (string, error) {
	v, err := s.src.Read(environ(), s.file)
	if err != nil {
		return "", s.err(err)
	}
	return v, nil
}

// err is a configuration error (exit 2); a missing secret is named with
// the Airlock variable first.
func (s *secretFlag) err(err error) error {
	switch {
	case errors.Is(err, secret.ErrMissing):
		return &exitError{code: exitUsage, err: err,
			msg: fmt.Sprintf("no %s: set %s or give --%s FILE (%s)", s.src.What, s.envNames(true), s.src.Flag, s.src.Hint)}
	case errors.Is(err, secret.ErrTwice), errors.Is(err, secret.ErrFile):
		return configErr(err)
	}
	return &exitError{code: exitUsage, err: err, // the file cannot be read
		msg: fmt.Sprintf("--%s %s: %s", s.src.Flag, s.file, pathReason(err, file))}
}
