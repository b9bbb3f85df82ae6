package main

import (
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
			token, tokenFile, err := demoToken(work)
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
			logger := newLogger(stderr, "warn")
			return serve(cfg, token, logger, stdout, func(addr string) { demoCall(addr, token, tokenFile, stdout, stderr) })
		},
	}
	c.Flags().StringVar(&listen, "listen", "127.0.0.1:7420", "`ADDR` to listen on; a busy port falls back to a free one")
	return c
}

// demoToken makes a launch token and keeps it in a 0600 file so the
// instructions can point at the file instead of printing the secret.
func demoToken(dir string) (string, string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	token := base64.RawURLEncoding.EncodeToString(b[:])
	path := filepath.Join(dir, "token")
	return token, path, os.WriteFile(path, []byte(token+"\n"), 0o600)
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

// demoCall makes one read_notes call over the real HTTP API and prints it
// with the commands to try next.
func demoCall(addr, token, tokenFile string, stdout, stderr io.Writer) {
	base := "http://" + addr
	c := &v1client.Client{Base: base, Token: token}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ds, err := c.Tools(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "airlock demo: listing tools: %v\n", err)
		return
	}
	call, err := v1client.NewCall(ds, "read_notes", "", json.RawMessage(`{"path":"welcome.md"}`))
	if err != nil {
		fmt.Fprintf(stderr, "airlock demo: %v\n", err)
		return
	}
	sent, _ := json.Marshal(call)
	answer, raw, err := c.Call(ctx, call)
	if err != nil {
		fmt.Fprintf(stderr, "airlock demo: calling read_notes: %v\n", err)
		return
	}
	pretty, _ := json.MarshalIndent(json.RawMessage(raw), "", "  ")
	fmt.Fprintf(stdout, "\nAirlock is serving on %s with %d tool descriptors.\n", base, len(ds))
	fmt.Fprintf(stdout, "\nPOST /v1/calls\n%s\n\nanswer:\n%s\n", sent, pretty)
	if answer.OK {
		var obs struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(answer.Observed, &obs) == nil && obs.Text != "" {
			fmt.Fprintf(stdout, "\nwelcome.md, as the sandboxed notes tool read it:\n\n%s\n", obs.Text)
		}
	} else if answer.Refused != wire.Rule("") {
		fmt.Fprintf(stdout, "\nthe call was refused: %s\n", answer.Refused)
	}
	if h, err := demohost.Start(ctx, demohost.Options{Base: base, Token: token}); err != nil {
		fmt.Fprintf(stderr, "airlock demo: the demo extension host: %v\n", err)
	} else {
		// The URL carries the session's one-time view credential: it is
		// for this user's browser, which trades it for a cookie at once.
		fmt.Fprintf(stdout, "\nA demo extension host is animating a session. Open its view page:\n\n  %s\n", h.ViewURL())
	}
	fmt.Fprintf(stdout, `
Try it yourself (the launch token is in %s, readable only by you):

  export AIRLOCK_LOCAL_TOKEN="$(cat %s)"
  go run ./cmd/airlock tools --broker %s
  go run ./cmd/airlock call list_notes --broker %s
  go run ./cmd/airlock call search_notes --broker %s --args '{"query":"bounds"}'
  curl -s %s/metrics | grep airlock_tool_calls_total

Ctrl-C stops the demo.
`, tokenFile, tokenFile, base, base, base, base)
}
