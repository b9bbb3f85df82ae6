package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/airlock/airlock/broker/v1client"
	"github.com/airlock/airlock/cmd/airlock/internal/demohost"
	"github.com/airlock/airlock/config"
	"github.com/airlock/airlock/config/datadir"
	"github.com/airlock/airlock/executors/wire"
	"github.com/airlock/airlock/plugins/bundled"
)

func init() { register(newDemoCmd) }

// newDemoCmd is `airlock demo`: a broker on embedded defaults (the bundled
// tools, the sample notes as the notes root, a generated launch token),
// one read_notes call shown as it happens, then serving until Ctrl-C.
func newDemoCmd() *cobra.Command {
	var listen string
	c := &cobra.Command{
		Use:   "demo",
		Short: "run the broker on embedded defaults and make one read_notes call",
		Long: "Starts a broker with a generated launch token, the bundled tools and a sample notes folder,\n" +
			"makes one real read_notes call over HTTP, prints it with the commands to try next, and\n" +
			"serves until Ctrl-C. AIRLOCK_* settings apply as they do to serve.",
		Args: noArgs("demo takes flags only"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			work, err := os.MkdirTemp("", "airlock-demo-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(work)
			notes := filepath.Join(work, "notes")
			if err := os.CopyFS(notes, bundled.SampleNotes()); err != nil {
				return fmt.Errorf("sample notes: %w", err)
			}
			token, err := newDemoToken()
			if err != nil {
				return err
			}
			// AIRLOCK_* settings apply as they do to serve; the demo only
			// fills in its own defaults for what they leave unset.
			flags := map[string]any{"listen": freeIfBusy(listen), "data": filepath.Join(work, "data"), "no_builtin": false}
			if !envSet("AIRLOCK_EXEC_CACHE_DIR") {
				flags["exec.cache_dir"] = demoCacheDir()
			}
			cfg, err := config.Load(config.Sources{Environ: environ(), Flags: flags, Roots: map[string]string{"notes": notes}})
			if err != nil {
				return configErr(err)
			}
			env := environ()
			noFlag := func(string) string { return "" }
			if err := checkSettingPaths(cfg, func(key string) string { return settingGiven(key, "", env, noFlag) }); err != nil {
				return err
			}
			if err := checkData(cfg, true, stderr); err != nil {
				return err
			}
			tokenFile, removeToken, err := writeDemoToken(cfg.Data, token)
			if err != nil {
				return err
			}
			defer removeToken()
			logger := newLogger(stderr, "warn")
			return serve(cfg, token, logger, stdout, func(addr string) {
				// The hosts' sockets close with the broker.
				base := "http://" + addr
				links := demohost.NewLinks(demohost.Options{Base: base, Token: token}, demoLinksKept)
				d := &demo{base: base, token: token, tokenFile: tokenFile, links: links, stdout: stdout, stderr: stderr}
				d.call()
				d.newLinks(cmd.InOrStdin())
			})
		},
	}
	c.Flags().StringVar(&listen, "listen", "127.0.0.1:7420", "`ADDR` to listen on; a busy port falls back to a free one")
	return c
}

// demoTokenFile is the launch token's file in the demo's data directory.
const demoTokenFile = "demo-token"

// demoLinksKept is how many demo sessions keep a live host: Enter mints
// another, and past this many the oldest one's host stops.
const demoLinksKept = 8

// newDemoToken makes a launch token.
func newDemoToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// writeDemoToken keeps the token in a new 0600 file in the data
// directory, so the instructions can point at the file instead of
// printing the secret. The file is created exclusively: an entry already
// there, a link included, is refused rather than followed or replaced.
// remove deletes it.
func writeDemoToken(data, token string) (path string, remove func(), err error) {
	root, err := datadir.Open(data)
	if err != nil {
		return "", nil, configErr(err)
	}
	defer root.Close()
	path = filepath.Join(data, demoTokenFile)
	f, err := root.OpenFile(demoTokenFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", nil, fmt.Errorf("writing the launch token to %s: %w", path, err)
	}
	_, err = f.WriteString(token + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	remove = func() { _ = os.Remove(path) }
	if err != nil {
		remove()
		return "", nil, fmt.Errorf("writing the launch token to %s: %w", path, err)
	}
	return path, remove, nil
}

// demoCacheDir keeps compiled modules between demo runs, so only the first
// one compiles.
func demoCacheDir() string { return filepath.Join(config.DefaultDataDir(), "compile-cache") }

// envSet reports whether the environment sets name.
func envSet(name string) bool {
	for _, kv := range environ() {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}

// freeIfBusy returns addr, or the same host with port 0 when addr's port
// is taken.
func freeIfBusy(addr string) string {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			host, _, _ := net.SplitHostPort(addr)
			return net.JoinHostPort(host, "0")
		}
		return addr
	}
	ln.Close()
	return addr
}

// demo is what the running demo prints and starts.
type demo struct {
	base, token, tokenFile string
	links                  *demohost.Links
	stdout, stderr         io.Writer
}

// call makes one read_notes call over the real HTTP API and prints it,
// the first view link and the commands to try next.
func (d *demo) call() {
	c := &v1client.Client{Base: d.base, Token: d.token}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ds, err := c.Tools(ctx)
	if err != nil {
		fmt.Fprintf(d.stderr, "airlock demo: listing tools: %v\n", err)
		return
	}
	call, err := v1client.NewCall(ds, "read_notes", "", json.RawMessage(`{"path":"welcome.md"}`))
	if err != nil {
		fmt.Fprintf(d.stderr, "airlock demo: %v\n", err)
		return
	}
	sent, _ := json.Marshal(call)
	answer, raw, err := c.Call(ctx, call)
	if err != nil {
		fmt.Fprintf(d.stderr, "airlock demo: calling read_notes: %v\n", err)
		return
	}
	pretty, _ := json.MarshalIndent(json.RawMessage(raw), "", "  ")
	fmt.Fprintf(d.stdout, "\nAirlock is serving on %s with %d tool descriptors.\n", d.base, len(ds))
	fmt.Fprintf(d.stdout, "\nPOST /v1/calls\n%s\n\nanswer:\n%s\n", sent, pretty)
	if answer.OK {
		var obs struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(answer.Observed, &obs) == nil && obs.Text != "" {
			fmt.Fprintf(d.stdout, "\nwelcome.md, as the sandboxed notes tool read it:\n\n%s\n", obs.Text)
		}
	} else if answer.Refused != wire.Rule("") {
		fmt.Fprintf(d.stdout, "\nthe call was refused: %s\n", answer.Refused)
	}
	if u, err := d.links.New(ctx); err != nil {
		fmt.Fprintf(d.stderr, "airlock demo: the demo extension host: %v\n", err)
	} else {
		// The URL carries the session's one-time view credential: it is
		// for this user's browser, which trades it for a cookie at once.
		fmt.Fprintf(d.stdout, "\nA demo extension host is animating a session. Open its view page (the link works once):\n\n  %s\n", u)
	}
	self := selfCommand()
	tf := shellQuote(d.tokenFile)
	fmt.Fprintf(d.stdout, `
Try it yourself (the launch token is in %s, readable only by you and removed when the demo stops):

  %s tools --broker %s --token-file %s
  %s call list_notes --broker %s --token-file %s
  %s call search_notes --broker %s --token-file %s --args '{"query":"bounds"}'
  %s mint --broker %s --token-file %s
  curl -s %s/metrics | grep airlock_tool_calls_total

Press Enter for a new view link. Ctrl-C stops the demo.
`, tf, self, d.base, tf, self, d.base, tf, self, d.base, tf, self, d.base, tf, d.base)
}

// newLinks prints a fresh view link for every line read from in (Enter
// in a terminal). The end of in, or an error reading it, only ends the
// offers: the demo serves until Ctrl-C or SIGTERM.
func (d *demo) newLinks(in io.Reader) {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		u, err := d.links.New(ctx)
		cancel()
		if err != nil {
			fmt.Fprintf(d.stderr, "airlock demo: a new view link: %v\n", err)
			continue
		}
		fmt.Fprintf(d.stdout, "\nA new demo session. Open its view page (the link works once; Enter makes another):\n\n  %s\n", u)
	}
}

// selfCommand is how the printed commands run this program: as it was
// invoked, or "go run ./cmd/airlock" when `go run` built it into a
// temporary folder that is gone once it stops.
func selfCommand() string {
	if strings.Contains(os.Args[0], string(filepath.Separator)+"go-build") {
		return "go run ./cmd/airlock"
	}
	return shellQuote(os.Args[0])
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// characters that never need quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=+@%,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
