package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/airlock/airlock/broker/localclient"
	"github.com/airlock/airlock/config/secret"
)

// runMint mints a workspace session on a running broker and prints the
// mint response and the built-in view page's URL, so an extension author
// can try the session flow by hand. It is the one command that prints
// credentials: that is its purpose.
func runMint(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("mint", stderr)
	brokerURL := fs.String("broker", defaultBroker, "the broker's `URL`")
	origin := fs.String("origin", "", "the view's launch `ORIGIN` (default: the broker's own origin, which its built-in /local/view page has)")
	ttl := fs.Int64("ttl", 0, "session lifetime in `SECONDS` (default 28800, clamped to [1, 86400])")
	propose := fs.Bool("propose", false, "mint with canProposeSourceEdits")
	token := addSecretFlag(fs, secret.LaunchToken)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: airlock mint [--broker URL] [--origin ORIGIN] [--ttl SECONDS] [--propose] [--token-file FILE]")
		fmt.Fprintln(stderr, "\nMints a workspace session. The launch token comes from TENSORVIZ_LOCAL_TOKEN or AIRLOCK_LOCAL_TOKEN, or --token-file.")
		fmt.Fprintln(stderr, "\nIt prints CREDENTIALS: the mint response (viewCredential, hostCookieKey) on the first line and, on the")
		fmt.Fprintln(stderr, "second, the view URL, whose fragment #<workspaceSessionId>.<viewCredential> is the one-time view")
		fmt.Fprintln(stderr, "credential. This is the only Airlock command that prints a credential; treat its output as a secret.")
		fmt.Fprintln(stderr, "\nflags:")
		fs.PrintDefaults()
	}
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	base, own, err := brokerBase(*brokerURL)
	if err != nil {
		fmt.Fprintf(stderr, "airlock mint: --broker: %v\n", err)
		return exitUsage
	}
	tok, err := token.read()
	if err != nil {
		fmt.Fprintf(stderr, "airlock mint: %v\n", err)
		return exitUsage
	}
	if *origin == "" {
		*origin = own
	}
	return mint(base, tok, localclient.MintOptions{LaunchOrigin: *origin, TTLSeconds: *ttl, CanProposeSourceEdits: *propose}, stdout, stderr)
}

func mint(base, token string, o localclient.MintOptions, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := &localclient.Client{Base: base, Token: token}
	m, err := c.Mint(ctx, o)
	var refused *localclient.HTTPError
	if errors.As(err, &refused) {
		return fail(stderr, "mint: refused %d %s", refused.Status, refused.Code)
	}
	if err != nil {
		return fail(stderr, "mint: %v", err)
	}
	line, _ := json.Marshal(m)
	fmt.Fprintf(stdout, "%s\n%s\n", line, m.ViewURL(base))
	return exitOK
}

// errBrokerURL refuses a --broker that is not http(s)://HOST:PORT.
var errBrokerURL = errors.New("want http://HOST:PORT")

// brokerBase returns the broker's base URL and its origin from --broker,
// which may also be given as ws://… or with a path.
func brokerBase(raw string) (base, origin string, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", "", errBrokerURL
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "ws":
		u.Scheme = "http"
	case "https", "wss":
		u.Scheme = "https"
	default:
		return "", "", errBrokerURL
	}
	origin = u.Scheme + "://" + strings.ToLower(u.Host)
	return origin, origin, nil
}
