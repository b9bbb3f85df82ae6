package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/airlock/airlock/config"
)

// settingsFlagsFor is every settings flag, and --shutdown-grace-ms, an
// int bound to shutdown_grace_ms with a default of its own, parsed from
// args, with file as the config file and env as the environment.
func settingsFlagsFor(t *testing.T, file string, env []string, args ...string) *config.Config {
	t.Helper()
	defer func(e func() []string) { environ = e }(environ)
	environ = func() []string { return env }
	fs := pflag.NewFlagSet("settings", pflag.ContinueOnError)
	sf := addSettingsFlags(fs, "listen", "metrics-listen", "data", "plugins", "root", "no-builtin", "standalone", "log-level", "broker")
	fs.Int("shutdown-grace-ms", 7, "")
	bindSetting(fs, "shutdown-grace-ms", "shutdown_grace_ms")
	if file != "" {
		args = append(args, "--config", file)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg, err := sf.load()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestFlagsOverrideOnlyWhenGiven: a flag not on the command line leaves
// the file's and the environment's value (its own default, an empty
// string, false or 7, hides nothing); a flag given wins over both.
func TestFlagsOverrideOnlyWhenGiven(t *testing.T) {
	file := filepath.Join(t.TempDir(), "airlock.yaml")
	yaml := "listen: 127.0.0.1:9001\nshutdown_grace_ms: 2500\nenv:\n  broker: ws://127.0.0.1:9002/channel\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"AIRLOCK_LOG_LEVEL=debug", "AIRLOCK_NO_BUILTIN=true", "AIRLOCK_DATA=" + t.TempDir()}

	cfg := settingsFlagsFor(t, file, env)
	if cfg.Listen != "127.0.0.1:9001" || cfg.ShutdownGraceMs != 2500 || cfg.Env.Broker != "ws://127.0.0.1:9002/channel" {
		t.Errorf("flags not given hid the file: listen %q, shutdown_grace_ms %d, env.broker %q", cfg.Listen, cfg.ShutdownGraceMs, cfg.Env.Broker)
	}
	if cfg.LogLevel != "debug" || !cfg.NoBuiltin {
		t.Errorf("flags not given hid the environment: log_level %q, no_builtin %v", cfg.LogLevel, cfg.NoBuiltin)
	}
	if cfg.MetricsListen != "" || cfg.Standalone {
		t.Errorf("flags not given hid the defaults: metrics_listen %q, standalone %v", cfg.MetricsListen, cfg.Standalone)
	}

	data := t.TempDir()
	cfg = settingsFlagsFor(t, file, env,
		"--listen", "127.0.0.1:9003", "--shutdown-grace-ms", "40", "--broker", "ws://127.0.0.1:9004/channel",
		"--log-level", "warn", "--no-builtin=false", "--data", data)
	if cfg.Listen != "127.0.0.1:9003" || cfg.ShutdownGraceMs != 40 || cfg.Env.Broker != "ws://127.0.0.1:9004/channel" {
		t.Errorf("flags given lost to the file: listen %q, shutdown_grace_ms %d, env.broker %q", cfg.Listen, cfg.ShutdownGraceMs, cfg.Env.Broker)
	}
	if cfg.LogLevel != "warn" || cfg.NoBuiltin || cfg.Data != data {
		t.Errorf("flags given lost to the environment: log_level %q, no_builtin %v, data %q", cfg.LogLevel, cfg.NoBuiltin, cfg.Data)
	}
}

// TestSettingsFlagKeys: each settings flag sets its config key.
func TestSettingsFlagKeys(t *testing.T) {
	dir := t.TempDir()
	cfg := settingsFlagsFor(t, "", nil,
		"--listen", "127.0.0.1:9005", "--metrics-listen", "127.0.0.1:9006", "--data", dir, "--plugins", dir,
		"--root", "notes="+dir, "--no-builtin", "--standalone", "--log-level", "error", "--broker", "ws://127.0.0.1:9007/channel")
	for flag, got := range map[string]bool{
		"listen":         cfg.Listen == "127.0.0.1:9005",
		"metrics-listen": cfg.MetricsListen == "127.0.0.1:9006",
		"data":           cfg.Data == dir,
		"plugins":        cfg.Plugins == dir,
		"root":           cfg.Roots["notes"] == dir,
		"no-builtin":     cfg.NoBuiltin,
		"standalone":     cfg.Standalone,
		"log-level":      cfg.LogLevel == "error",
		"broker":         cfg.Env.Broker == "ws://127.0.0.1:9007/channel",
	} {
		if !got {
			t.Errorf("--%s did not set its setting: %+v", flag, cfg)
		}
	}
}

// TestSettingsHelpListsTheCommandsOwn: each command's help lists the
// settings it uses and no other; every entry of a list names a setting,
// and every setting is some command's.
func TestSettingsHelpListsTheCommandsOwn(t *testing.T) {
	lists := map[string][]string{"serve": serveSettings, "mcp": mcpSettings, "env": envSettings}
	for name, keys := range lists {
		for _, k := range keys {
			found := false
			for _, st := range config.Settings {
				found = found || usesSetting([]string{k}, st.Key)
			}
			if !found {
				t.Errorf("%s's settings name %q, which is no setting", name, k)
			}
		}
	}
	for _, st := range config.Settings {
		if !usesSetting(serveSettings, st.Key) && !usesSetting(envSettings, st.Key) {
			t.Errorf("%s is no command's setting", st.Key)
		}
	}
	mcpHelp := settingsHelp(mcpSettings)
	for _, absent := range []string{"listen", "http.max_connections", "local.max_sessions", "mcp.max_sessions", "env.broker", "standalone"} {
		if strings.Contains(mcpHelp, "\n  "+absent+"\n") {
			t.Errorf("mcp's help lists %s, which it does not use", absent)
		}
	}
	if !strings.Contains(mcpHelp, "\n  exec.pool_size\n") || strings.Contains(settingsHelp(serveSettings), "env.broker") {
		t.Errorf("mcp's help lacks exec.pool_size, or serve's lists env.broker")
	}
}
