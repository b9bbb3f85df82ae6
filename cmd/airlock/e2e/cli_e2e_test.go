package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/airlock/airlock/cmd/airlock/internal/exitcode"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins"
)

// The command line as a user meets it (PROTOCOL section 9, README.md's
// "Commands" and "Exit codes"): each command's exit codes from the one
// table, help on stdout, completion scripts, the version, and usage
// errors of one line that name what is wrong.

// cliCase is one command line of the real binary and what it must do.
type cliCase struct {
	name  string // the command's path, then ": " and the situation
	args  []string
	env   []string
	stdin string
	code  int
	out   string // stdout contains this
	err   string // stderr contains this
}

// runCLIStdin is runCLI with stdin.
func runCLIStdin(t *testing.T, env []string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = append(append(baseEnv(t), "AIRLOCK_EXEC_CACHE_DIR="+cacheDir), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return exitCode(err), stdout.String(), stderr.String()
}

// commandPaths is every command a user can name, read from the
// binary's own help ("Available Commands:" of each command, recursively):
// a command added to the binary is found here, and
// TestExitCodesOfEveryCommand fails until it has a row.
func commandPaths(t *testing.T) []string {
	var paths []string
	var walk func(path []string)
	walk = func(path []string) {
		paths = append(paths, strings.Join(append([]string{"airlock"}, path...), " "))
		if len(path) > 0 && path[len(path)-1] == "help" {
			return
		}
		_, out, _ := runCLI(t, nil, append(path, "--help")...)
		_, list, ok := strings.Cut(out, "\nAvailable Commands:\n")
		if !ok {
			return
		}
		list, _, _ = strings.Cut(list, "\n\n")
		for _, line := range strings.Split(list, "\n") {
			if name, _, _ := strings.Cut(strings.TrimSpace(line), " "); name != "" {
				walk(append(append([]string(nil), path...), name))
			}
		}
	}
	walk(nil)
	return paths
}

// TestExitCodesOfEveryCommand runs every command of the binary in the
// situations of the exit-code table: 0 ok, 1 failure, 2 usage or config
// (one stderr line naming what is wrong), 3 refused. The same missing
// launch token is exit 2 from every command that talks to a broker, and
// a wrong one is exit 3. serve, env and demo run until stopped: their
// exit 0 on SIGTERM is every startServe's and startEnv's cleanup, env's 3
// is TestChannelRevokedWhileConnected and its 1 TestEnvReplacedExitsOne.
func TestExitCodesOfEveryCommand(t *testing.T) {
	t.Parallel()
	w := newFixtureWorld(t)
	url, tok := w.p.URL(), tokenEnv()
	wrong := []string{"AIRLOCK_LOCAL_TOKEN=wrong-e2e-token-0123456789abcdef0123456789"}
	unreachable := "http://127.0.0.1:" + closedPort(t)
	data := filepath.Join(t.TempDir(), "data")
	argsFile := writeFile(t, "args.json", `{"x": 2}`)
	badYAML := writeFile(t, "airlock.yaml", "listen: 127.0.0.1:0\nmcp:\n  foo: 1\n")
	missingRoot := writeFile(t, "roots.yaml", "roots:\n  notes: /nonexistent/notes\n")
	broken := t.TempDir()
	must(t, plugins.WriteFolder(broken, fxManifest("broken", w.bounds), []byte("not wasm at all")))
	unreachableRegistry := "127.0.0.1:" + closedPort(t)
	rehashed := filepath.Join(t.TempDir(), "rehashed")
	must(t, plugins.WriteFolder(filepath.Dir(rehashed), fxManifest("rehashed", w.bounds), []byte("one module")))
	must(t, os.WriteFile(filepath.Join(rehashed, "guest.wasm"), []byte("another module"), 0o644))
	noBuiltin := func(args ...string) []string { return append(args, "--no-builtin", "--data", t.TempDir()) }
	missingToken := "no launch token: set AIRLOCK_LOCAL_TOKEN (or TENSORVIZ_LOCAL_TOKEN)"
	receiptsDir, tampered := receiptsFixture(t)

	cases := []cliCase{
		{name: "airlock: no command", code: exitcode.Usage, err: "missing command: audit, build, call, completion,"},
		{name: "airlock: unknown command", args: []string{"sevre"}, code: exitcode.Usage, err: `unknown command "sevre"; did you mean serve?`},
		{name: "airlock: --help", args: []string{"--help"}, code: exitcode.OK, out: "Exit codes:"},
		{name: "airlock: --version", args: []string{"--version"}, code: exitcode.OK, out: "wazero"},

		{name: "airlock help: a command", args: []string{"help", "pair", "add"}, code: exitcode.OK, out: "airlock pair add NAME"},
		{name: "airlock help: no such command", args: []string{"help", "nosuch"}, code: exitcode.Usage, err: `no command "nosuch"`},

		{name: "airlock completion: no shell", args: []string{"completion"}, code: exitcode.Usage, err: "missing command: bash, fish, powershell, zsh"},
		{name: "airlock completion: unknown shell", args: []string{"completion", "tcsh"}, code: exitcode.Usage, err: `unknown command "tcsh"`},
		{name: "airlock completion bash: script", args: []string{"completion", "bash"}, code: exitcode.OK, out: "airlock"},
		{name: "airlock completion bash: extra argument", args: []string{"completion", "bash", "x"}, code: exitcode.Usage, err: "x"},
		{name: "airlock completion zsh: script", args: []string{"completion", "zsh"}, code: exitcode.OK, out: "#compdef airlock"},
		{name: "airlock completion fish: script", args: []string{"completion", "fish"}, code: exitcode.OK, out: "complete -c airlock"},
		{name: "airlock completion powershell: script", args: []string{"completion", "powershell"}, code: exitcode.OK, out: "airlock"},

		{name: "airlock version: text", args: []string{"version"}, code: exitcode.OK, out: "wazero  v"},
		{name: "airlock version: json", args: []string{"version", "--json"}, code: exitcode.OK, out: `"wazero":"v`},
		{name: "airlock version: argument", args: []string{"version", "x"}, code: exitcode.Usage, err: "unexpected argument"},

		{name: "airlock serve: token as argument", args: noBuiltin("serve", "--listen", "127.0.0.1:0", testToken), code: exitcode.Usage, err: "unexpected argument (the launch token is never an argument"},
		{name: "airlock serve: bad listen", args: noBuiltin("serve", "--listen", "nonsense"), code: exitcode.Usage, err: "listen"},
		{name: "airlock serve: unknown YAML key", args: noBuiltin("serve", "--config", badYAML), code: exitcode.Usage, err: "config: " + badYAML + `:3: unknown key "mcp.foo"`},
		{name: "airlock serve: unknown flag", args: []string{"serve", "--tokne", "x"}, code: exitcode.Usage, err: "unknown flag: --tokne"},
		{name: "airlock serve: standalone, public listen with a token", args: noBuiltin("serve", "--standalone", "--listen", "0.0.0.0:0"), env: tok, code: exitcode.Usage, err: "the standalone profile binds 127.0.0.1 only"},
		{name: "airlock serve: standalone, no token", args: noBuiltin("serve", "--standalone", "--listen", "127.0.0.1:0"), code: exitcode.Usage, err: "the standalone profile needs a launch token"},
		{name: "airlock serve: no plugins folder", args: noBuiltin("serve", "--listen", "127.0.0.1:0", "--plugins", "/nonexistent/plugins"), code: exitcode.Usage, err: "airlock serve: --plugins /nonexistent/plugins: no such folder"},
		{name: "airlock serve: plugins folder from the environment", args: noBuiltin("serve", "--listen", "127.0.0.1:0"), env: []string{"AIRLOCK_PLUGINS=/nonexistent/plugins"}, code: exitcode.Usage, err: "airlock serve: AIRLOCK_PLUGINS /nonexistent/plugins: no such folder"},
		{name: "airlock serve: root from the config file", args: noBuiltin("serve", "--listen", "127.0.0.1:0", "--config", missingRoot), code: exitcode.Usage, err: "airlock serve: config " + missingRoot + ": roots.notes /nonexistent/notes: no such folder"},
		{name: "airlock serve: no config file", args: noBuiltin("serve", "--config", "/nonexistent/airlock.yaml"), code: exitcode.Usage, err: "airlock serve: --config /nonexistent/airlock.yaml: no such file"},
		{name: "airlock serve: no token file", args: noBuiltin("serve", "--token-file", "/nonexistent/token"), code: exitcode.Usage, err: "airlock serve: --token-file /nonexistent/token: no such file"},
		{name: "airlock serve: profile in no folder", args: noBuiltin("serve", "--listen", "127.0.0.1:0", "--cpuprofile", "/nonexistent/cpu.pprof"), code: exitcode.Usage, err: "airlock serve: --cpuprofile /nonexistent/cpu.pprof: no such folder"},
		{name: "airlock serve: data is a file", args: []string{"serve", "--no-builtin", "--data", argsFile}, code: exitcode.Usage, err: "airlock serve: --data " + argsFile + ": not a folder"},

		{name: "airlock demo: argument", args: []string{"demo", "x"}, code: exitcode.Usage, err: "unexpected argument"},
		{name: "airlock demo: plugins folder from the environment", args: []string{"demo"}, env: []string{"AIRLOCK_PLUGINS=/nonexistent/plugins"}, code: exitcode.Usage, err: "airlock demo: AIRLOCK_PLUGINS /nonexistent/plugins: no such folder"},
		{name: "airlock demo: bad listen", args: []string{"demo", "--listen", "nonsense"}, code: exitcode.Usage, err: "listen"},

		{name: "airlock env: no bearer", args: []string{"env", "--broker", "ws://127.0.0.1:1/channel", "--data", t.TempDir()}, code: exitcode.Usage, err: "no bearer: set AIRLOCK_BEARER"},
		{name: "airlock env: no bearer file", args: []string{"env", "--broker", "ws://127.0.0.1:1/channel", "--data", t.TempDir(), "--bearer-file", "/nonexistent/bearer"}, code: exitcode.Usage, err: "airlock env: --bearer-file /nonexistent/bearer: no such file"},
		{name: "airlock env: no plugins folder", args: []string{"env", "--broker", "ws://127.0.0.1:1/channel", "--data", t.TempDir(), "--plugins", "/nonexistent/plugins"}, env: []string{"AIRLOCK_BEARER=vbx_x"}, code: exitcode.Usage, err: "airlock env: --plugins /nonexistent/plugins: no such folder"},
		{name: "airlock env: http broker", args: []string{"env", "--broker", url, "--data", t.TempDir()}, env: []string{"AIRLOCK_BEARER=vbx_x"}, code: exitcode.Usage, err: "--broker must be the broker's channel URL"},

		{name: "airlock pair: no command", args: []string{"pair"}, code: exitcode.Usage, err: "missing command: add, ls, rm"},
		{name: "airlock pair: unknown command", args: []string{"pair", "show", "--data", data}, code: exitcode.Usage, err: `unknown command "show"`},
		{name: "airlock pair add: ok", args: []string{"pair", "add", "lab", "--data", data}, code: exitcode.OK, out: "vbx_"},
		{name: "airlock pair add: twice", args: []string{"pair", "add", "lab", "--data", data}, code: exitcode.Failed, err: "already paired"},
		{name: "airlock pair add: bad name", args: []string{"pair", "add", "Lab Top", "--data", data}, code: exitcode.Usage, err: "a name must match"},
		{name: "airlock pair add: no name", args: []string{"pair", "add", "--data", data}, code: exitcode.Usage, err: "missing NAME"},
		{name: "airlock pair ls: text", args: []string{"pair", "ls", "--data", data}, code: exitcode.OK, out: "lab\t"},
		{name: "airlock pair ls: data is a file", args: []string{"pair", "ls", "--data", argsFile}, code: exitcode.Usage, err: "airlock pair ls: --data " + argsFile + ": not a folder"},
		{name: "airlock pair ls: json", args: []string{"pair", "ls", "--data", data, "--json"}, code: exitcode.OK, out: `"name": "lab"`},
		{name: "airlock pair rm: unknown", args: []string{"pair", "rm", "nobody", "--data", data}, code: exitcode.Failed, err: "no pairing"},
		{name: "airlock pair rm: ok", args: []string{"pair", "rm", "lab", "--data", data}, code: exitcode.OK, err: "revoked"},

		{name: "airlock audit: no command", args: []string{"audit"}, code: exitcode.Usage, err: "missing command: tail, verify"},
		{name: "airlock audit verify: ok", args: []string{"audit", "verify", "--data", receiptsDir}, code: exitcode.OK, out: "ok: 3 records in 1 files"},
		{name: "airlock audit verify: broken", args: []string{"audit", "verify", tampered}, code: exitcode.Refused, err: tampered + ":3: prev does not match"},
		{name: "airlock audit verify: no receipts", args: []string{"audit", "verify", "--data", t.TempDir()}, code: exitcode.Failed, err: "no receipt files"},
		{name: "airlock audit verify: no such FILE", args: []string{"audit", "verify", "/nonexistent/receipts.jsonl"}, code: exitcode.Usage, err: "/nonexistent/receipts.jsonl: no such file"},
		{name: "airlock audit tail: ok", args: []string{"audit", "tail", "-n", "1", "--data", receiptsDir}, code: exitcode.OK, out: "3 "},
		{name: "airlock audit tail: bad -n", args: []string{"audit", "tail", "-n", "0", "--data", receiptsDir}, code: exitcode.Usage, err: "-n: must be at least 1"},

		{name: "airlock tools: broker", args: []string{"tools", "--broker", url}, env: tok, code: exitcode.OK, out: "fxloop"},
		{name: "airlock tools: json", args: []string{"tools", "--broker", url, "--json"}, env: tok, code: exitcode.OK, out: `"descriptors"`},
		{name: "airlock tools: no token", args: []string{"tools", "--broker", url}, code: exitcode.Usage, err: missingToken},
		{name: "airlock tools: wrong token", args: []string{"tools", "--broker", url}, env: wrong, code: exitcode.Refused, err: "401"},
		{name: "airlock tools: unreachable", args: []string{"tools", "--broker", unreachable}, env: tok, code: exitcode.Failed, err: "unreachable"},
		{name: "airlock tools: bad broker URL", args: []string{"tools", "--broker", "ftp://x"}, env: tok, code: exitcode.Usage, err: "--broker must be an http URL"},
		{name: "airlock tools: refused plugin", args: noBuiltin("tools", "--plugins", broken), code: exitcode.Refused, out: "REFUSED"},
		{name: "airlock tools: no plugins folder", args: noBuiltin("tools", "--plugins", "/nonexistent/plugins"), code: exitcode.Usage, err: "airlock tools: --plugins /nonexistent/plugins: no such folder"},
		{name: "airlock tools: plugins is a file", args: noBuiltin("tools", "--plugins", argsFile), code: exitcode.Usage, err: "airlock tools: --plugins " + argsFile + ": not a folder"},
		{name: "airlock tools: no root folder", args: noBuiltin("tools", "--plugins", broken, "--root", "notes=/nonexistent/notes"), code: exitcode.Usage, err: "airlock tools: --root notes=/nonexistent/notes: no such folder"},

		{name: "airlock call: ok", args: []string{"call", "echo", "--broker", url, "--args", `{"x":1}`}, env: tok, code: exitcode.OK, out: `"ok": true`},
		{name: "airlock call: args from a file", args: []string{"call", "echo", "--broker", url, "--args", "@" + argsFile}, env: tok, code: exitcode.OK, out: `"x": 2`},
		{name: "airlock call: args from stdin", args: []string{"call", "echo", "--broker", url, "--args", "-"}, stdin: `{"x": 3}`, env: tok, code: exitcode.OK, out: `"x": 3`},
		{name: "airlock call: refused", args: []string{"call", "loop", "--broker", url}, env: tok, code: exitcode.Refused, out: `"refused": "exec-timeout"`},
		{name: "airlock call: unknown tool", args: []string{"call", "nosuchtool", "--broker", url}, env: tok, code: exitcode.Failed, err: "nosuchtool"},
		{name: "airlock call: no tool", args: []string{"call", "--broker", url}, env: tok, code: exitcode.Usage, err: "missing TOOL"},
		{name: "airlock call: bad args", args: []string{"call", "echo", "--broker", url, "--args", "nope"}, env: tok, code: exitcode.Usage, err: "--args must be one JSON object"},
		{name: "airlock call: args file missing", args: []string{"call", "echo", "--broker", url, "--args", "@/nonexistent/args.json"}, env: tok, code: exitcode.Usage, err: "--args @/nonexistent/args.json"},
		{name: "airlock call: no token", args: []string{"call", "echo", "--broker", url}, code: exitcode.Usage, err: missingToken},
		{name: "airlock call: wrong token", args: []string{"call", "echo", "--broker", url}, env: wrong, code: exitcode.Refused, err: "401"},
		{name: "airlock call: unreachable", args: []string{"call", "echo", "--broker", unreachable}, env: tok, code: exitcode.Failed, err: "unreachable"},

		{name: "airlock new: ok", args: []string{"new", "greet", "--dir", filepath.Join(t.TempDir(), "greet")}, code: exitcode.OK, out: "wrote "},
		{name: "airlock new: --dir under a file", args: []string{"new", "greet", "--dir", filepath.Join(argsFile, "greet")}, code: exitcode.Usage, err: "airlock new: --dir " + filepath.Join(argsFile, "greet") + ": " + argsFile + " is not a folder"},
		{name: "airlock new: bad name", args: []string{"new", "Greet"}, code: exitcode.Usage, err: `"Greet" is not a plugin id`},
		{name: "airlock build: no DIR", args: []string{"build"}, code: exitcode.Usage, err: "missing DIR"},
		{name: "airlock build: no such DIR", args: []string{"build", "/nonexistent/greet"}, code: exitcode.Usage, err: "airlock build: /nonexistent/greet: no such folder"},
		{name: "airlock build: --install under a file", args: []string{"build", t.TempDir(), "--install", filepath.Join(argsFile, "plugins")}, code: exitcode.Usage, err: "airlock build: --install " + filepath.Join(argsFile, "plugins") + ": " + argsFile + " is not a folder"},
		{name: "airlock build: not a project", args: []string{"build", t.TempDir()}, code: exitcode.Usage, err: "has no plugin.json"},
		{name: "airlock run: no TOOL", args: []string{"run", t.TempDir()}, code: exitcode.Usage, err: "missing TOOL"},
		{name: "airlock run: DIR is a file", args: []string{"run", argsFile, "greet"}, code: exitcode.Usage, err: "airlock run: " + argsFile + ": not a folder"},
		{name: "airlock run: no root folder", args: []string{"run", t.TempDir(), "greet", "--root", "notes=/nonexistent/notes"}, code: exitcode.Usage, err: "airlock run: --root notes=/nonexistent/notes: no such folder"},
		{name: "airlock run: not a project", args: []string{"run", t.TempDir(), "greet"}, code: exitcode.Usage, err: "has no plugin.json"},

		{name: "airlock mint: ok", args: []string{"mint", "--broker", url}, env: tok, code: exitcode.OK, out: "/local/view#"},
		{name: "airlock mint: no token", args: []string{"mint", "--broker", url}, code: exitcode.Usage, err: missingToken},
		{name: "airlock mint: wrong token", args: []string{"mint", "--broker", url}, env: wrong, code: exitcode.Refused, err: "airlock mint: the broker refused the session: 401 INVALID_CREDENTIALS (check the launch token"},
		{name: "airlock mint: ttl 0", args: []string{"mint", "--broker", url, "--ttl", "0"}, env: tok, code: exitcode.Usage, err: "airlock mint: --ttl must be from 1 to 86400 seconds, got 0"},
		{name: "airlock mint: ttl over a day", args: []string{"mint", "--broker", url, "--ttl", "86401"}, env: tok, code: exitcode.Usage, err: "airlock mint: --ttl must be from 1 to 86400 seconds, got 86401"},
		{name: "airlock mint: bad origin", args: []string{"mint", "--broker", url, "--origin", "127.0.0.1:5173"}, env: tok, code: exitcode.Usage, err: "airlock mint: --origin must be an origin such as http://HOST:PORT"},
		{name: "airlock mint: origin with a path", args: []string{"mint", "--broker", url, "--origin", "http://127.0.0.1:5173/app"}, env: tok, code: exitcode.Usage, err: "airlock mint: --origin must be an origin such as http://HOST:PORT"},
		{name: "airlock mint: bad broker URL", args: []string{"mint", "--broker", "nonsense"}, env: tok, code: exitcode.Usage, err: "--broker must be an http URL"},

		{name: "airlock load: no workload", args: []string{"load"}, code: exitcode.Usage, err: "missing command: calls, idle, relay"},
		{name: "airlock load calls: zero duration", args: []string{"load", "calls", "-d", "0s"}, env: tok, code: exitcode.Usage, err: "airlock load calls: --duration must be positive, got 0s"},
		{name: "airlock load calls: no callers", args: []string{"load", "calls", "-c", "0"}, env: tok, code: exitcode.Usage, err: "--concurrency must be at least 1, got 0"},
		{name: "airlock load calls: bad duration", args: []string{"load", "calls", "-d", "soon"}, env: tok, code: exitcode.Usage, err: `invalid argument "soon"`},
		{name: "airlock load calls: no baseline folder", args: []string{"load", "calls", "--broker", url, "--baseline", "/nonexistent/plugin"}, env: tok, code: exitcode.Usage, err: "airlock load calls: --baseline /nonexistent/plugin: no such folder"},
		{name: "airlock load calls: no root folder", args: []string{"load", "calls", "--broker", url, "--root", "notes=/nonexistent/notes"}, env: tok, code: exitcode.Usage, err: "airlock load calls: --root notes=/nonexistent/notes: no such folder"},
		{name: "airlock load calls: no token", args: []string{"load", "calls", "--broker", url}, code: exitcode.Usage, err: missingToken},
		{name: "airlock load calls: wrong token", args: []string{"load", "calls", "--broker", url}, env: wrong, code: exitcode.Refused, err: "401"},
		{name: "airlock load calls: unreachable", args: []string{"load", "calls", "--broker", unreachable}, env: tok, code: exitcode.Failed, err: "unreachable"},
		{name: "airlock load relay: no views", args: []string{"load", "relay", "--views", "0"}, env: tok, code: exitcode.Usage, err: "--views must be at least 1, got 0"},
		{name: "airlock load relay: no token", args: []string{"load", "relay", "--broker", url}, code: exitcode.Usage, err: missingToken},
		{name: "airlock load idle: no views", args: []string{"load", "idle", "--views", "0"}, env: tok, code: exitcode.Usage, err: "--views must be at least 1, got 0"},
		{name: "airlock load http-floor: no baseline", args: []string{"load", "http-floor", "--tool", "read_notes"}, code: exitcode.Usage, err: "--baseline and --tool are required"},
		{name: "airlock load http-floor: run by hand", args: []string{"load", "http-floor", "--baseline", "builtin:notes", "--tool", "read_notes"}, code: exitcode.Failed, err: "no secret on stdin: this command is started by airlock load"},
		{name: "airlock load http-floor: unknown builtin", args: []string{"load", "http-floor", "--baseline", "builtin:nosuch", "--tool", "x"}, stdin: "secret\n", code: exitcode.Failed, err: "--baseline builtin:nosuch"},
		{name: "airlock load rtt-echo: answer too small", args: []string{"load", "rtt-echo", "--answer-size", "1"}, code: exitcode.Usage, err: "--answer-size must be from 2 to"},
		{name: "airlock load idle: no token", args: []string{"load", "idle", "--broker", url}, code: exitcode.Usage, err: missingToken},
		{name: "airlock load idle: wrong token", args: []string{"load", "idle", "--broker", url, "--no-baseline"}, env: wrong, code: exitcode.Refused, err: "401"},
		{name: "airlock load relay: wrong token", args: []string{"load", "relay", "--broker", url, "--no-baseline"}, env: wrong, code: exitcode.Refused, err: "401"},

		{name: "airlock plugin: no command", args: []string{"plugin"}, code: exitcode.Usage, err: "missing command: digest, keygen, pull, push, sign"},
		{name: "airlock plugin digest: no DIR", args: []string{"plugin", "digest"}, code: exitcode.Usage, err: "missing DIR"},
		{name: "airlock plugin digest: no such DIR", args: []string{"plugin", "digest", "/nonexistent/greet"}, code: exitcode.Usage, err: "/nonexistent/greet: no such folder"},
		{name: "airlock plugin digest: a module its sha256 does not name", args: []string{"plugin", "digest", rehashed}, code: exitcode.Refused, err: "hash-mismatch"},
		{name: "airlock plugin keygen: no NAME", args: []string{"plugin", "keygen"}, code: exitcode.Usage, err: "missing NAME"},
		{name: "airlock plugin keygen: NAME.key exists", args: []string{"plugin", "keygen", strings.TrimSuffix(writeFile(t, "taken.key", "x"), ".key")}, code: exitcode.Usage, err: "exists"},
		{name: "airlock plugin sign: no --key", args: []string{"plugin", "sign", rehashed}, code: exitcode.Usage, err: "missing --key FILE"},
		{name: "airlock plugin sign: no such key", args: []string{"plugin", "sign", rehashed, "--key", "/nonexistent/plugins.key"}, code: exitcode.Usage, err: "/nonexistent/plugins.key"},
		{name: "airlock plugin push: no REF", args: []string{"plugin", "push", broken}, code: exitcode.Usage, err: "missing REF"},
		{name: "airlock plugin push: no such DIR", args: []string{"plugin", "push", "/nonexistent/greet", "127.0.0.1:1/p/greet:1"}, code: exitcode.Usage, err: "airlock plugin push: /nonexistent/greet: no such folder"},
		{name: "airlock plugin push: plain HTTP off the loopback", args: []string{"plugin", "push", filepath.Join(broken, "broken"), "registry.example/p/broken:1", "--plain-http"}, code: exitcode.Usage, err: "plain-http-refused"},
		{name: "airlock plugin push: a module its sha256 does not name", args: []string{"plugin", "push", rehashed, unreachableRegistry + "/p/rehashed:1", "--plain-http"}, code: exitcode.Refused, err: "plugin-invalid: hash-mismatch"},
		{name: "airlock plugin push: registry unreachable", args: []string{"plugin", "push", filepath.Join(broken, "broken"), unreachableRegistry + "/p/broken:1", "--plain-http"}, code: exitcode.Failed, err: "registry-unreachable"},
		{name: "airlock plugin push: --password-stdin alone", args: []string{"plugin", "push", filepath.Join(broken, "broken"), unreachableRegistry + "/p/broken:1", "--password-stdin"}, code: exitcode.Usage, err: "--username and --password-stdin go together"},
		{name: "airlock plugin pull: no --install", args: []string{"plugin", "pull", unreachableRegistry + "/p/broken:1"}, code: exitcode.Usage, err: `required flag(s) "install" not set`},
		{name: "airlock plugin pull: no such --install folder", args: []string{"plugin", "pull", unreachableRegistry + "/p/broken:1", "--install", "/nonexistent/plugins"}, code: exitcode.Usage, err: "--install /nonexistent/plugins: no such folder"},
		{name: "airlock plugin pull: plain HTTP off the loopback", args: []string{"plugin", "pull", "registry.example/p/broken:1", "--install", t.TempDir(), "--plain-http"}, code: exitcode.Usage, err: "plain-http-refused"},
		{name: "airlock plugin pull: registry unreachable", args: []string{"plugin", "pull", unreachableRegistry + "/p/broken:1", "--install", t.TempDir(), "--plain-http"}, code: exitcode.Failed, err: "registry-unreachable"},

		{name: "airlock mcp: argument", args: []string{"mcp", testToken}, code: exitcode.Usage, err: "unexpected argument"},
		{name: "airlock mcp: broker, no token", args: []string{"mcp", "--broker", url}, code: exitcode.Usage, err: missingToken},
		{name: "airlock mcp: broker, stdin closed", args: []string{"mcp", "--broker", url}, env: tok, code: exitcode.OK},
		{name: "airlock mcp: broker, wrong token", args: []string{"mcp", "--broker", url}, env: wrong, code: exitcode.Refused, err: "refused the launch token"},
		{name: "airlock mcp: broker unreachable", args: []string{"mcp", "--broker", unreachable}, env: tok, code: exitcode.Failed, err: "cannot reach the broker"},
		{name: "airlock mcp: embedded, stdin closed", args: noBuiltin("mcp"), code: exitcode.OK},
		{name: "airlock mcp: embedded, no root folder", args: noBuiltin("mcp", "--root", "notes=/nonexistent/notes"), code: exitcode.Usage, err: "airlock mcp: --root notes=/nonexistent/notes: no such folder"},
		{name: "airlock mcp: embedded, no plugins folder", args: noBuiltin("mcp", "--plugins", "/nonexistent/plugins"), code: exitcode.Usage, err: "airlock mcp: --plugins /nonexistent/plugins: no such folder"},
	}
	for _, path := range commandPaths(t) {
		found := false
		for _, c := range cases {
			found = found || strings.HasPrefix(c.name, path+": ")
		}
		if !found {
			t.Errorf("%s has no row: every command's exit codes are tested here", path)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLIStdin(t, c.env, c.stdin, c.args...)
			if code != c.code || !strings.Contains(out, c.out) || !strings.Contains(errOut, c.err) {
				t.Fatalf("exit %d, want %d with stdout holding %q and stderr %q\nstdout: %s\nstderr: %s", code, c.code, c.out, c.err, tail(out, 2000), errOut)
			}
			if strings.Contains(out+errOut, testToken) {
				t.Error("the launch token appears in the output")
			}
			if c.code != exitcode.Usage {
				return
			}
			lines := scanLines(errOut)
			if len(lines) != 1 || !strings.HasPrefix(lines[0], strings.SplitN(c.name, ":", 2)[0]+": ") {
				t.Errorf("a usage error is one line naming the command; stderr:\n%s", errOut)
			}
			if out != "" {
				t.Errorf("a usage error printed on stdout: %q", out)
			}
		})
	}
}

// TestEnvReplacedExitsOne: an environment whose pairing another one took
// over stops with exit 1, a failure, and does not fight back.
func TestEnvReplacedExitsOne(t *testing.T) {
	t.Parallel()
	w := newChanWorld(t)
	bearer := w.pair("lab")
	first := w.startEnv(bearer, chanPlugins(t, map[string]wire.Bounds{"fx": w.bounds}))
	w.waitServing("fx", w.bounds)
	w.startEnv(bearer, chanPlugins(t, map[string]wire.Bounds{"fx": w.bounds}))
	if code := first.Wait(time.Minute); code != exitcode.Failed {
		t.Errorf("the replaced environment exited %d, want %d", code, exitcode.Failed)
	}
}

// TestHelpOnStdout: `airlock help X` and `X --help` print the help of
// every command on stdout and exit 0, with nothing on stderr.
func TestHelpOnStdout(t *testing.T) {
	t.Parallel()
	for _, path := range commandPaths(t) {
		words := strings.Fields(path)[1:]
		for _, args := range [][]string{append([]string{"help"}, words...), append(words, "--help")} {
			code, out, errOut := runCLI(t, nil, args...)
			if code != exitcode.OK || errOut != "" || !strings.Contains(out, "Usage:") || !strings.Contains(out, path) {
				t.Errorf("airlock %s: exit %d, stderr %q, stdout:\n%s", strings.Join(args, " "), code, errOut, out)
			}
		}
	}
	// serve's help lists every setting with its environment variable.
	_, out, _ := runCLI(t, nil, "serve", "--help")
	for _, want := range []string{"AIRLOCK_MCP_SESSION_IDLE_MS", "channel.hello_bound_ms", "VOICEBOX_HELLO_BOUND_MS", "AIRLOCK_LOCAL_TOKEN"} {
		if !strings.Contains(out, want) {
			t.Errorf("serve --help lacks %s", want)
		}
	}
	// mcp's lists only the settings an embedded broker that never
	// listens uses.
	_, out, _ = runCLI(t, nil, "mcp", "--help")
	for _, absent := range []string{"AIRLOCK_LISTEN,", "AIRLOCK_HTTP_MAX_CONNECTIONS", "AIRLOCK_ENV_BROKER", "AIRLOCK_LOCAL_MAX_SESSIONS"} {
		if strings.Contains(out, absent) {
			t.Errorf("mcp --help lists %s, which it does not use", absent)
		}
	}
	if !strings.Contains(out, "AIRLOCK_EXEC_POOL_SIZE") {
		t.Error("mcp --help lacks AIRLOCK_EXEC_POOL_SIZE")
	}
}

// TestVersion: --version and `version` print the same, read from the
// binary's build information: the Go and wazero versions it was built
// with, as the main module requires them.
func TestVersion(t *testing.T) {
	t.Parallel()
	_, flag, _ := runCLI(t, nil, "--version")
	code, text, _ := runCLI(t, nil, "version")
	if code != exitcode.OK || flag != text || !strings.HasPrefix(text, "airlock ") {
		t.Errorf("--version %q and version %q differ", flag, text)
	}
	code, out, _ := runCLI(t, nil, "version", "--json")
	var got struct{ Version, Commit, Go, Wazero string }
	if err := json.Unmarshal([]byte(out), &got); code != exitcode.OK || err != nil {
		t.Fatalf("version --json: exit %d %v\n%s", code, err, out)
	}
	// The binary's wazero is the main module's requirement.
	mod, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/tetratelabs/wazero").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(mod))
	if got.Version == "" || got.Go != runtime.Version() || got.Wazero != want || !regexp.MustCompile(`^v\d+\.\d+\.\d+`).MatchString(got.Wazero) {
		t.Errorf("version %+v; want Go %s and wazero %s", got, runtime.Version(), want)
	}
	for _, field := range []string{got.Version, got.Go, got.Wazero} {
		if !strings.Contains(text, field) {
			t.Errorf("the text form lacks %q:\n%s", field, text)
		}
	}
}
