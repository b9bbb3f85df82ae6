// Package config loads Airlock's settings with koanf, in layers: built-in
// defaults, then an optional YAML file, then environment variables
// (AIRLOCK_* and the seed names), then command-line flags. Validate is the
// one place that decides whether a configuration is usable.
//
// Secrets are not settings: the launch token and the bearer come only from
// the environment or a 0600 file (package config/secret), never from the
// config file or a flag value, so they can never be dumped with the rest.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/v2"

	"github.com/airlock/airlock/config/filecheck"
	"github.com/airlock/airlock/config/plugincfg"
	"github.com/airlock/airlock/config/secret"
	"github.com/airlock/airlock/config/suggest"
)

// Config is every setting of `airlock serve` and `airlock env`. Each field's
// key, environment variable and default are in the Settings table.
type Config struct {
	// Listen is the broker's address. Port 0 picks a free port.
	Listen string `koanf:"listen"`
	// MetricsListen, when set, serves /metrics on its own listener instead
	// of the main one.
	MetricsListen string `koanf:"metrics_listen"`
	// ListenUnix, when set, is a Unix socket the broker also listens on,
	// for programs on this machine: its folder must be the user's alone,
	// and a connection from another user is closed unread.
	ListenUnix string `koanf:"listen_unix"`
	// Data holds the pairings file and the compilation cache.
	Data string `koanf:"data"`
	// Plugins is the drop-in plugins folder; empty means none.
	Plugins string `koanf:"plugins"`
	// Roots maps root names that plugins ask for to host directories,
	// mounted read-only.
	Roots map[string]string `koanf:"roots"`
	// PluginTrustPolicy is the trust policy file that plugins of the
	// plugins folder must be signed under; empty means DATA/trust-policy.json
	// when that exists, else none.
	PluginTrustPolicy string `koanf:"plugin_trust_policy"`
	// NoBuiltin leaves the bundled plugins out.
	NoBuiltin bool `koanf:"no_builtin"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `koanf:"log_level"`
	// ShutdownGraceMs bounds how long SIGTERM waits for in-flight work.
	ShutdownGraceMs int `koanf:"shutdown_grace_ms"`
	// Standalone is the standalone plugin service's profile: Listen (and
	// MetricsListen) on 127.0.0.1 only, a launch token required (the
	// caller checks that: the token is not a setting) and no source
	// proposals. Validate holds the addresses to it; Load turns
	// local.source_proposals off and refuses a layer that turns it on.
	Standalone bool `koanf:"standalone"`

	HTTP    HTTP    `koanf:"http"`
	Local   Local   `koanf:"local"`
	Channel Channel `koanf:"channel"`
	Exec    Exec    `koanf:"exec"`
	Env     Env     `koanf:"env"`
	MCP     MCP     `koanf:"mcp"`
	Audit   Audit   `koanf:"audit"`

	// PluginConfig is the operator's named values for plugins, the config
	// file's plugin_config section resolved (files and environment
	// variables read) by Load. It never prints; see package plugincfg.
	PluginConfig *plugincfg.Values `koanf:"-"`

	// Warnings are what Load accepted but the operator should hear of
	// at start (an AIRLOCK_* variable that names no setting), one line
	// each; the command logs them.
	Warnings []string `koanf:"-"`

	dump map[string]any // the merged layers, for Dump
	// reread is ReadPluginConfig's work: a closure, so that the environment
	// it holds (the launch token among it) is never printed with c.
	reread func() (*plugincfg.Values, error)
}

// HTTP bounds what a client can hold on the broker's listeners (see
// broker/RATIONALE.md, "Why evict slow connections before refusing new ones?").
type HTTP struct {
	// MaxConnections caps open connections, WebSockets included. Past it
	// the oldest connection still sending headers or a body, idle between
	// requests, upgraded but not yet authenticated, or blocked writing to
	// a client that does not read, is closed for the new one; with none,
	// the new one is refused 503.
	MaxConnections int `koanf:"max_connections"`
	// HeaderTimeoutMs bounds the arrival of a request's headers.
	HeaderTimeoutMs int `koanf:"header_timeout_ms"`
	// BodyTimeoutMs bounds the arrival of a request's body, from the end
	// of its headers. WebSocket upgrades carry no body and are not bound.
	BodyTimeoutMs int `koanf:"body_timeout_ms"`
	// IdleTimeoutMs closes a keep-alive connection idle this long.
	IdleTimeoutMs int `koanf:"idle_timeout_ms"`
	// WriteTimeoutMs bounds each write of a response, extended on every
	// write, so a client that never reads cannot hold its connection. A
	// handler that has not started writing (a long tool call) is not bound.
	WriteTimeoutMs int `koanf:"write_timeout_ms"`
}

// Local configures sessions and the /local/ws relay.
type Local struct {
	TombstoneRetentionSeconds int  `koanf:"tombstone_retention_seconds"`
	SourceProposals           bool `koanf:"source_proposals"`
	HandshakeTimeoutMs        int  `koanf:"handshake_timeout_ms"`
	MaxFrameBytes             int  `koanf:"max_frame_bytes"`
	OutboundQueue             int  `koanf:"outbound_queue"`
	OutboundQueueBytes        int  `koanf:"outbound_queue_bytes"`
	MaxRequestsPerView        int  `koanf:"max_requests_per_view"`
	MaxTombstones             int  `koanf:"max_tombstones"`
	MaxSessions               int  `koanf:"max_sessions"`
	MaxViewsPerSession        int  `koanf:"max_views_per_session"`
	// ViewKey requires a view to offer, beside its cookie, the view key
	// bootstrap returned (PROTOCOL section 3). False admits a view on its
	// cookie alone, as the seed did; start-up warns then.
	ViewKey bool `koanf:"view_key"`
}

// Channel configures /channel, at both ends: the broker, and `airlock env`
// (whose in-flight bound is MaxInflight too).
type Channel struct {
	HelloBoundMs int  `koanf:"hello_bound_ms"`
	LoopbackAuth bool `koanf:"loopback_auth"`
	GraceMs      int  `koanf:"grace_ms"`
	MaxInflight  int  `koanf:"max_inflight"`
}

// Exec configures the wazero executors.
type Exec struct {
	CacheDir       string `koanf:"cache_dir"`
	MaxConcurrent  int    `koanf:"max_concurrent"`
	MaxFetchBytes  int    `koanf:"max_fetch_bytes"`
	MaxStderrBytes int    `koanf:"max_stderr_bytes"`
	PoolSize       int    `koanf:"pool_size"`
}

// Env configures `airlock env`, the paired environment.
type Env struct {
	Broker       string `koanf:"broker"`
	BackoffMaxMs int    `koanf:"backoff_max_ms"`
}

// MCP bounds what MCP clients can hold on /mcp (PROTOCOL section 11).
type MCP struct {
	// MaxSessions caps open /mcp sessions and 2026-07-28 listens (the
	// stateless requests that stay open); past it initialize, or a
	// listen, is answered 503.
	MaxSessions int `koanf:"max_sessions"`
	// MaxBodyBytes caps one /mcp request body.
	MaxBodyBytes int `koanf:"max_body_bytes"`
	// SessionIdleMs closes a session that sent nothing for this long,
	// and ends a 2026-07-28 listen after as long.
	SessionIdleMs int `koanf:"session_idle_ms"`
}

// Audit is the receipt log of tool calls and admission events
// (broker/receipts).
type Audit struct {
	// Enabled writes a receipt of every call; on by default (see
	// broker/RATIONALE.md, "Why are receipts on by default, and fail
	// open?").
	Enabled bool `koanf:"enabled"`
	// Dir holds the log and its key; empty is the data directory.
	Dir string `koanf:"dir"`
	// Fsync is batch (synced within 100 ms) or always (before each
	// answer).
	Fsync string `koanf:"fsync"`
	// Fail is open (answer a call whose receipt could not be written) or
	// closed (refuse it audit-unavailable).
	Fail string `koanf:"fail"`
	// MaxFileBytes rotates the log once it would grow past it.
	MaxFileBytes int `koanf:"max_file_bytes"`
}

// AuditDir is where the receipt log is kept: audit.dir, else the data
// directory.
func (c *Config) AuditDir() string {
	if c.Audit.Dir != "" {
		return c.Audit.Dir
	}
	return c.Data
}

// Setting documents one key: its environment variable, seed aliases,
// default and meaning. The table drives defaults, the environment mapping
// and `--help`.
type Setting struct {
	Key     string
	Aliases []string // seed environment names, read when AIRLOCK_* is unset
	Default any
	Help    string
}

// Env returns the AIRLOCK_* variable for the key.
func (s Setting) Env() string {
	return "AIRLOCK_" + strings.ToUpper(strings.NewReplacer(".", "_").Replace(s.Key))
}

// Settings is every key with its default.
var Settings = []Setting{
	{Key: "listen", Default: "127.0.0.1:7420", Help: "address to listen on; port 0 picks one"},
	{Key: "metrics_listen", Default: "", Help: "serve /metrics on this address instead of the main listener"},
	{Key: "listen_unix", Default: "", Help: "also listen on this Unix socket PATH, for programs on this machine (its folder must be yours alone, such as $XDG_RUNTIME_DIR)"},
	{Key: "data", Default: DefaultDataDir(), Help: "data directory: pairings file and compilation cache"},
	{Key: "plugins", Default: "", Help: "drop-in plugins folder (empty: none)"},
	{Key: "roots", Default: map[string]any{}, Help: "root name to host directory, mounted read-only (config file or --root NAME=DIR only)"},
	{Key: plugincfg.Key, Default: map[string]any{}, Help: "values for plugins: plugin_config.ID.NAME is a string, {file: PATH} (mode 0600) or {env: VAR}; config file only, re-read on SIGHUP"},
	{Key: "plugin_trust_policy", Default: "", Help: "trust policy FILE: the keys that must sign the plugins folder's plugins (empty: DATA/trust-policy.json if it exists, else unsigned plugins are admitted); re-read on SIGHUP"},
	{Key: "no_builtin", Default: false, Help: "leave the bundled plugins out"},
	{Key: "log_level", Default: "info", Help: "debug, info, warn or error"},
	{Key: "shutdown_grace_ms", Default: 10000, Help: "how long SIGTERM waits for in-flight calls"},
	{Key: "standalone", Default: false, Help: "the standalone plugin service: listen and metrics_listen on 127.0.0.1 only (any other address exits 2, a token or not), a launch token required, local.source_proposals off"},

	{Key: "http.max_connections", Default: 4096, Help: "open connections at most (WebSockets included); past it slow or idle ones are closed first, then new ones refused 503"},
	{Key: "http.header_timeout_ms", Default: 10000, Help: "time a client has to send a request's headers"},
	{Key: "http.body_timeout_ms", Default: 10000, Help: "time a client has to send a request's body, after its headers"},
	{Key: "http.idle_timeout_ms", Default: 30000, Help: "a keep-alive connection idle this long is closed"},
	{Key: "http.write_timeout_ms", Default: 10000, Help: "time each write of a response has to reach a client that is not reading"},

	{Key: "local.tombstone_retention_seconds", Aliases: []string{"LOCAL_BROWSER_TOMBSTONE_RETENTION_SECONDS"}, Default: 3600, Help: "how long an expired session answers 410 before it is deleted"},
	{Key: "local.source_proposals", Default: true, Help: "allow sourceEdit* for sessions minted with canProposeSourceEdits"},
	{Key: "local.handshake_timeout_ms", Default: 5000, Help: "time a /local/ws client has to send hello"},
	{Key: "local.max_frame_bytes", Default: 16 << 20, Help: "largest /local/ws frame"},
	{Key: "local.outbound_queue", Default: 256, Help: "messages queued per connection before a slow view is dropped"},
	{Key: "local.outbound_queue_bytes", Default: 32 << 20, Help: "bytes queued per connection before a slow view is dropped (at least local.max_frame_bytes); views may fill half a host's queue"},
	{Key: "local.max_requests_per_view", Default: 64, Help: "requests one view may have in flight; past it they are refused busy"},
	{Key: "local.max_sessions", Default: 10000, Help: "live sessions at most; minting past it answers 503"},
	{Key: "local.max_views_per_session", Default: 1024, Help: "view connections per session at most"},
	{Key: "local.view_key", Default: true, Help: "views (and page executors) must also offer the view key bootstrap returned; 0 (cookie only, as the seed) is logged as a warning"},
	{Key: "local.max_tombstones", Default: 10000, Help: "expired sessions kept answering 410 at most; past it the oldest is deleted early"},

	{Key: "channel.hello_bound_ms", Aliases: []string{"VOICEBOX_HELLO_BOUND_MS"}, Default: 5000, Help: "time an environment has to send its bearer hello"},
	{Key: "channel.loopback_auth", Aliases: []string{"VOICEBOX_LOOPBACK_AUTH"}, Default: true, Help: "require the view cookie of a live session launched from the page's Origin; 0 (Origin only) is logged as a warning"},
	{Key: "channel.grace_ms", Default: 1000, Help: "wait past bounds.timeoutMs before settling page-timeout or machine-timeout"},
	{Key: "channel.max_inflight", Default: 1024, Help: "calls in flight per peer at most; past it calls are refused overloaded"},

	{Key: "exec.cache_dir", Default: "", Help: "wazero compilation cache (empty: DATA/compile-cache)"},
	{Key: "exec.max_concurrent", Default: 16, Help: "calls running at once per descriptor; past it calls are refused overloaded"},
	{Key: "exec.max_fetch_bytes", Default: 8 << 20, Help: "largest response body a guest fetch may read"},
	{Key: "exec.max_stderr_bytes", Default: 64 << 10, Help: "guest stderr kept per call for the operator's log"},
	{Key: "exec.pool_size", Default: 4, Help: "idle reactor instances kept per descriptor"},

	{Key: "env.broker", Default: "", Help: "airlock env: the broker's channel URL (ws://HOST:PORT/channel)"},
	{Key: "env.backoff_max_ms", Default: 10000, Help: "airlock env: longest wait between reconnects"},

	{Key: "mcp.max_sessions", Default: 64, Help: "open /mcp sessions (and 2026-07-28 listens) at most; past it initialize answers 503"},
	{Key: "mcp.max_body_bytes", Default: 16 << 20, Help: "largest /mcp request body"},
	{Key: "mcp.session_idle_ms", Default: 30 * 60 * 1000, Help: "an /mcp session that sends nothing this long is closed, and a 2026-07-28 listen ended"},

	{Key: "audit.enabled", Default: true, Help: "write a receipt of every tool call and admission event (receipts.jsonl: chained, the args only as an HMAC)"},
	{Key: "audit.dir", Default: "", Help: "folder of the receipt log and its key (empty: the data directory)"},
	{Key: "audit.fsync", Default: "batch", Help: "batch (synced within 100 ms) or always (synced before each answer)"},
	{Key: "audit.fail", Default: "open", Help: "open (answer a call whose receipt could not be written; logged and counted) or closed (refuse it audit-unavailable)"},
	{Key: "audit.max_file_bytes", Default: 64 << 20, Help: "rotate receipts.jsonl to receipts-<first seq>.jsonl once it would grow past this"},
}

// DefaultDataDir is $XDG_STATE_HOME/airlock, or ~/.local/state/airlock.
func DefaultDataDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "airlock")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "airlock")
	}
	return filepath.Join(os.TempDir(), "airlock")
}

// Sources are the layers above the defaults.
type Sources struct {
	File    string            // YAML config file; empty for none
	Environ []string          // KEY=VALUE pairs, as os.Environ
	Flags   map[string]any    // keys set on the command line
	Roots   map[string]string // --root NAME=DIR, merged over roots from other layers
}

// Load builds a Config from the defaults and sources and validates it.
func Load(src Sources) (*Config, error) {
	// The layers are loaded on their own, then merged over the defaults,
	// so that what a layer set can be told from a default (the standalone
	// profile refuses source proposals turned on, not left on).
	k := koanf.New(".")
	o := origin{file: src.File, environ: src.Environ}
	if src.File != "" {
		data, err := loadFile(k, src.File)
		if err != nil {
			return nil, err
		}
		o.data = data
	}
	// The plugin values leave the tree before anything else sees it: they
	// are resolved on their own and never dumped.
	rawPlugins := k.Get(plugincfg.Key)
	k.Delete(plugincfg.Key)
	warnings, err := loadEnviron(k, src.Environ, plugincfg.EnvRefs(rawPlugins))
	if err != nil {
		return nil, err
	}
	if err := k.Load(confmap.Provider(src.Flags, "."), nil); err != nil {
		return nil, fmt.Errorf("config: flags: %w", err)
	}
	proposalsSet := k.Exists(sourceProposals)
	k, err = withDefaults(k)
	if err != nil {
		return nil, err
	}
	if k.Bool("standalone") {
		if proposalsSet && k.Bool(sourceProposals) {
			return nil, fmt.Errorf("config: %s: the standalone profile serves no source proposals; leave it unset or false", sourceProposals)
		}
		if err := k.Set(sourceProposals, false); err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
	}
	var c Config
	var md mapstructure.Metadata
	err = k.UnmarshalWithConf("", &c, koanf.UnmarshalConf{DecoderConfig: &mapstructure.DecoderConfig{
		WeaklyTypedInput: true,
		Metadata:         &md,
		Result:           &c,
		TagName:          "koanf",
	}})
	if err != nil {
		return nil, typeError(err, o, k.Get)
	}
	if len(md.Unused) > 0 {
		return nil, unknownKeys(o, md.Unused)
	}
	for name, dir := range src.Roots {
		if c.Roots == nil {
			c.Roots = map[string]string{}
		}
		c.Roots[name] = dir
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.PluginConfig, err = plugincfg.Resolve(rawPlugins, src.Environ); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c.Warnings = warnings
	c.dump = k.All()
	c.reread = func() (*plugincfg.Values, error) { return rereadPluginConfig(src.File, src.Environ) }
	return &c, nil
}

// sourceProposals is the key the standalone profile turns off.
const sourceProposals = "local.source_proposals"

// withDefaults is layers merged over every setting's default but the
// plugin values', which Load has taken out of the tree.
func withDefaults(layers *koanf.Koanf) (*koanf.Koanf, error) {
	defaults := map[string]any{}
	for _, s := range Settings {
		if s.Key != plugincfg.Key {
			defaults[s.Key] = s.Default
		}
	}
	k := koanf.New(".")
	if err := k.Load(confmap.Provider(defaults, "."), nil); err != nil {
		return nil, fmt.Errorf("config: defaults: %w", err)
	}
	if err := k.Merge(layers); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return k, nil
}

// ReadPluginConfig reads the config file's plugin_config section again,
// with the files and the environment it names, as Load did: SIGHUP takes
// a changed value or a rotated secret file without a restart. Nothing
// else of the file is re-read. On an error the caller keeps the values it
// has (plugins/RATIONALE.md, "Why are plugin values re-read on SIGHUP, and
// looked up per call?").
func (c *Config) ReadPluginConfig() (*plugincfg.Values, error) {
	if c.reread == nil { // not made by Load
		return c.PluginConfig, nil
	}
	return c.reread()
}

func rereadPluginConfig(path string, environ []string) (*plugincfg.Values, error) {
	if path == "" {
		return plugincfg.Resolve(nil, nil)
	}
	k := koanf.New(".")
	if _, err := loadFile(k, path); err != nil {
		return nil, err
	}
	v, err := plugincfg.Resolve(k.Get(plugincfg.Key), environ)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return v, nil
}

// MaxFileBytes bounds the YAML config file (PROTOCOL section 1.6): a
// few settings are small.
const MaxFileBytes = 1 << 20

// loadFile loads the YAML config file at path into k, read with the
// checks every file Airlock is pointed at gets (filecheck: a regular
// file, no link, at most MaxFileBytes), and returns its content (for the
// lines of a message).
func loadFile(k *koanf.Koanf, path string) ([]byte, error) {
	data, err := filecheck.ReadPath(path, MaxFileBytes)
	if errors.Is(err, filecheck.ErrRefused) {
		return nil, fmt.Errorf("config: %w", err) // it names the file
	}
	if err == nil {
		err = k.Load(fileBytes(data), yaml.Parser())
	}
	if err != nil {
		return nil, fmt.Errorf("config: file %s: %w", path, err)
	}
	return data, nil
}

// fileBytes is the config file's content as a koanf provider.
type fileBytes []byte

func (b fileBytes) ReadBytes() ([]byte, error) { return b, nil }
func (b fileBytes) Read() (map[string]any, error) {
	return nil, errors.New("config: the file is read with a parser")
}

// secretEnv are the variables package secret reads (the launch token, the
// environment's bearer): not settings, and not typos either.
var secretEnv = func() map[string]bool {
	m := map[string]bool{}
	for _, s := range []secret.Source{secret.LaunchToken, secret.Bearer} {
		for _, name := range s.Env {
			m[name] = true
		}
	}
	return m
}()

// loadEnviron loads the seed aliases, then AIRLOCK_* over them, with koanf's
// env provider. An AIRLOCK_* variable that names no setting (nor a secret,
// nor a plugin value's {env: NAME} in refs) is returned as a warning that
// names the nearest setting's variable when one is close: a typo is said
// out loud, and a variable of the launcher's own (AIRLOCK_BIN) does not
// stop the broker. A bad value of a known setting stays an error.
func loadEnviron(k *koanf.Koanf, environ []string, refs map[string]bool) ([]string, error) {
	byEnv, byAlias := map[string]string{}, map[string]string{}
	for _, s := range Settings {
		if s.Key == "roots" || s.Key == plugincfg.Key {
			continue // a map: set it in the file (or with --root)
		}
		byEnv[s.Env()] = s.Key
		for _, a := range s.Aliases {
			byAlias[a] = s.Key
		}
	}
	environFunc := func() []string { return environ }
	aliases := env.Provider(".", env.Opt{EnvironFunc: environFunc, TransformFunc: func(name, v string) (string, any) {
		return byAlias[name], v
	}})
	if err := k.Load(aliases, nil); err != nil {
		return nil, fmt.Errorf("config: environment: %w", err)
	}
	var unknown []string
	own := env.Provider(".", env.Opt{Prefix: "AIRLOCK_", EnvironFunc: environFunc, TransformFunc: func(name, v string) (string, any) {
		key, ok := byEnv[name]
		if !ok && !secretEnv[name] && !refs[name] {
			unknown = append(unknown, name)
		}
		return key, v
	}})
	if err := k.Load(own, nil); err != nil {
		return nil, fmt.Errorf("config: environment: %w", err)
	}
	sort.Strings(unknown)
	warnings := make([]string, 0, len(unknown))
	names := make([]string, 0, len(byEnv)) // the settings' variables, for a suggestion
	for e := range byEnv {
		names = append(names, strings.TrimPrefix(e, "AIRLOCK_"))
	}
	for _, name := range unknown {
		w := fmt.Sprintf("environment variable %s is not a setting and is ignored", name)
		if near := suggest.Nearest(strings.TrimPrefix(name, "AIRLOCK_"), names); near != "" {
			w += fmt.Sprintf("; did you mean AIRLOCK_%s?", near)
		}
		warnings = append(warnings, w)
	}
	return warnings, nil
}

// Validate checks every setting in one place and returns the first problem
// as a one-line error.
func (c *Config) Validate() error {
	if err := checkAddr("listen", c.Listen); err != nil {
		return err
	}
	if c.MetricsListen != "" {
		if err := checkAddr("metrics_listen", c.MetricsListen); err != nil {
			return err
		}
	}
	if c.ListenUnix != "" && !filepath.IsAbs(c.ListenUnix) {
		return fmt.Errorf("config: listen_unix: %q is not an absolute path", c.ListenUnix)
	}
	if c.Standalone {
		if err := standaloneAddr("listen", c.Listen); err != nil {
			return err
		}
		if err := standaloneAddr("metrics_listen", c.MetricsListen); err != nil && c.MetricsListen != "" {
			return err
		}
	}
	if c.Data == "" {
		return fmt.Errorf("config: data: must be set")
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("config: log_level: must be debug, info, warn or error")
	}
	for name, dir := range c.Roots {
		if name == "" || dir == "" {
			return fmt.Errorf("config: roots: name and directory must both be set")
		}
	}
	positive := []struct {
		key string
		v   int
	}{
		{"shutdown_grace_ms", c.ShutdownGraceMs},
		{"http.max_connections", c.HTTP.MaxConnections},
		{"http.header_timeout_ms", c.HTTP.HeaderTimeoutMs},
		{"http.body_timeout_ms", c.HTTP.BodyTimeoutMs},
		{"http.idle_timeout_ms", c.HTTP.IdleTimeoutMs},
		{"http.write_timeout_ms", c.HTTP.WriteTimeoutMs},
		{"local.tombstone_retention_seconds", c.Local.TombstoneRetentionSeconds},
		{"local.handshake_timeout_ms", c.Local.HandshakeTimeoutMs},
		{"local.max_frame_bytes", c.Local.MaxFrameBytes},
		{"local.outbound_queue", c.Local.OutboundQueue},
		{"local.outbound_queue_bytes", c.Local.OutboundQueueBytes},
		{"local.max_requests_per_view", c.Local.MaxRequestsPerView},
		{"local.max_tombstones", c.Local.MaxTombstones},
		{"local.max_sessions", c.Local.MaxSessions},
		{"local.max_views_per_session", c.Local.MaxViewsPerSession},
		{"channel.hello_bound_ms", c.Channel.HelloBoundMs},
		{"channel.grace_ms", c.Channel.GraceMs},
		{"channel.max_inflight", c.Channel.MaxInflight},
		{"exec.max_concurrent", c.Exec.MaxConcurrent},
		{"exec.max_fetch_bytes", c.Exec.MaxFetchBytes},
		{"exec.max_stderr_bytes", c.Exec.MaxStderrBytes},
		{"exec.pool_size", c.Exec.PoolSize},
		{"env.backoff_max_ms", c.Env.BackoffMaxMs},
		{"mcp.max_sessions", c.MCP.MaxSessions},
		{"mcp.max_body_bytes", c.MCP.MaxBodyBytes},
		{"mcp.session_idle_ms", c.MCP.SessionIdleMs},
	}
	for _, p := range positive {
		if p.v <= 0 {
			return fmt.Errorf("config: %s: must be a positive number", p.key)
		}
	}
	if c.Audit.Fsync != "batch" && c.Audit.Fsync != "always" {
		return fmt.Errorf("config: audit.fsync: must be batch or always")
	}
	if c.Audit.Fail != "open" && c.Audit.Fail != "closed" {
		return fmt.Errorf("config: audit.fail: must be open or closed")
	}
	if c.Audit.MaxFileBytes < 1<<16 {
		return fmt.Errorf("config: audit.max_file_bytes: must be at least 65536")
	}
	if c.Local.OutboundQueueBytes < c.Local.MaxFrameBytes {
		return fmt.Errorf("config: local.outbound_queue_bytes: must be at least local.max_frame_bytes")
	}
	return nil
}

func checkAddr(key, addr string) error {
	if strings.HasPrefix(addr, "unix:") {
		return fmt.Errorf("config: %s: a Unix socket is listen_unix (serve --listen-unix PATH), which listens beside the TCP address browsers need", key)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("config: %s: %q is not HOST:PORT", key, addr)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("config: %s: %q has no valid port", key, addr)
	}
	if host == "" {
		return fmt.Errorf("config: %s: give an explicit host (127.0.0.1 for loopback)", key)
	}
	return nil
}

// standaloneAddr refuses an address the standalone profile may not bind:
// anything but 127.0.0.1, with or without a token.
func standaloneAddr(key, addr string) error {
	if host, _, err := net.SplitHostPort(addr); err != nil || host != "127.0.0.1" {
		return fmt.Errorf("config: %s: the standalone profile binds 127.0.0.1 only, not %q", key, addr)
	}
	return nil
}

// IsLoopback reports whether addr's host is a loopback address or
// "localhost".
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// Dump returns the merged settings as sorted KEY=VALUE lines, for
// `--print-config`. It holds no secrets because no layer carries one: the
// plugin values are listed by name, each as "(redacted)".
func (c *Config) Dump() []string {
	var lines []string
	for key, v := range c.dump {
		lines = append(lines, fmt.Sprintf("%s=%v", key, v))
	}
	for _, id := range c.PluginConfig.Plugins() {
		for _, name := range c.PluginConfig.Names(id) {
			lines = append(lines, fmt.Sprintf("%s.%s.%s=(redacted)", plugincfg.Key, id, name))
		}
	}
	sort.Strings(lines)
	return lines
}

// oneLine flattens a multi-error (mapstructure joins with newlines) so the
// command prints one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
}
